"""`make demo`, run as `make demo` runs it, on its own fresh real-node cluster.

The demo is the newcomer's first command; this test runs the very file (``examples/demo.py``, with
the venv's Python, from the repository root) in a subprocess with its own state directory and port
base (``SPARKPLANE_DEMO_TEST_PORT_BASE``, default 17483: apart from the suites' clusters), and
asserts every section from what it printed: both "Pi is roughly" lines, the executors owned by
their drivers, the Spark UI page, local deps ``Succeeded`` with a word count, the in-cluster
operator taking SparkPi to ResourceReleased, a kill that leaves nothing, exit 0 and no
traceback. Its cluster is stopped and purged afterwards. It runs first in this package (file
order), before the suite's own cluster comes up, so the two never share the machine's two cores.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PORT_BASE = os.environ.get("SPARKPLANE_DEMO_TEST_PORT_BASE", "17483")


@pytest.fixture(scope="module")
def demo_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[subprocess.CompletedProcess[str]]:
    state = tmp_path_factory.mktemp("demo-cluster")
    env = dict(
        os.environ,
        SPARKPLANE_STATE_DIR=str(state),
        SPARKPLANE_DEV_PORT_BASE=PORT_BASE,
        COLUMNS="200",
    )
    env.pop("KUBECONFIG", None)
    try:
        run = subprocess.run(
            [sys.executable, "examples/demo.py"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
        print(run.stdout)  # shown by pytest when an assertion fails
        print(run.stderr, file=sys.stderr)
        yield run
    finally:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "sparkplane.cli",
                "dev-cluster",
                "down",
                "--purge",
                "--state-dir",
                str(state),
            ],
            env=env,
            capture_output=True,
            timeout=300,
            check=False,
        )


@pytest.mark.timeout(1600)
def test_demo_exits_0_without_traceback(demo_run: subprocess.CompletedProcess[str]) -> None:
    assert demo_run.returncode == 0, demo_run.stdout[-3000:] + demo_run.stderr[-3000:]
    assert "Traceback" not in demo_run.stdout + demo_run.stderr
    assert "demo FAILED" not in demo_run.stdout


def test_demo_pi_on_jvm_and_python(demo_run: subprocess.CompletedProcess[str]) -> None:
    out = demo_run.stdout
    for app in ("spark-pi", "python-pi"):
        section = re.split(rf"\$ sparkplane logs {app}-[0-9a-f]+ \| grep Pi", out, maxsplit=1)
        assert len(section) == 2, f"no logs section for {app}"
        first = section[1].strip().splitlines()[0]
        assert re.search(r"Pi is roughly 3\.1\d*", first), first
        assert "(Succeeded)" in first, first


def test_demo_executors_owned_by_drivers(demo_run: subprocess.CompletedProcess[str]) -> None:
    rows = re.findall(r"^\s*(\S+-exec-\d+)\s+Pod/(\S+)\s+(\S+)\s*$", demo_run.stdout, re.M)
    owners = {re.sub(r"-[0-9a-f]+-driver$", "-driver", owner) for _, owner, _ in rows}
    assert {"spark-pi-driver", "python-pi-driver"} <= owners, demo_run.stdout
    assert all(node == "sparkplane-real-node" for _, _, node in rows), rows


def test_demo_spark_ui_page(demo_run: subprocess.CompletedProcess[str]) -> None:
    assert re.search(
        r"sparkplane ui python-pi-[0-9a-f]+ -> http://127\.0\.0\.1:\d+", demo_run.stdout
    )
    assert re.search(r"title: .*Spark Jobs", demo_run.stdout), demo_run.stdout


def test_demo_local_deps_word_count(demo_run: subprocess.CompletedProcess[str]) -> None:
    out = demo_run.stdout
    assert re.search(r"^\s*local-deps-[0-9a-f]+: Succeeded\s*$", out, re.M), out
    counts = out.split("# word count of the uploaded words.txt", 1)[1]
    assert re.search(r"^\s*\w+\s+\d+\s*$", counts, re.M), counts[:2000]


def test_demo_operator_in_cluster(demo_run: subprocess.CompletedProcess[str]) -> None:
    out = demo_run.stdout
    assert re.search(
        r"sparkplane-operator-\S+\s+ghcr\.io/sparkplane/sparkplane:\S+\s+"
        r"sparkplane-real-node",
        out,
    ), out
    history = re.search(r"^\s*(spark-pi-op-\d+): (.*)$", out, re.M)
    assert history, out
    states = history.group(2).split(" -> ")
    assert states[0] == "Submitted" and states[-1] == "ResourceReleased", states
    assert "Succeeded" in states, states


def test_demo_kill_leaves_nothing(demo_run: subprocess.CompletedProcess[str]) -> None:
    assert re.search(r"^\s*left after the garbage collector: nothing\s*$", demo_run.stdout, re.M)
