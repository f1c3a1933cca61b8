"""Two dev clusters with real nodes on one machine share nothing: port bases 2500 apart (which
the old derivation of the node's link and subnets from the port base mapped to one index, so the
second took the first's link and the first API server reached the second's kubelet) each run
SparkPi at the same time, and ``down`` of one leaves the other working.

The second cluster: ports from ``SPARKPLANE_REAL_TEST_PORT_BASE_2`` (default the suite's + 2500),
state in ``<the suite's state dir>-2``; it is started and removed by this module."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.kube import Kube, connect
from sparkplane.security.rbac import bodies, render
from sparkplane_devcluster import DevCluster, alloc
from sparkplane_devcluster.node import host
from sparkplane_devcluster.node.plan import NODE_NAME
from tests.integration.helpers import wait_for
from tests.realnode.conftest import PORT_BASE, SERVICE_ACCOUNT, real_settings
from tests.realnode.sparkapps import cli, driver_pod, pod_logs, run_pod, spec, submit, write

SECOND_PORT_BASE = int(os.environ.get("SPARKPLANE_REAL_TEST_PORT_BASE_2", str(PORT_BASE + 2500)))
PI_LINE = "Pi is roughly 3.1"


@pytest.fixture(scope="module")
def second_cluster() -> Iterator[DevCluster]:
    first = real_settings()
    settings = dataclasses.replace(
        first, state_dir=Path(f"{first.state_dir}-2"), port_base=SECOND_PORT_BASE
    )
    cluster = DevCluster(settings)
    cluster.down(purge=True)
    cluster.up(progress=lambda msg: print(f"[second-cluster] {msg}", flush=True))
    yield cluster
    cluster.down(purge=True)


def _driver_namespace(kube: Kube) -> str:
    name = f"sp-two-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(
        lambda: kube.get_or_none("v1", "ServiceAccount", "default", name) is not None,
        timeout=60,
        what=f"service account {name}/default",
    )
    for obj in bodies(render("driver", name, service_account=SERVICE_ACCOUNT)):
        kube.create(obj)
    return name


def _on_own_node(kube: Kube, namespace: str, app: str, pod_cidr: str) -> None:
    driver = driver_pod(kube, namespace, app)
    assert driver is not None
    assert driver["spec"]["nodeName"] == NODE_NAME
    assert ipaddress.ip_address(driver["status"]["podIP"]) in ipaddress.ip_network(pod_cidr)


@pytest.mark.timeout(1200)  # a second cluster's start and two SparkPi on 2 shared cores
def test_two_real_node_clusters_run_sparkpi_at_once_and_down_of_one_leaves_the_other(
    real_cluster: DevCluster,
    kube: Kube,
    namespace: str,
    second_cluster: DevCluster,
    tmp_path: Path,
) -> None:
    first_plan, second_plan = real_cluster.node_plan, second_cluster.node_plan
    bases = (real_cluster.ports.base, second_cluster.ports.base)
    assert alloc.legacy_index(bases[0]) == alloc.legacy_index(bases[1])  # the case
    for attr in ("index", "host_veth", "host_ip", "link_cidr", "pod_cidr", "cgroup_root"):
        assert getattr(first_plan, attr) != getattr(second_plan, attr), attr
    for plan in (first_plan, second_plan):
        assert Path(f"/sys/class/net/{plan.host_veth}").exists()
        assert list(Path("/sys/fs/cgroup").glob(f"*/{plan.cgroup_root}"))
    kube2 = Kube(connect(kubeconfig=second_cluster.kubeconfig))
    second_ns = second_cluster._read_state()["node_namespace"]
    try:
        namespace2 = _driver_namespace(kube2)
        # both SparkPi run at the same time: submitted first, then waited for
        runs = []
        for cluster, ns, client in (
            (real_cluster, namespace, kube),
            (second_cluster, namespace2, kube2),
        ):
            body = spec(f"pi-{cluster.ports.base}", ns, args=["8"], executors=1)
            path = write(tmp_path, body)
            runs.append((cluster, ns, client, submit(cluster.kubeconfig, "-f", str(path))))
        for cluster, ns, client, name in runs:
            cli(cluster.kubeconfig, "wait", name, "-n", ns, "--timeout", "600", timeout=660)
            # logs come from the cluster's own kubelet (a cross-wired link: x509 errors here)
            assert PI_LINE in cli(cluster.kubeconfig, "logs", name, "-n", ns).stdout
            _on_own_node(client, ns, name, cluster.node_plan.pod_cidr)
    finally:
        kube2.close()

    second_cluster.down()
    assert host.leftovers(second_plan, second_ns) == []
    assert Path(f"/sys/class/net/{first_plan.host_veth}").exists()
    assert real_cluster.is_running()
    pod = run_pod(kube, namespace, "after-down", ["echo", "still here"], timeout=180)
    assert pod["spec"]["nodeName"] == NODE_NAME
    assert pod_logs(kube, namespace, "after-down").strip() == "still here"
