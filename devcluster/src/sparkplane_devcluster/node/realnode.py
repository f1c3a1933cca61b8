"""Bring the real node up beside the control plane and take it down again.

Order: holder namespaces -> network and sysctl shields (:mod:`.host`) -> the API relay ->
the ``kubernetes`` Service's endpoint -> containerd -> images imported (skipped when the same
archives are already in) -> kubelet (Ready) -> kube-proxy and CoreDNS -> the fake nodes tainted
so apps land here unless they ask for a simulated node. Every process is started through the
cluster's ``launch`` so ``down`` and ``status`` see it; :func:`stop` undoes all of it.
Called by :class:`sparkplane_devcluster.cluster.DevCluster`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import process
from sparkplane_devcluster.node import host, objects
from sparkplane_devcluster.node.plan import (
    NODE_LABEL,
    NODE_NAME,
    RELAY_PORT,
    NodePlan,
)
from sparkplane_devcluster.nodebuild import NodeBinaries
from sparkplane_devcluster.pki import Pki, ensure_node_certs

Progress = Callable[[str], None]
Launch = Callable[[str, list[str], dict[str, str] | None], tuple[int, str, Path]]
COMPONENTS = (
    "node-holder",
    "apiserver-relay",
    "s3-relay",
    "containerd",
    "kubelet",
    "kube-proxy",
    "coredns",
)
NODE_PACKAGES = {"nftables": "nft"}  # kube-proxy's nftables mode runs `nft`


def start(
    plan: NodePlan,
    pki: Pki,
    bins: NodeBinaries,
    archives: list[tuple[str, Path, str]],
    api_port: int,
    s3_port: int,
    kube: Any,
    launch: Launch,
    progress: Progress,
    timeout: float,
) -> str:
    """Start the node; return its mount namespace id (kept so ``down`` finds every process)."""
    ensure_node_certs(pki, NODE_NAME, plan.node_ip)
    for sub in ("run", "cni/net.d", "cni/ipam", "pod-logs", "kubelet", "configs"):
        plan.path(sub).mkdir(parents=True, exist_ok=True)
    cfg = plan.path("configs")
    plan.path("resolv.conf").write_text("")
    objects.ensure_rbac(kube)

    progress("starting the real node's namespaces and network")
    holder, _, _ = launch("node-holder", host.holder_argv(), None)
    process.wait_until("the node's namespaces", lambda: _has_own_netns(holder), timeout=10)
    ns = host.namespace_id(holder)
    host.setup(plan, holder)
    relay = [sys.executable, str(Path(__file__).parent.parent / "relay.py")]
    # the API server's, and the S3 gateway's (pods reach SeaweedFS at host_ip:s3_port)
    for name, port, target in (
        ("apiserver-relay", RELAY_PORT, api_port),
        ("s3-relay", s3_port, s3_port),
    ):
        pid, binary, log = launch(
            name, [*relay, plan.host_ip, str(port), "127.0.0.1", str(target)], None
        )
        process.wait_until(
            f"the {name}",
            lambda port=port: process.port_in_use(port, plan.host_ip),  # type: ignore[misc]
            timeout=timeout,
            pid=pid,
            binary=binary,
            log=log,
        )
    objects.kubernetes_endpoint(kube, plan)

    progress("starting containerd")
    (cfg / "containerd.toml").write_text(
        plan.containerd_config(bins.runc, bins.cni_dir, _pause_ref(archives))
    )
    (plan.path("cni", "net.d") / "10-sparkplane.conflist").write_text(plan.cni_config())
    env = dict(os.environ, PATH=f"{bins.shim.parent}:{bins.runc.parent}:{os.environ['PATH']}")
    pid, binary, log = launch(
        "containerd",
        host.in_node(holder, [str(bins.containerd), "--config", str(cfg / "containerd.toml")]),
        env,
    )
    process.wait_until(
        "containerd",
        lambda: _ctr_ok(bins, plan),
        timeout=timeout,
        pid=pid,
        binary=binary,
        log=log,
    )
    import_images(bins, archives, plan, progress)

    progress("starting the kubelet")
    kubelet_kc = cfg / "kubelet.kubeconfig"
    kubelet_kc.write_text(
        plan.kubeconfig(
            pki.file("ca.crt"),
            pki.file("kubelet-client.crt"),
            pki.file("kubelet-client.key"),
            f"system:node:{NODE_NAME}",
        )
    )
    (cfg / "kubelet.yaml").write_text(
        plan.kubelet_config(
            pki.file("ca.crt"), pki.file("kubelet-serving.crt"), pki.file("kubelet-serving.key")
        )
    )
    kubelet = [
        str(bins.kubelet),
        f"--config={cfg / 'kubelet.yaml'}",
        f"--kubeconfig={kubelet_kc}",
        f"--root-dir={plan.path('kubelet')}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={plan.node_ip}",
        f"--node-labels={NODE_LABEL}=true",
        "--v=1",
    ]
    pid, binary, log = launch("kubelet", host.in_node(holder, kubelet), env)
    process.wait_until(
        f"node {NODE_NAME} to become Ready",
        lambda: _node_ready(kube),
        timeout=timeout,
        pid=pid,
        binary=binary,
        log=log,
    )

    progress("starting kube-proxy and CoreDNS")
    proxy_kc, dns_kc = cfg / "kube-proxy.kubeconfig", cfg / "coredns.kubeconfig"
    proxy_kc.write_text(
        plan.kubeconfig(
            pki.file("ca.crt"),
            pki.file("kube-proxy.crt"),
            pki.file("kube-proxy.key"),
            "system:kube-proxy",
        )
    )
    dns_kc.write_text(
        plan.kubeconfig(
            pki.file("ca.crt"), pki.file("coredns.crt"), pki.file("coredns.key"), "coredns"
        )
    )
    (cfg / "kube-proxy.yaml").write_text(plan.kube_proxy_config(proxy_kc))
    (cfg / "Corefile").write_text(plan.corefile(dns_kc))
    proxy = launch(
        "kube-proxy",
        host.in_node(holder, [str(bins.kube_proxy), f"--config={cfg / 'kube-proxy.yaml'}"]),
        env,
    )
    dns = launch(
        "coredns", host.in_node(holder, [str(bins.coredns), "-conf", str(cfg / "Corefile")]), env
    )
    # the node's addresses are reachable from the host through the link and its route
    for (pid, binary, log), what, url in (
        (proxy, "kube-proxy", f"http://{plan.node_ip}:10256/healthz"),
        (dns, "CoreDNS", f"http://{plan.bridge_ip}:8181/ready"),
    ):
        process.wait_until(
            what,
            lambda url=url: process.http_ok(url),  # type: ignore[misc]
            timeout=timeout,
            pid=pid,
            binary=binary,
            log=log,
        )
    return ns


def stop(plan: NodePlan, pids: dict[str, tuple[int, str]], ns: str | None) -> None:
    """Stop the node's processes, then remove everything it left on the host."""
    for name in ("kubelet", "kube-proxy", "coredns", "containerd"):
        if name in pids:
            process.stop(*pids[name], grace=5.0)
    holder = pids.get("node-holder", (None, ""))[0]
    host.teardown(plan, holder, ns)
    for relay in ("apiserver-relay", "s3-relay"):
        if relay in pids:
            process.stop(*pids[relay])
    left = host.leftovers(plan, ns)
    if left:
        raise DevClusterError("the real node left these behind: " + "; ".join(left))


