"""The Lease elector's rounds against an in-memory Lease store that checks resourceVersions as
the API server does (the real API server: tests/integration/test_operator_robust.py and
test_operator_fencing.py): the holder renews with one request, a conflict sends it back to
reading, and a slow round does not delay the next."""

from __future__ import annotations

import copy
from typing import Any

from sparkplane.errors import AlreadyExistsError, ConflictError
from sparkplane.operator.runtime.leader import LEASE, LeaderElector


class Leases:
    """One namespace's Leases: create, get and a resourceVersion-checked replace."""

    def __init__(self) -> None:
        self.stored: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.version = 0

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.stored[obj["metadata"]["name"]] = obj
        return copy.deepcopy(obj)

    def get_or_none(self, api: str, kind: str, name: str, namespace: str) -> Any:
        assert (api, kind) == (LEASE, "Lease")
        self.calls.append("get")
        return copy.deepcopy(self.stored.get(name))

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("create")
        if obj["metadata"]["name"] in self.stored:
            raise AlreadyExistsError("exists")
        return self._stamp(obj)

    def replace(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("replace")
        now = self.stored[obj["metadata"]["name"]]
        if now["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise ConflictError("the object has been modified")
        return self._stamp(obj)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(leases: Leases, clock: Clock, identity: str) -> LeaderElector:
    return LeaderElector(
        leases,  # type: ignore[arg-type]
        name="op",
        namespace="ns",
        identity=identity,
        lease_seconds=15,
        renew_seconds=2,
        clock=clock,
    )


def test_the_holder_renews_with_one_write_and_a_conflict_sends_it_back_to_reading() -> None:
    leases, clock = Leases(), Clock()
    a = elector(leases, clock, "a")
    assert a.try_acquire_or_renew()
    assert leases.calls == ["get", "create"]
    for _ in range(3):
        clock.now += 2
        leases.calls.clear()
        assert a.try_acquire_or_renew()
        assert leases.calls == ["replace"]  # no read: the Lease as our last write left it
    renewed = leases.stored["op"]["spec"]["renewTime"]
    assert leases.stored["op"]["spec"]["holderIdentity"] == "a" and renewed

    # b takes it over (a was frozen past the lease); a's next renewal conflicts, it reads
    b = elector(leases, clock, "b")
    assert not b.try_acquire_or_renew()
    clock.now += 16
    assert b.try_acquire_or_renew()
    assert leases.stored["op"]["spec"]["leaseTransitions"] == 1
    leases.calls.clear()
    assert not a.try_acquire_or_renew()
    assert leases.calls == ["replace", "get"]
    assert leases.stored["op"]["spec"]["holderIdentity"] == "b"
    leases.calls.clear()
    assert not a.try_acquire_or_renew()  # and keeps reading while another holds it
    assert leases.calls == ["get"]


def test_holds_counts_from_when_the_renewal_was_sent() -> None:
    leases, clock = Leases(), Clock()
    a = elector(leases, clock, "a")

    slow = leases.replace

    def replace(obj: dict[str, Any]) -> dict[str, Any]:
        clock.now += 6  # the API server took 6 s to answer
        return slow(obj)

    assert a.try_acquire_or_renew()
    a.is_leader.set()
    leases.replace = replace  # type: ignore[method-assign]
    sent = clock.now
    assert a.try_acquire_or_renew()
    assert a.holds()
    clock.now = sent + a.renew_deadline - 0.1
    assert a.holds()
    clock.now = sent + a.renew_deadline
    assert not a.holds()
