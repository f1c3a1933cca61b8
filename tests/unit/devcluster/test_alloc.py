"""Two dev clusters never share ports, links, subnets or cgroups: the allotment (pure part), the
machine's registry, the one port-base variable, and ``up`` refusing an overlap before it builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import alloc, registry
from sparkplane_devcluster.alloc import Claim
from sparkplane_devcluster.cluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.node.plan import NodePlan


def test_the_issue_s_port_bases_once_shared_an_index_and_now_get_two() -> None:
    # 16443 and 21443 (and 18420 / 20920) gave the same link under the old derivation
    assert alloc.legacy_index(16443) == alloc.legacy_index(21443) == 145
    assert alloc.legacy_index(18420) == alloc.legacy_index(20920) == 93
    first = alloc.choose_index(None, 18420, taken=set())
    second = alloc.choose_index(None, 20920, taken={first})
    assert first == 93 and second != first
    a, b = NodePlan(first, Path("/a")), NodePlan(second, Path("/b"))
    for attr in ("host_veth", "host_ip", "node_ip", "link_cidr", "pod_cidr", "cgroup_root"):
        assert getattr(a, attr) != getattr(b, attr)


def test_choose_index_prefers_the_previous_then_the_legacy_then_the_lowest_free() -> None:
    assert alloc.choose_index(7, 16443, taken=set()) == 7
    assert alloc.choose_index(7, 16443, taken={7}) == 145
    assert alloc.choose_index(None, 16443, taken={145, 1, 2}) == 3
    assert alloc.choose_index(999, 16443, taken=set()) == 145  # a corrupt record is ignored
    with pytest.raises(LookupError, match="all 254 real-node indexes are in use"):
        alloc.choose_index(None, 16443, taken=set(alloc.INDEXES))


def test_indexes_in_use_from_link_and_cgroup_names() -> None:
    names = ["lo", "eth0", "spv12", "spv254", "spv0", "spv999", "spvx", "cni0"]
    assert alloc.indexes_named(names, "spv") == {12, 254}
    groups = ["sparkplane-3", "sparkplane-", "user.slice", "sparkplane-3-x", "sparkplane-250"]
    assert alloc.indexes_named(groups, "sparkplane-") == {3, 250}


def test_indexes_in_use_from_addresses_and_routes() -> None:
    networks = [
        "default",  # ignored: not a network
        "0.0.0.0/0",
        "10.0.0.0/8",  # wider than a /16: our longer prefixes win
        "10.217.0.0/16",
        "127.0.0.1/8",
        "10.217.5.1/30",  # a link address
        "10.218.9.0/24",  # a route to pods
        "10.218.20.77/32",  # a single address inside a pod subnet
        "10.217.30.0/23",  # 30 and 31
        "fd00::1/64",
    ]
    assert alloc.indexes_in_networks(networks) == {5, 9, 20, 30, 31}


def test_port_ranges_overlap_within_nineteen() -> None:
    other = Claim(Path("/tmp/other"), 18420)
    assert alloc.port_overlap(18420, [other]) == other
    assert alloc.port_overlap(18402, [other]) == other  # 18402..18420
    assert alloc.port_overlap(18438, [other]) == other
    assert alloc.port_overlap(18401, [other]) is None
    assert alloc.port_overlap(18439, [other]) is None
    message = alloc.port_overlap_message(Path("/tmp/me"), 18423, other)
    assert "18423-18441" in message and "18420-18438" in message
    assert "/tmp/other" in message and "SPARKPLANE_DEV_PORT_BASE" in message
    assert "dev-cluster down --state-dir /tmp/other" in message


def test_port_base_bounds() -> None:
    assert alloc.check_port_base(16443, "x") == 16443
    for bad in (0, 80, 65520, 70000):
        with pytest.raises(ValueError, match="between 1024 and 65517"):
            alloc.check_port_base(bad, "x")


# -- the registry (files in a temporary directory) ------------------------------------------
def _state(state_dir: Path, port_base: int, index: int | None = None) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    data = {"port_base": port_base, "processes": {}, "real_node": index is not None}
    if index is not None:
        data["node_index"] = index
    (state_dir / "state.json").write_text(json.dumps(data))


def test_registry_lists_other_clusters_and_drops_stale_entries(tmp_path: Path) -> None:
    where = tmp_path / "registry"
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _state(a, 18420, 93)
    _state(b, 20920)
    with registry.locked(where):
        for d in (a, b, c):
            registry.register(d, where)
    # c has no state (down, or never started): stale, removed on read
    got = registry.claims(exclude=a, where=where)
    assert got == [Claim(b.resolve(), 20920, None)]
    assert len(list(where.glob("*.json"))) == 2
    assert {x.state_dir for x in registry.claims(where=where)} == {a.resolve(), b.resolve()}
    # a real node started by an older sparkplane (no node_index): its index followed the port base
    (b / "state.json").write_text(json.dumps({"port_base": 20920, "real_node": True}))
    assert registry.claims(exclude=a, where=where) == [Claim(b.resolve(), 20920, 93)]
    (b / "state.json").unlink()
    registry.unregister(a, where)
    assert registry.claims(where=where) == []
    assert list(where.glob("*.json")) == []


def test_up_refuses_overlapping_ports_naming_the_other_cluster_before_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "registry"
    monkeypatch.setattr(registry, "root", lambda: where)
    other = tmp_path / "other"
    _state(other, 20920, 7)
    registry.register(other, where)
    mine = tmp_path / "mine"
    settings = DevClusterSettings(
        state_dir=mine, cache_dir=tmp_path / "no-cache", port_base=20925, real_node=False
    )
    with pytest.raises(DevClusterError) as err:
        DevCluster(settings).up()
    assert str(other.resolve()) in str(err.value) and "20925-20943" in str(err.value)
    assert not mine.exists() and not (tmp_path / "no-cache").exists()  # nothing built or made


def test_a_claim_is_written_in_the_state_and_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = tmp_path / "registry"
    monkeypatch.setattr(registry, "root", lambda: where)
    _state(tmp_path / "other", 30000, 93)
    registry.register(tmp_path / "other", where)
    cluster = DevCluster(DevClusterSettings(state_dir=tmp_path / "mine", port_base=30100))
    cluster._claim(real=False, progress=lambda _: None)
    state = json.loads((tmp_path / "mine" / "state.json").read_text())
    assert state["port_base"] == 30100 and "node_index" not in state
    assert registry.claims(exclude=tmp_path / "other", where=where) == [
        Claim((tmp_path / "mine").resolve(), 30100, None)
    ]
    cluster.down()
    assert registry.claims(exclude=tmp_path / "other", where=where) == []


# -- one environment variable for the port base ---------------------------------------------
def test_the_port_base_comes_from_one_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARKPLANE_PORT_BASE", raising=False)
    monkeypatch.setenv("SPARKPLANE_DEV_PORT_BASE", "20920")
    assert DevClusterSettings().port_base == 20920
    monkeypatch.setenv("SPARKPLANE_DEV_PORT_BASE", "twenty")
    with pytest.raises(DevClusterError, match="SPARKPLANE_DEV_PORT_BASE='twenty'"):
        DevClusterSettings()
    monkeypatch.delenv("SPARKPLANE_DEV_PORT_BASE")
    assert DevClusterSettings().port_base == 16443
    monkeypatch.setenv("SPARKPLANE_PORT_BASE", "20920")  # the demo's old name: not silently lost
    with pytest.raises(DevClusterError, match="set SPARKPLANE_DEV_PORT_BASE instead"):
        DevClusterSettings()


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--port-base", "80"], {}, "between 1024 and 65517"),
        ([], {"SPARKPLANE_DEV_PORT_BASE": "x"}, "SPARKPLANE_DEV_PORT_BASE='x'"),
    ],
)
def test_cli_rejects_a_bad_port_base_with_exit_4(
    tmp_path: Path, args: list[str], env: dict[str, str], words: str
) -> None:
    state = tmp_path / "state"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkplane.cli",
            "dev-cluster",
            "up",
            "--state-dir",
            str(state),
            *args,
        ],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **env},
        check=False,
        timeout=60,
    )
    assert proc.returncode == 4, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert not state.exists()
