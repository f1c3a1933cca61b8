"""The dev cluster keeps its data: a component that died is restarted by ``up`` without wiping
etcd; ``down`` keeps the data for the next ``up``; only ``down --purge`` deletes it.

Its own small cluster (ports from 17650), so the session's cluster is left alone.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.kube import Kube, connect
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.process import alive
from tests.integration.helpers import wait_for


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DevCluster]:
    settings = DevClusterSettings(state_dir=tmp_path / "state", port_base=17650, nodes=1)
    dev = DevCluster(settings)
    yield dev
    dev.down(purge=True)


def _namespaces(dev: DevCluster) -> set[str]:
    kube = Kube(connect(kubeconfig=dev.kubeconfig))
    try:
        return {n["metadata"]["name"] for n in kube.list("v1", "Namespace")}
    finally:
        kube.close()


def test_up_restarts_a_dead_component_and_keeps_the_data(cluster: DevCluster) -> None:
    cluster.up()
    name = f"keep-{uuid.uuid4().hex[:6]}"
    kube = Kube(connect(kubeconfig=cluster.kubeconfig))
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kube.close()
    pid, binary = cluster._pids()["kube-scheduler"]
    os.kill(pid, signal.SIGKILL)  # delivered asynchronously: the process dies a moment later
    wait_for(lambda: not cluster.is_running(), timeout=10, what="the killed scheduler to be seen")
    said: list[str] = []
    cluster.up(progress=said.append)
    assert any("data is kept" in line for line in said), said
    assert cluster.is_running() and not alive(pid, binary)
    assert name in _namespaces(cluster)

    cluster.down()  # keeps the data
    cluster.up()
    assert name in _namespaces(cluster)

    cluster.down(purge=True)
    cluster.up()
    assert name not in _namespaces(cluster)