def images(bins: NodeBinaries, plan: NodePlan) -> list[dict[str, str]]:
    """The images in the node's containerd (name and size), for ``status``."""
    out = _ctr(bins, plan, "images", "ls")
    rows = []
    for line in out.splitlines()[1:]:
        parts = line.split()
        if parts and not parts[0].startswith("sha256:"):
            rows.append({"name": parts[0], "size": " ".join(parts[3:5])})
    return rows


# -- internals -------------------------------------------------------------------------------
def _has_own_netns(holder: int) -> bool:
    try:
        return os.readlink(f"/proc/{holder}/ns/net") != os.readlink("/proc/self/ns/net")
    except OSError:
        return False


def _ctr(bins: NodeBinaries, plan: NodePlan, *args: str) -> str:
    argv = [str(bins.ctr), "--address", str(plan.containerd_socket), "-n", "k8s.io", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise DevClusterError(f"`ctr {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc.stdout


def _ctr_ok(bins: NodeBinaries, plan: NodePlan) -> bool:
    try:
        _ctr(bins, plan, "version")
    except DevClusterError:
        return False
    return True


def _pause_ref(archives: list[tuple[str, Path, str]]) -> str:
    refs = [ref for ref, _, _ in archives if "/pause:" in ref]
    if not refs:
        raise DevClusterError("no pause image among the node's images: the image build is broken")
    return refs[0]


def import_images(
    bins: NodeBinaries, archives: list[tuple[str, Path, str]], plan: NodePlan, progress: Progress
) -> None:
    """Import each archive unless the same one (by content key) is already in (also on a
    running node: a changed sparkplane image reaches the pods that run it)."""
    record = plan.path("imported.json")
    try:
        done: dict[str, str] = json.loads(record.read_text())
    except (OSError, ValueError):
        done = {}
    present = {row["name"] for row in images(bins, plan)}
    for ref, archive, key in archives:
        if done.get(ref) == key and ref in present:
            continue
        progress(f"importing image {ref} into the node")
        _ctr(bins, plan, "images", "import", str(archive))
        done[ref] = key
        record.write_text(json.dumps(done, indent=2))


def _node_ready(kube: Any) -> bool:
    from sparkplane.errors import NotFoundError
    from sparkplane_devcluster.cluster import node_ready

    try:
        return node_ready(kube.get("v1", "Node", NODE_NAME))
    except NotFoundError:
        return False
