"""The real node's footprint on the host: preflight, namespaces, links, sysctls, clean-up.

Everything a real node changes on the host is made here and undone here:
- a **holder** process (``unshare --mount --propagation slave --net``) whose mount and network
  namespaces every node process joins (``nsenter``): overlays, secret volumes, netns mounts,
  the bridge and kube-proxy's nft tables live and die with them;
- one veth pair (host side ``spv<i>``) and a host route to the pods' subnet through it (both go
  when the namespace goes); ``<i>`` is the cluster's allotted node index
  (:mod:`sparkplane_devcluster.alloc`), never one that :func:`indexes_in_use` finds taken, so an
  existing ``spv<i>`` is another's and :func:`setup` refuses rather than remove it;
- files bound over the ``/proc/sys`` entries the kubelet writes, inside the node's mount
  namespace only, so the host's sysctls are never changed;
- the cgroup root ``/sparkplane-<i>`` in every cgroup v1 hierarchy and in cgroup2.
:func:`teardown` kills whatever runs in the node's namespaces or cgroups and removes the rest,
and :func:`leftovers` lists anything still there (``down`` and a test check it is empty).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import alloc
from sparkplane_devcluster.node.plan import KUBELET_SYSCTLS, NodePlan

CGROUP_FS = Path("/sys/fs/cgroup")
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
COMMANDS = ("ip", "unshare", "nsenter", "mount")


def preflight() -> list[str]:
    """What this host lacks for a real node (empty when it can run one)."""
    problems: list[str] = []
    if not Path("/proc/self/status").exists():
        return ["a Linux host (a real node runs a kubelet, containerd and runc)"]
    if os.geteuid() != 0:
        problems.append("root (the kubelet, containerd and runc need it; run as root)")
    caps = 0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            caps = int(line.split()[1], 16)
    for bit, name in ((CAP_SYS_ADMIN, "CAP_SYS_ADMIN"), (CAP_NET_ADMIN, "CAP_NET_ADMIN")):
        if not caps >> bit & 1:
            problems.append(f"the {name} capability (mounts, namespaces, network links)")
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if missing:
        problems.append(f"the commands {', '.join(missing)} (Debian: iproute2, util-linux)")
    if "overlay" not in Path("/proc/filesystems").read_text():
        problems.append("overlayfs in the kernel (containerd's snapshotter)")
    if not any(CGROUP_FS.glob("*/cgroup.procs")) and not (CGROUP_FS / "cgroup.procs").exists():
        problems.append("a mounted cgroup filesystem under /sys/fs/cgroup")
    return problems


def _run(argv: list[str], what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise DevClusterError(f"{what} failed: `{' '.join(argv)}`: {proc.stderr.strip()}")
    return proc.stdout


def holder_argv() -> list[str]:
    """The process whose namespaces the node's processes join."""
    return ["unshare", "--mount", "--propagation", "slave", "--net", "--", "sleep", "infinity"]


def in_node(holder: int, argv: list[str]) -> list[str]:
    """``argv`` run inside the node's mount and network namespaces (nsenter execs it)."""
    return ["nsenter", "-t", str(holder), "-m", "-n", "--", *argv]


def namespace_id(pid: int) -> str:
    """The mount namespace of ``pid`` (``mnt:[4026532...]``)."""
    return os.readlink(f"/proc/{pid}/ns/mnt")


def _networks_on_host() -> list[str]:
    """Every IPv4 address (with its prefix) and route destination of the host, all tables."""
    found = []
    for argv in (["ip", "-j", "-4", "addr"], ["ip", "-j", "-4", "route", "show", "table", "all"]):
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        try:
            rows = json.loads(proc.stdout or "[]")
        except ValueError:
            continue
        for row in rows:
            for info in row.get("addr_info", []):
                found.append(f"{info.get('local')}/{info.get('prefixlen')}")
            if row.get("dst") not in (None, "default"):
                found.append(str(row["dst"]))
    return found


def indexes_in_use() -> dict[int, str]:
    """Node indexes the host already uses, each with what uses it (a link named ``spv<i>``, a
    cgroup root ``/sparkplane-<i>`` in any hierarchy, an address or route in its subnets)."""
    used: dict[int, str] = {}
    net = Path("/sys/class/net")
    links = [p.name for p in net.iterdir()] if net.is_dir() else []
    for index in alloc.indexes_named(links, alloc.LINK_PREFIX):
        used.setdefault(index, f"network link {alloc.LINK_PREFIX}{index}")
    groups = [d.name for d in CGROUP_FS.iterdir() if d.is_dir()] if CGROUP_FS.is_dir() else []
    for hierarchy in CGROUP_FS.iterdir() if CGROUP_FS.is_dir() else []:
        if hierarchy.is_dir():
            try:
                groups += [d.name for d in hierarchy.iterdir() if d.is_dir()]
            except OSError:
                continue
    for index in alloc.indexes_named(groups, alloc.CGROUP_PREFIX):
        used.setdefault(index, f"cgroup /{alloc.CGROUP_PREFIX}{index}")
    for index in alloc.indexes_in_networks(_networks_on_host()):
        used.setdefault(index, "an address or route in its subnets")
    return used


