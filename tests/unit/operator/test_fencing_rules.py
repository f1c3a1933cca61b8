"""The pure halves of fencing: what is repaired after a commit, what the sweeper deletes, and
when a leader must stop writing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sparkplane.operator.core.decision import CreateResources, DeleteResources
from sparkplane.operator.runtime.leader import LeaderElector, can_acquire, record_of
from sparkplane.operator.runtime.sweep import leftovers
from tests.unit.operator.opfixtures import UID, Walk, at, driver, make_cr, stamp


def test_requested_but_never_created_driver_is_created_again_not_failed() -> None:
    walk = Walk(make_cr())
    walk.step(0)  # committed DriverRequested; say the replica died before creating
    assert walk.state == "DriverRequested"
    waiting = walk.step(1)  # within the cache grace: wait
    assert waiting.check_driver is None and not waiting.actions
    asked = walk.step(10)
    assert asked.check_driver == "pi-0-driver"  # the runner reads it live
    again = walk.step(10, driver_absent=True)
    (create,) = [a for a in again.actions if isinstance(a, CreateResources)]
    assert create.objects[-1]["metadata"]["name"] == "pi-0-driver"  # same name: collides
    assert again.status is None and walk.state == "DriverRequested"


def test_driver_seen_then_gone_is_still_a_failure() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    gone = driver(phase="Running")
    walk.step(12, tombstones=(gone,), driver_absent=True)
    assert walk.states[-2:] == ["Failed", "ResourceReleased"]


def test_release_guards_the_observed_driver_by_uid() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver(uid="seen-uid"))
    walk.step(5, driver(phase="Succeeded", uid="seen-uid"))  # the end is written alone first
    decision = walk.step(5, driver(phase="Succeeded", uid="seen-uid"))
    (delete,) = [a for a in decision.actions if isinstance(a, DeleteResources)]
    assert delete.uids == (("pi-0-driver", "seen-uid"),)


def test_released_app_whose_driver_is_still_there_deletes_it_again() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver())
    walk.step(5, driver(phase="Succeeded"))
    walk.step(5, driver(phase="Succeeded"))
    assert walk.state == "ResourceReleased"
    again = walk.step(8, driver(phase="Succeeded"))  # crash between commit and delete
    assert [type(a) for a in again.actions] == [DeleteResources]
    assert walk.step(9).actions == ()  # gone: nothing to do


def _obj(kind: str, name: str, selector: str, age: float = 60) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "uid": f"{name}-uid",
            "creationTimestamp": stamp(100 - age),
            "labels": {"spark-app-selector": selector},
            "ownerReferences": [
                {"kind": "SparkApplication", "name": "pi", "uid": UID, "controller": True}
            ],
        },
    }


def test_sweeper_takes_only_objects_of_finished_or_other_attempts() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    running = copy.deepcopy(walk.cr)
    current = _obj("ConfigMap", "pi-0-conf", "pi-0")
    stale = _obj("Pod", "pi-7-driver", "pi-7")
    young = _obj("Service", "pi-9-svc", "pi-9", age=2)
    foreign = _obj("ConfigMap", "x", "pi-7")
    foreign["metadata"]["ownerReferences"][0]["uid"] = "another-cr"
    everything = [current, stale, young, foreign]
    found = leftovers(everything, lambda ns, n: running, at(100), 10)
    assert found == [stale]
    walk.step(1, driver())
    walk.step(5, driver(phase="Succeeded"))
    walk.step(5, driver(phase="Succeeded"))
    assert walk.state == "ResourceReleased"
    found = leftovers(everything, lambda ns, n: walk.cr, at(100), 10)
    assert found == [current, stale]
    assert leftovers(everything, lambda ns, n: None, at(100), 10) == []  # owner gone: GC's


def test_lease_expiry_is_judged_on_the_candidates_own_clock() -> None:
    lease = {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 6, "renewTime": "whatever"}}
    assert not can_acquire(lease, "b", 5.9)
    assert can_acquire(lease, "b", 6.1)
    renewed = {"spec": {**lease["spec"], "renewTime": "later"}}
    assert record_of(renewed) != record_of(lease)  # any renewal restarts the candidate's wait


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_leader_stops_writing_at_the_renew_deadline_even_before_noticing() -> None:
    clock = _Clock()
    elector = LeaderElector(
        None,  # type: ignore[arg-type]  # no I/O in this test
        name="l",
        namespace="ns",
        identity="a",
        lease_seconds=6,
        renew_seconds=1,
        clock=clock,
    )
    assert elector.renew_deadline == 4
    assert not elector.holds()
    elector._renewed_at = clock.now  # a renewal sent now succeeded
    elector._set(True)
    assert elector.holds()
    clock.now += 3.9
    assert elector.holds()
    clock.now += 0.2  # SIGSTOP/SIGCONT: the elector thread has not run, yet writes stop
    assert not elector.holds()
    assert elector.is_leader.is_set()
    with pytest.raises(ValueError, match="renew"):
        LeaderElector(None, name="l", namespace="n", identity="a", lease_seconds=2, renew_seconds=2)  # type: ignore[arg-type]


def test_one_event_per_status_write_keeps_failures_visible() -> None:
    from sparkplane.operator.core.decision import Transition
    from sparkplane.operator.runtime.actions import fold

    t0 = at(0)
    path = (
        Transition(None, "Submitted", "created", t0),
        Transition("Submitted", "DriverRequested", "Driver pod pi-0-driver requested", t0),
    )
    folded = fold(path)
    assert folded is not None and folded.dst == "DriverRequested" and folded.src is None
    assert folded.message == "Submitted -> DriverRequested: Driver pod pi-0-driver requested"
    failing = (
        Transition("RunningHealthy", "Failed", "Driver failed (Error)", t0, warning=True),
        Transition("Failed", "ScheduledToRestart", "Attempt 1 scheduled", t0),
    )
    folded = fold(failing)
    assert folded is not None and (folded.dst, folded.warning) == ("Failed", True)
    assert fold(()) is None
    assert fold(path[1:]) == path[1]
