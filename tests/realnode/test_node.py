"""The real node itself: it joins beside the simulated nodes, pods reach the API and each other
by Service name, nothing of the host is changed, and ``down`` leaves nothing behind."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from sparkplane.kube import Kube
from sparkplane_devcluster import DevCluster
from sparkplane_devcluster.node import host
from sparkplane_devcluster.node.plan import KUBELET_SYSCTLS, NODE_NAME, SIMULATED_TAINT
from tests.integration.helpers import wait_for
from tests.realnode.conftest import HOST_SYSCTLS, real_settings
from tests.realnode.sparkapps import SPARK_IMAGE, pod_logs, run_pod


def _host_sysctls() -> dict[str, str]:
    return {name: Path(f"/proc/sys/{name}").read_text() for name in HOST_SYSCTLS}


def test_real_node_beside_tainted_simulated_nodes(kube: Kube) -> None:
    nodes = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
    real = nodes[NODE_NAME]
    assert real["metadata"]["labels"]["sparkplane.io/real-node"] == "true"
    assert real["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://2.")
    assert not real["spec"].get("taints")
    fake = [n for n in nodes.values() if n["metadata"]["name"] != NODE_NAME]
    assert fake, "the simulated nodes are still there"
    for node in fake:
        assert SIMULATED_TAINT["key"] in {t["key"] for t in node["spec"].get("taints", [])}


def test_pods_reach_the_api_and_each_other_by_service_name(kube: Kube, namespace: str) -> None:
    """A headless Service name resolves to a pod IP (CoreDNS) and kubernetes.default.svc
    answers through its ClusterIP (kube-proxy) with the API server's certificate."""
    server = run_pod(
        kube,
        namespace,
        "echo-server",
        ["python3", "-m", "http.server", "8000"],
        labels={"app": "echo"},
        wait="Running",
    )
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "echo", "namespace": namespace},
            "spec": {"clusterIP": "None", "selector": {"app": "echo"}, "ports": [{"port": 8000}]},
        }
    )
    script = (
        "import ssl, socket, urllib.request\n"
        f"print('echo', socket.gethostbyname('echo.{namespace}.svc'))\n"
        "ctx = ssl.create_default_context(cafile="
        "'/var/run/secrets/kubernetes.io/serviceaccount/ca.crt')\n"
        "tok = open('/var/run/secrets/kubernetes.io/serviceaccount/token').read()\n"
        "req = urllib.request.Request('https://kubernetes.default.svc/version',"
        " headers={'Authorization': 'Bearer ' + tok})\n"
        "print('api', urllib.request.urlopen(req, context=ctx).read().decode()[:200])\n"
        f"print('http', urllib.request.urlopen('http://echo.{namespace}.svc:8000/').status)\n"
    )
    run_pod(kube, namespace, "client", ["python3", "-c", script], wait="Succeeded")
    out = pod_logs(kube, namespace, "client")
    assert f"echo {server['status']['podIP']}" in out
    assert '"gitVersion": "v1.36' in out
    assert "http 200" in out


def _bridge_mac(real_cluster: DevCluster) -> str:
    """The pods' bridge's MAC, as the node's network namespace sees it."""
    holder = real_cluster.component_pid("node-holder")
    assert holder is not None
    out = subprocess.run(
        host.in_node(holder, ["ip", "-o", "link", "show", "cni0"]),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split("link/ether ")[1].split()[0]


def test_the_pods_bridge_keeps_its_mac_while_pods_come_and_go(
    real_cluster: DevCluster, kube: Kube, namespace: str
) -> None:
    """A bridge without its own MAC takes its lowest port's, so it changed as pods came and went
    and pods holding the old one in their neighbour table lost packets to the gateway (CoreDNS)
    for 5-20 s: drivers failed with UnknownHostException. It keeps the plan's MAC now, and a
    pod started right after others ended resolves at once."""
    assert _bridge_mac(real_cluster) == real_cluster.node_plan.bridge_mac
    for i in range(3):  # churn: pods (veth ports) come and go
        run_pod(kube, namespace, f"churn-{i}", ["true"], wait="Succeeded")
    script = (
        "import socket, time\n"
        "t = time.monotonic()\n"
        "for _ in range(50): socket.getaddrinfo('kubernetes.default.svc', 443)\n"
        "print('slowest-total', round(time.monotonic() - t, 2))\n"
    )
    run_pod(kube, namespace, "resolver", ["python3", "-c", script], wait="Succeeded")
    total = float(pod_logs(kube, namespace, "resolver").split("slowest-total")[1].split()[0])
    assert total < 4.0, f"50 lookups took {total}s: a lookup waited for a resolver timeout"
    assert _bridge_mac(real_cluster) == real_cluster.node_plan.bridge_mac


def test_host_sysctls_untouched_by_the_running_node(real_cluster: DevCluster) -> None:
    """The kubelet writes these at start: it wrote into the node's own copies."""
    assert real_cluster.is_running()
    assert set(HOST_SYSCTLS) >= set(KUBELET_SYSCTLS)
    assert _host_sysctls() == HOST_SYSCTLS


def _nft_tables() -> str:
    proc = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=False)
    return proc.stdout


def test_status_shows_the_real_node_its_images_and_memory(kubeconfig: Path) -> None:
    state = real_settings().state_dir
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkplane.cli",
            "dev-cluster",
            "status",
            "--state-dir",
            str(state),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for word in ("kubelet", "containerd", NODE_NAME, SPARK_IMAGE, "pods use"):
        assert word in proc.stdout, (word, proc.stdout)


def test_real_node_without_capabilities_fails_at_once_naming_them(tmp_path: Path) -> None:
    """Root without CAP_SYS_ADMIN/CAP_NET_ADMIN (a typical unprivileged container)."""
    started = time.monotonic()
    cmd = (
        f"{sys.executable} -m sparkplane.cli dev-cluster up --real-node "
        f"--state-dir {tmp_path} --port-base 17680"
    )
    proc = subprocess.run(
        ["capsh", "--drop=cap_sys_admin,cap_net_admin", "--", "-c", cmd],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stderr
    assert "CAP_SYS_ADMIN" in proc.stderr and "CAP_NET_ADMIN" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - started < 30  # at once: nothing was built or started
    assert not (tmp_path / "state.json").exists()


def test_down_leaves_nothing_and_up_again(real_cluster: DevCluster, kube: Kube) -> None:
    """Runs last in this module: stops the session's cluster, checks the host, starts it again."""
    assert SPARK_IMAGE
    plan = real_cluster.node_plan
    ns = real_cluster._read_state().get("node_namespace")
    before_nft = _nft_tables()
    real_cluster.down()
    assert host.leftovers(plan, ns) == []
    assert _host_sysctls() == HOST_SYSCTLS
    assert not Path(f"/sys/class/net/{plan.host_veth}").exists()
    assert not list(Path("/sys/fs/cgroup").glob(f"*/{plan.cgroup_root}"))
    assert _nft_tables() == before_nft  # kube-proxy's tables lived in the node's namespace
    leftover = subprocess.run(
        ["pgrep", "-f", str(plan.root)], capture_output=True, text=True, check=False
    ).stdout.split()
    assert leftover == []
    started = time.monotonic()
    DevCluster(real_settings()).up()
    wait_for(
        lambda: any(n["metadata"]["name"] == NODE_NAME for n in kube.list("v1", "Node")),
        timeout=60,
        what="the real node back",
    )
    print(f"warm up --real-node after down: {time.monotonic() - started:.1f}s")
