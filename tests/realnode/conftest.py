"""The real-Spark suite: a dev cluster with a real node (kubelet + containerd + runc), where
Spark really runs, for the whole session; a fresh namespace per test.

It is its own cluster (state ``$SPARKPLANE_CACHE_DIR/test-real-cluster``, ports from 17463), apart
from the KWOK suite's, so the simulated suites keep their untainted fake nodes. It needs root on
Linux: without it the session FAILS with what is missing (never a skip). A developer without root
deselects it explicitly (``make test REALNODE=0`` or ``pytest --deselect tests/realnode``), and the
run says so. ``SPARKPLANE_KEEP_CLUSTER=1`` keeps the cluster for faster reruns.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.kube import Kube, connect
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.cluster import default_cache_dir
from tests.integration.conftest import priority_classes  # the same PriorityClass pair
from tests.integration.helpers import delete_namespace, wait_for

__all__ = ["priority_classes"]

SERVICE_ACCOUNT = "spark"
PORT_BASE = int(os.environ.get("SPARKPLANE_REAL_TEST_PORT_BASE", "17463"))


def real_settings() -> DevClusterSettings:
    state = os.environ.get("SPARKPLANE_REAL_TEST_STATE_DIR")
    return DevClusterSettings(
        state_dir=Path(state) if state else default_cache_dir() / "test-real-cluster",
        port_base=PORT_BASE,
        nodes=1,
        real_node=True,
        start_timeout=300.0,
    )


HOST_SYSCTLS: dict[str, str] = {}


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[DevCluster]:
    from sparkplane_devcluster.node.plan import KUBELET_SYSCTLS

    for name in [*KUBELET_SYSCTLS, "net/ipv4/ip_forward"]:
        HOST_SYSCTLS[name] = Path(f"/proc/sys/{name}").read_text()
    cluster = DevCluster(real_settings())
    keep = bool(os.environ.get("SPARKPLANE_KEEP_CLUSTER"))
    if not keep:
        cluster.down(purge=True)  # a fresh cluster: no data left by an earlier run
    cluster.up(progress=lambda msg: print(f"[real-cluster] {msg}", flush=True))
    yield cluster
    if not keep:
        cluster.down(purge=True)


@pytest.fixture(scope="session")
def kubeconfig(real_cluster: DevCluster) -> Path:
    return real_cluster.kubeconfig


@pytest.fixture(scope="session")
def kube(kubeconfig: Path) -> Iterator[Kube]:
    client = Kube(connect(kubeconfig=kubeconfig))
    yield client
    client.close()


@pytest.fixture
def namespace(kube: Kube) -> Iterator[str]:
    """A fresh namespace with the service account ``spark`` holding sparkplane's least-privilege
    driver role (what Spark's driver does: executors, their ConfigMaps and Services)."""
    name = f"sp-real-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(
        lambda: kube.get_or_none("v1", "ServiceAccount", "default", name) is not None,
        timeout=30,
        what=f"service account {name}/default",
    )
    from sparkplane.security.rbac import bodies, render

    for obj in bodies(render("driver", name, service_account=SERVICE_ACCOUNT)):
        kube.create(obj)
    yield name
    delete_namespace(kube, name)
