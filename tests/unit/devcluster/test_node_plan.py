"""The real node's plan: per-cluster names and subnets, and the config files it writes."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from sparkplane_devcluster.node import host
from sparkplane_devcluster.node.plan import KUBELET_SYSCTLS, NodePlan


def test_two_indexes_get_apart_names_and_subnets(tmp_path: Path) -> None:
    demo, tests = NodePlan(145, tmp_path / "a"), NodePlan(245, tmp_path / "b")
    for attr in ("host_veth", "host_ip", "node_ip", "pod_cidr", "cgroup_root", "bridge_mac"):
        assert getattr(demo, attr) != getattr(tests, attr)
    assert len(demo.host_veth) <= 15  # Linux interface names
    assert demo.node_ip.rsplit(".", 1)[0] == demo.host_ip.rsplit(".", 1)[0]


def test_the_pods_bridge_has_its_own_fixed_mac(tmp_path: Path) -> None:
    """Locally administered unicast (bit 1 of the first octet set, bit 0 clear), one per index:
    a bridge whose MAC followed its ports dropped pods' DNS packets after pod churn."""
    macs = {NodePlan(i, tmp_path / str(i)).bridge_mac for i in (1, 145, 254)}
    assert len(macs) == 3
    for mac in macs:
        first = int(mac.split(":")[0], 16)
        assert first & 0b10 and not first & 0b01 and len(mac.split(":")) == 6


def test_kubelet_config_is_authenticated_and_private(tmp_path: Path) -> None:
    plan = NodePlan(145, tmp_path)
    cfg = yaml.safe_load(plan.kubelet_config(Path("/ca"), Path("/crt"), Path("/key")))
    assert cfg["authentication"]["anonymous"] == {"enabled": False}
    assert cfg["authorization"]["mode"] == "Webhook"
    assert cfg["readOnlyPort"] == 0
    assert cfg["address"] == plan.node_ip
    assert cfg["cgroupRoot"] == f"/{plan.cgroup_root}"
    assert cfg["failCgroupV1"] is False and cfg["oomScoreAdj"] == 0
    assert cfg["clusterDNS"] == [plan.bridge_ip]
    for key in ("resolvConf", "podLogsDir"):
        assert cfg[key].startswith(str(tmp_path))
    assert str(plan.containerd_socket) in cfg["containerRuntimeEndpoint"]


def test_containerd_config_is_valid_toml_with_private_paths(tmp_path: Path) -> None:
    plan = NodePlan(145, tmp_path)
    cfg = tomllib.loads(plan.containerd_config(Path("/b/runc"), Path("/b/cni"), "pause:1"))
    assert cfg["version"] == 3
    assert cfg["root"].startswith(str(tmp_path)) and cfg["state"].startswith(str(tmp_path))
    runtime = cfg["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True
    assert runtime["containerd"]["runtimes"]["runc"]["options"]["BinaryName"] == "/b/runc"
    assert cfg["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "pause:1"


def test_pods_route_nowhere_beyond_services_and_the_host_link(tmp_path: Path) -> None:
    plan = NodePlan(145, tmp_path)
    bridge = json.loads(plan.cni_config())["plugins"][0]
    assert bridge["ipMasq"] is False
    routes = [r["dst"] for r in bridge["ipam"]["routes"]]
    assert "0.0.0.0/0" not in routes
    assert routes == ["10.96.0.0/16", plan.link_cidr]


def test_kube_proxy_leaves_conntrack_sysctls_alone(tmp_path: Path) -> None:
    plan = NodePlan(145, tmp_path)
    cfg = yaml.safe_load(plan.kube_proxy_config(Path("/kc")))
    assert cfg["mode"] == "nftables"
    assert cfg["conntrack"]["maxPerCore"] == 0 and cfg["conntrack"]["min"] == 0
    assert cfg["nodePortAddresses"] == [f"{plan.node_ip}/32"]


def test_corefile_has_no_upstream(tmp_path: Path) -> None:
    text = NodePlan(145, tmp_path).corefile(Path("/kc"))
    assert "forward" not in text and "kubernetes cluster.local" in text


def test_kubeconfig_names_the_server_certificate(tmp_path: Path) -> None:
    plan = NodePlan(145, tmp_path)
    cfg = yaml.safe_load(plan.kubeconfig(Path("/ca"), Path("/c"), Path("/k"), "u"))
    cluster = cfg["clusters"][0]["cluster"]
    assert cluster["server"] == plan.api_url and cluster["tls-server-name"] == "kubernetes"


def test_sysctls_the_kubelet_writes_are_shielded() -> None:
    assert set(KUBELET_SYSCTLS) >= {"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}


def test_in_node_runs_the_command_after_a_separator() -> None:
    argv = host.in_node(42, ["/bin/kubelet", "--v=1"])
    assert argv[:3] == ["nsenter", "-t", "42"] and argv[argv.index("--") + 1] == "/bin/kubelet"


def test_preflight_names_what_is_missing_without_root(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(host.os, "geteuid", lambda: 1000)
    problems = host.preflight()
    assert any("root" in p for p in problems)


def test_a_port_base_is_no_index(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"not in 1\.\.254"):
        NodePlan(16443, tmp_path)
