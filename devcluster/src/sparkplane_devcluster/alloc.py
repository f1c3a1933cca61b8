"""What two dev clusters on one machine must never share, and how it is allotted (pure).

A dev cluster binds :data:`PORT_COUNT` loopback ports from its port base; with a real node it
also takes a **node index** ``i`` (1..254) that names everything the node puts on the host: the
veth ``spv<i>``, the link ``10.217.<i>.0/30``, the pods' ``10.218.<i>.0/24`` and the cgroup root
``/sparkplane-<i>`` (:class:`sparkplane_devcluster.node.plan.NodePlan`). kube-proxy's nft tables,
the bridge and every other address live inside the node's own network namespace, so they cannot
meet another cluster's and need no allotment.

The index was once a function of the port base alone, so two port bases (16443 and 21443) got
the same link and the second cluster took the first's. Now it is *chosen*: the first of the
cluster's previous index, then that old function's value, then 1, 2, ... that no other
registered cluster holds (:mod:`sparkplane_devcluster.registry`) and that nothing on the host
uses (a link of that name, a cgroup root, an address or route inside one of its subnets). The
choice is written in the cluster's state (``state.json``) so ``up``, ``status`` and ``down`` name
the same things. Ports cannot be moved behind a user's back (their kubeconfig names them), so an
overlap with another registered cluster's range is refused with that cluster's state dir.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PORT_COUNT = 19  # apiserver, etcd client and peer, controller-manager, scheduler, kwok, Spark UI,
# SeaweedFS (master, volume, filer, S3; http and gRPC each), Kueue (webhooks, health), one left
# for tests (base + 17), Traefik (TLS and ping)
INDEXES = range(1, 255)
LINK_POOL, POD_POOL = "10.217", "10.218"
LINK_PREFIX, CGROUP_PREFIX = "spv", "sparkplane-"
MIN_PORT, MAX_PORT = 1024, 65535 - PORT_COUNT + 1


@dataclass(frozen=True)
class Claim:
    """Another dev cluster registered on this machine: where it lives and what it holds."""

    state_dir: Path
    port_base: int
    node_index: int | None = None


def port_range(base: int) -> range:
    """The loopback ports a cluster with this base binds."""
    return range(base, base + PORT_COUNT)


def check_port_base(base: int, source: str) -> int:
    """``base`` if a whole range fits above the privileged ports, else a clear error."""
    if not MIN_PORT <= base <= MAX_PORT:
        raise ValueError(
            f"{source}={base}: the port base must be between {MIN_PORT} and {MAX_PORT} "
            f"(the cluster binds {PORT_COUNT} ports from it)"
        )
    return base


def port_overlap(base: int, claims: Iterable[Claim]) -> Claim | None:
    """The first other cluster whose port range meets ``base``'s, if any."""
    mine = port_range(base)
    for claim in claims:
        theirs = port_range(claim.port_base)
        if mine.start < theirs.stop and theirs.start < mine.stop:
            return claim
    return None


def port_overlap_message(state_dir: Path, base: int, other: Claim) -> str:
    """What a user reads when ``base`` would share ports with ``other``."""
    mine, theirs = port_range(base), port_range(other.port_base)
    return (
        f"ports {mine.start}-{mine.stop - 1} of the dev cluster in {state_dir} overlap ports "
        f"{theirs.start}-{theirs.stop - 1} of the dev cluster in {other.state_dir}: choose a "
        f"port base at least {PORT_COUNT} away from {other.port_base} (--port-base or "
        f"SPARKPLANE_DEV_PORT_BASE), or stop that cluster first "
        f"(`sparkplane dev-cluster down --state-dir {other.state_dir}`)"
    )


def legacy_index(port_base: int) -> int:
    """The index older versions derived from the port base (16443 -> 145, 17443 -> 245); still
    the first choice after a cluster's own previous one, so addresses stay familiar."""
    return (port_base // 10) % 250 + 1


def link_cidr(index: int) -> str:
    return f"{LINK_POOL}.{index}.0/30"


def pod_cidr(index: int) -> str:
    return f"{POD_POOL}.{index}.0/24"


def indexes_named(names: Iterable[str], prefix: str) -> set[int]:
    """The indexes in names like ``spv12`` / ``sparkplane-12`` (others are ignored)."""
    found = set()
    for name in names:
        match = re.fullmatch(re.escape(prefix) + r"(\d{1,3})", name)
        if match and int(match.group(1)) in INDEXES:
            found.add(int(match.group(1)))
    return found


def indexes_in_networks(networks: Iterable[str]) -> set[int]:
    """The indexes whose link or pod subnet meets one of ``networks`` (addresses with prefix,
    or route destinations, as ``ip`` prints them). Networks wider than a /16 (a default route,
    10.0.0.0/8 through a VPN) are ignored: a longer prefix of ours wins over them."""
    taken = set()
    for text in networks:
        try:
            net = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue
        if not isinstance(net, ipaddress.IPv4Network) or net.prefixlen <= 16:
            continue
        for index in INDEXES:
            ours = (ipaddress.ip_network(link_cidr(index)), ipaddress.ip_network(pod_cidr(index)))
            if any(net.overlaps(o) for o in ours):
                taken.add(index)
    return taken


def choose_index(previous: int | None, port_base: int, taken: set[int]) -> int:
    """The cluster's previous index, else the legacy one, else the lowest that is free."""
    candidates: list[int | None] = [previous, legacy_index(port_base), *INDEXES]
    for candidate in candidates:
        if candidate is not None and candidate in INDEXES and candidate not in taken:
            return candidate
    raise LookupError(
        f"all {len(INDEXES)} real-node indexes are in use (links {LINK_PREFIX}<i>, cgroups "
        f"/{CGROUP_PREFIX}<i>, subnets {LINK_POOL}.<i>.0/30 and {POD_POOL}.<i>.0/24): stop "
        "another dev cluster with a real node"
    )
