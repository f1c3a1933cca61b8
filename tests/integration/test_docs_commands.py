"""Every documented command that needs no real pod runs against the KWOK dev cluster.

The blocks come from the Markdown (:mod:`tests.docblocks` says how they are found, marked and
run); each in a fresh namespace standing for the docs' ``spark-jobs``, from a fresh copy of the
repository, with the CLI a user has. A block fails on an exit code other than the one documented,
a traceback, or a server that does not come up. ``<!-- real-node -->`` blocks run in
``tests/realnode/test_docs_commands.py``; ``<!-- norun: ... -->`` ones nowhere, for the reason
written there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkplane.kube import Kube
from sparkplane_devcluster.cluster import default_cache_dir
from tests.docblocks import DOCS, ROOT, all_blocks, environment, run_all

pytestmark = pytest.mark.integration

KWOK_BLOCKS = [b for b in all_blocks() if b.runs and not b.real_node]


def dev_cluster_env() -> dict[str, str]:
    """`sparkplane dev-cluster ...` in a block addresses the suite's own cluster."""
    state = os.environ.get("SPARKPLANE_TEST_STATE_DIR") or str(default_cache_dir() / "test-cluster")
    port = os.environ.get("SPARKPLANE_TEST_PORT_BASE", "17443")
    return {"SPARKPLANE_STATE_DIR": state, "SPARKPLANE_DEV_PORT_BASE": port}


@pytest.mark.timeout(1200)
@pytest.mark.parametrize(
    "doc",
    [d for d in DOCS if any(b.path == d for b in KWOK_BLOCKS)],
    ids=lambda d: str(d.relative_to(ROOT)),
)
def test_documented_commands_run(doc: Path, kube: Kube, kubeconfig: Path, tmp_path: Path) -> None:
    found = [b for b in KWOK_BLOCKS if b.path == doc]
    outcomes = run_all(
        found, kube=kube, kubeconfig=kubeconfig, tmp=tmp_path, env=environment(dev_cluster_env())
    )
    assert len(outcomes) == len(found)
    failed = [o.report() for o in outcomes if o.problem]
    assert not failed, "\n".join(failed)
