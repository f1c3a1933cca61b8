"""The documented commands where Spark must really run (``<!-- real-node -->`` in the Markdown),
on the real-node dev cluster: the README's Python examples, its ``try it`` table, the History
Server walk-through, the in-cluster staging server. And the README's first example exactly as
printed, in the namespace ``dev-cluster up`` made ready: ``Succeeded``, Pi in the driver log.

How blocks are found, marked and run: :mod:`tests.docblocks`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sparkplane.kube import Kube
from sparkplane_devcluster import DevCluster
from tests.docblocks import DOCS, ROOT, all_blocks, environment, run_all, workdir
from tests.realnode.conftest import PORT_BASE

REAL_BLOCKS = [b for b in all_blocks() if b.runs and b.real_node]


def dev_cluster_env(cluster: DevCluster) -> dict[str, str]:
    """`sparkplane dev-cluster ...` in a block addresses the suite's own cluster."""
    port = str(PORT_BASE)
    return {"SPARKPLANE_STATE_DIR": str(cluster.state_dir), "SPARKPLANE_DEV_PORT_BASE": port}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(
    "doc",
    [d for d in DOCS if any(b.path == d for b in REAL_BLOCKS)],
    ids=lambda d: str(d.relative_to(ROOT)),
)
def test_documented_commands_run_on_the_real_node(
    doc: Path, kube: Kube, real_cluster: DevCluster, tmp_path: Path
) -> None:
    found = [b for b in REAL_BLOCKS if b.path == doc]
    env = environment(dev_cluster_env(real_cluster))
    outcomes = run_all(found, kube=kube, kubeconfig=real_cluster.kubeconfig, tmp=tmp_path, env=env)
    assert len(outcomes) == len(found)
    failed = [o.report() for o in outcomes if o.problem]
    assert not failed, "\n".join(failed)


@pytest.mark.timeout(600)
def test_readmes_first_example_succeeds_as_printed(
    kube: Kube, real_cluster: DevCluster, tmp_path: Path
) -> None:
    """`sparkplane submit -f examples/spark-pi.yaml --wait` with the cluster's own kubeconfig:
    namespace ``default``, service account ``default``, nothing prepared by the test."""
    env = environment(dev_cluster_env(real_cluster))
    env["KUBECONFIG"] = str(real_cluster.kubeconfig)
    work = workdir(tmp_path / "work")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, cwd=work, env=env, capture_output=True, text=True, timeout=480, check=False
        )

    done = run("sparkplane", "submit", "-f", "examples/spark-pi.yaml", "--wait")
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        name = done.stdout.split()[0]  # submit prints the app's name
        logs = run("sparkplane", "logs", name)
        assert "Pi is roughly 3.1" in logs.stdout, logs.stdout + logs.stderr
    finally:
        drivers = "spark-role=driver,spark-app-name=spark-pi"
        for pod in kube.list("v1", "Pod", "default", label_selector=drivers):
            kube.delete("v1", "Pod", pod["metadata"]["name"], "default")