def setup(plan: NodePlan, holder: int) -> None:
    """The link to the host, the pods' bridge, forwarding inside the namespace, sysctl files."""
    veth = plan.host_veth
    if Path(f"/sys/class/net/{veth}").exists():  # chosen free a moment ago: someone else's now
        raise DevClusterError(
            f"the network link {veth} appeared while this cluster was starting (another dev "
            "cluster, or an older sparkplane that derives it from its port base): run `up` again "
            "to choose another"
        )
    _run(
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(holder)],
        "creating the node's link",
    )
    _run(["ip", "addr", "add", f"{plan.host_ip}/30", "dev", veth], "addressing the host link")
    _run(["ip", "link", "set", veth, "up"], "raising the host link")
    script = "; ".join(
        [
            "set -e",
            "ip link set lo up",
            f"ip addr add {plan.node_ip}/30 dev eth0",
            "ip link set eth0 up",
            "ip link add cni0 type bridge",
            f"ip link set cni0 address {plan.bridge_mac}",  # fixed: see NodePlan.bridge_mac
            f"ip addr add {plan.bridge_ip}/24 dev cni0",
            "ip link set cni0 up",
            "echo 1 > /proc/sys/net/ipv4/ip_forward",
        ]
    )
    _run(in_node(holder, ["sh", "-c", script]), "setting up the node's network")
    _run(
        ["ip", "route", "add", plan.pod_cidr, "via", plan.node_ip, "dev", veth],
        "routing the pods' subnet to the node",
    )
    sysctl_dir = plan.path("sysctl")
    sysctl_dir.mkdir(parents=True, exist_ok=True)
    binds = []
    for name, value in KUBELET_SYSCTLS.items():
        target = sysctl_dir / name.replace("/", ".")
        target.write_text(value + "\n")
        binds.append(f"mount --bind {target} /proc/sys/{name}")
    _run(in_node(holder, ["sh", "-c", " && ".join(binds)]), "shielding the host's sysctls")
    make_cgroup_root(plan)


def make_cgroup_root(plan: NodePlan) -> None:
    """The kubelet wants its cgroup root in every hierarchy before it starts (cpuset's needs
    the parent's cpus and mems, or nothing could join it)."""
    hierarchies = [d for d in CGROUP_FS.iterdir() if d.is_dir() and (d / "cgroup.procs").exists()]
    for hierarchy in hierarchies:
        root = hierarchy / plan.cgroup_root
        root.mkdir(exist_ok=True)
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (hierarchy / name).exists():
                (root / name).write_text((hierarchy / name).read_text())


def _pids_in_namespace(ns: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if os.readlink(entry / "ns" / "mnt") == ns:
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _cgroup_dirs(plan: NodePlan) -> list[Path]:
    """The node's cgroup root in every hierarchy (v1 controllers, name=systemd, cgroup2)."""
    roots = [CGROUP_FS / plan.cgroup_root] if (CGROUP_FS / "cgroup.procs").exists() else []
    roots += [d / plan.cgroup_root for d in CGROUP_FS.iterdir() if d.is_dir()]
    return [r for r in roots if r.is_dir()]


def _pids_in_cgroups(plan: NodePlan) -> set[int]:
    pids: set[int] = set()
    for root in _cgroup_dirs(plan):
        for procs in root.rglob("cgroup.procs"):
            try:
                pids.update(int(p) for p in procs.read_text().split())
            except OSError:
                continue
    return pids


def _kill(pids: set[int] | list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


def teardown(plan: NodePlan, holder: int | None, ns: str | None) -> None:
    """Kill everything of the node and remove what it made (safe to call again)."""
    for _ in range(50):
        victims = set(_pids_in_namespace(ns) if ns else []) | _pids_in_cgroups(plan)
        if holder is not None and ns and Path(f"/proc/{holder}").exists():
            victims.add(holder)
        if not victims:
            break
        _kill(victims)
        time.sleep(0.1)
    for _ in range(50):
        remaining = _cgroup_dirs(plan)
        if not remaining:
            break
        for root in remaining:
            for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                if path.is_dir():
                    try:
                        path.rmdir()
                    except OSError:
                        pass
            try:
                root.rmdir()
            except OSError:
                pass
        time.sleep(0.1)
    if Path(f"/sys/class/net/{plan.host_veth}").exists():
        subprocess.run(["ip", "link", "del", plan.host_veth], capture_output=True, check=False)


def pods_memory_bytes(plan: NodePlan) -> int:
    """Memory the node's pods use now (the memory cgroup of the node's root; 0 if unknown)."""
    for path in (
        CGROUP_FS / "memory" / plan.cgroup_root / "memory.usage_in_bytes",
        CGROUP_FS / plan.cgroup_root / "memory.current",
    ):
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            continue
    return 0


def leftovers(plan: NodePlan, ns: str | None = None) -> list[str]:
    """Whatever of the node is still on the host (``down`` must leave this empty)."""
    found: list[str] = []
    if ns and _pids_in_namespace(ns):
        found.append(f"processes in the node's mount namespace: {_pids_in_namespace(ns)}")
    if _pids_in_cgroups(plan):
        found.append(f"processes in the node's cgroups: {sorted(_pids_in_cgroups(plan))}")
    found += [f"cgroup {d}" for d in _cgroup_dirs(plan)]
    if Path(f"/sys/class/net/{plan.host_veth}").exists():
        found.append(f"network link {plan.host_veth}")
    root = str(plan.root)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if root in line:
            found.append(f"mount {line.split()[4]}")
    return found
