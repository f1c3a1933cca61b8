"""Integration fixtures: a real control plane for the whole session, a fresh namespace per test.

By default the session brings up its own dev cluster (state under
``$SPARKPLANE_CACHE_DIR/test-cluster``, ports from 17443, so a developer's ``make demo`` cluster
is left alone) and stops it at the end (``SPARKPLANE_KEEP_CLUSTER=1`` keeps it for the next run).
``SPARKPLANE_TEST_KUBECONFIG`` points the same suite at any real cluster instead.
If the cluster cannot come up the tests fail; they never skip.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.kube import Kube, connect
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.cluster import default_cache_dir, node_ready
from sparkplane_devcluster.components import node_manifest
from tests.integration.helpers import delete_namespace, wait_for

# kill/gc/the operator archive drivers' logs (docs/history.md): into a private directory per run,
# never into the developer's own archive
os.environ.setdefault("SPARKPLANE_LOG_ARCHIVE", tempfile.mkdtemp(prefix="sparkplane-archive-"))


@pytest.fixture(scope="session")
def kubeconfig() -> Iterator[Path]:
    named = os.environ.get("SPARKPLANE_TEST_KUBECONFIG")
    if named:
        yield Path(named)
        return
    settings = DevClusterSettings(
        state_dir=Path(
            os.environ.get("SPARKPLANE_TEST_STATE_DIR") or default_cache_dir() / "test-cluster"
        ),
        port_base=int(os.environ.get("SPARKPLANE_TEST_PORT_BASE", "17443")),
    )
    cluster = DevCluster(settings)
    keep = bool(os.environ.get("SPARKPLANE_KEEP_CLUSTER"))
    if not keep:
        cluster.down(purge=True)  # a fresh cluster: no data left by an earlier run
    path = cluster.up(progress=lambda msg: print(f"[dev-cluster] {msg}", flush=True))
    yield path
    if not keep:
        cluster.down(purge=True)


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Iterator[Kube]:
    client = Kube(connect(kubeconfig=kubeconfig))
    yield client
    client.close()


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    """A fresh namespace whose ``default`` service account exists (pods can be created)."""
    name = f"sp-test-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(
        lambda: kube.get_or_none("v1", "ServiceAccount", "default", name) is not None,
        timeout=30,
        what=f"service account {name}/default",
    )
    yield name
    delete_namespace(kube, name)


@pytest.fixture
def small_node(kube: Kube) -> Iterator[str]:
    """A 2-CPU node only pods tolerating its taint ``sparkplane.io/<name>`` can use (other tests
    never land on it); select it with ``kubernetes.io/hostname=<name>``."""
    name = f"sp-small-{uuid.uuid4().hex[:6]}"
    node = node_manifest(name, "2", "8Gi", 20)
    node["spec"] = {"taints": [{"key": f"sparkplane.io/{name}", "effect": "NoSchedule"}]}
    kube.create(node)
    wait_for(lambda: node_ready(kube.get("v1", "Node", name)), timeout=60, what="node Ready")
    yield name
    kube.delete("v1", "Node", name)


@pytest.fixture
def priority_classes(kube: Kube) -> Iterator[tuple[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    names = (f"sp-low-{suffix}", f"sp-high-{suffix}")
    for name, value in zip(names, (100, 100000), strict=True):
        kube.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    yield names
    for name in names:
        kube.delete("scheduling.k8s.io/v1", "PriorityClass", name)
