"""The backpressure on driver creation: the pure AIMD limit, the gate's bookkeeping, the held
decision, the work queue's urgent lane, and the settings (issue 21 item 5)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from sparkplane.errors import KubeError
from sparkplane.operator.core.capacity import FULL, THROTTLED, AimdLimit, CapacitySettings
from sparkplane.operator.core.reconciler import WAITING_FOR_CAPACITY
from sparkplane.operator.core.settings import ReconcileSettings, merge
from sparkplane.operator.kinds.app_adapter import AppAdapter, creates_driver
from sparkplane.operator.kinds.connect_io import CONNECT, ConnectAdapter
from sparkplane.operator.kinds.kubeflow_io import KUBEFLOW_APP, KubeflowAdapter
from sparkplane.operator.runtime.capacity import CapacityGate, retry_after
from sparkplane.operator.runtime.workqueue import WorkQueue
from tests.unit.operator.opfixtures import Walk, at, driver, make_cr
from tests.unit.operator.test_kubeflow import kf_app
from tests.unit.operator.test_kubeflow_connect import connect_cr

SMALL = CapacitySettings(initial=4, minimum=2, maximum=6, cooldown_seconds=5.0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- the pure limit -------------------------------------------------------------------------
def test_limit_admits_below_it_and_holds_at_it() -> None:
    limit = AimdLimit(SMALL)
    assert limit.admit(3, 0.0).admitted
    held = limit.admit(4, 0.0)
    assert not held.admitted and held.reason == FULL and "4 drivers" in held.detail


def test_limit_grows_additively_only_while_used_and_up_to_its_maximum() -> None:
    limit = AimdLimit(SMALL)
    limit.on_scheduled(pending=0)  # an idle limit proves nothing
    assert limit.whole == 4
    for _ in range(10):
        limit.on_scheduled(pending=limit.whole)
    assert limit.whole == 6


def test_latency_above_target_shrinks_multiplicatively_once_per_cooldown_to_initial() -> None:
    limit = AimdLimit(CapacitySettings(initial=20, target_latency_seconds=1.0, cooldown_seconds=5))
    for _ in range(20):
        limit.on_scheduled(pending=limit.whole)  # fast API: grown to 40
    assert limit.whole == 40
    limit.on_latency(3.0, now=0.0)
    assert limit.whole == 30  # x 0.75
    limit.on_latency(3.0, now=1.0)
    assert limit.whole == 30  # within the cooldown: no fresh evidence yet
    limit.on_latency(3.0, now=6.0)
    assert limit.whole == 22
    limit.on_scheduled(pending=22)  # slow API: no growth
    assert limit.whole == 22
    limit.on_latency(3.0, now=12.0)
    limit.on_latency(3.0, now=18.0)
    assert limit.whole == 20  # latency alone: never below the initial limit
    limit.on_throttled(429, None, now=19.0)
    assert limit.whole == 10  # the API server's own word goes lower


def test_watch_lag_above_target_shrinks_below_initial_and_stops_growth() -> None:
    settings = CapacitySettings(initial=20, minimum=2, target_watch_lag_seconds=3.0)
    limit = AimdLimit(settings)
    limit.on_watch_lag(1.0, now=0.0)  # delivered promptly: nothing changes, growth goes on
    limit.on_scheduled(pending=20)
    assert limit.whole == 21
    limit.on_watch_lag(30.0, now=1.0)  # the mean jumps over the target
    assert limit.watch_lag == pytest.approx(0.9 * 1.0 + 0.1 * 30.0)
    assert limit.whole == 15  # x 0.75
    limit.on_scheduled(pending=15)
    assert limit.whole == 15  # behind: no growth
    for i in range(20):  # the API server stays behind: down to the minimum, not to initial
        limit.on_watch_lag(30.0, now=10.0 + 3 * i)
    assert limit.whole == 2
    for i in range(60):  # caught up: the mean falls under the target, growth again
        limit.on_watch_lag(0.5, now=100.0 + i)
    assert limit.watch_lag < 3.0
    limit.on_scheduled(pending=2)
    assert limit.limit == pytest.approx(3.0)


def test_gate_times_its_own_writes_round_trip_through_the_watch() -> None:
    clock = iter([0.0, 12.0, 20.0, 21.0, 30.0]).__next__
    gate = CapacityGate(CapacitySettings(target_watch_lag_seconds=3.0), clock=clock)
    key = ("SparkApplication", "ns", "a")
    gate.wrote(key, 100)  # t=0
    gate.saw(key, 99)  # t=12: an older version (someone else's write): no sample
    assert gate.snapshot()["watch_lag_seconds"] == 0.0  # t=20 (snapshot reads the clock)
    gate.saw(key, 100)  # t=21: our write, back 21 s after the API server answered it
    assert gate.limiter.watch_lag == pytest.approx(21.0)
    assert gate.limiter.whole == 15  # behind: the limit shrank
    gate.saw(key, 100)  # t=30: the same version again (a relist): counted once
    assert gate.limiter.watch_lag == pytest.approx(21.0)


def test_throttling_halves_and_blocks_until_retry_after() -> None:
    limit = AimdLimit(CapacitySettings(initial=20))
    limit.on_throttled(429, retry_after=3.0, now=10.0)
    assert limit.whole == 10
    held = limit.admit(0, 12.0)
    assert not held.admitted and held.reason == THROTTLED and "429" in held.detail
    assert limit.admit(0, 13.0).admitted
    for _ in range(20):
        limit.on_throttled(503, None, now=20.0)
    assert limit.whole == 2  # never below the minimum


# -- the gate (the runtime's bookkeeping, no I/O) ---------------------------------------------
def pod(uid: str, node: str = "", phase: str = "Pending", role: str = "driver") -> dict[str, Any]:
    return {
        "metadata": {"uid": uid, "name": uid, "labels": {"spark-role": role}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_gate_counts_requested_and_unscheduled_drivers_and_keeps_arrival_order() -> None:
    clock = Clock()
    gate = CapacityGate(CapacitySettings(initial=2, minimum=2, maximum=2), clock)
    a, b, c, d = (("SparkApplication", "ns", n) for n in "abcd")
    assert gate.admit(a).admitted and gate.admit(b).admitted
    assert not gate.admit(c).admitted and not gate.admit(d).admitted
    assert gate.snapshot() == {
        "limit": 2.0,
        "in_flight": 2.0,
        "held": 2.0,
        "watch_lag_seconds": 0.0,
    }
    gate.on_pod("ADDED", pod("pa"), (a,))  # seen, not yet scheduled: still in flight
    assert gate.wake() == []
    gate.on_pod("MODIFIED", pod("pa", node="n1"), (a,))  # bound, not started: still in flight
    assert gate.wake() == []
    gate.on_pod("MODIFIED", pod("pa", node="n1", phase="Running"), (a,))  # started: a slot free
    assert gate.wake() == [c]  # the oldest held app, once per retry period
    assert gate.wake() == []
    assert not gate.admit(d).admitted  # d never overtakes c
    assert gate.admit(c).admitted
    gate.on_pod("ADDED", pod("pb", node="n1", phase="Running"), (b,))
    gate.on_pod("ADDED", pod("pc", node="n1", phase="Running"), (c,))
    executor = pod("pe", role="executor")  # executors never count
    gate.on_pod("ADDED", executor, (c,))
    assert gate.admit(d).admitted
    assert gate.snapshot()["held"] == 0.0


def test_gate_forgets_a_requested_driver_that_never_shows_up() -> None:
    clock = Clock()
    gate = CapacityGate(CapacitySettings(initial=2, minimum=2, maximum=2), clock)
    for name in "ab":
        assert gate.admit(("SparkApplication", "ns", name)).admitted
    assert not gate.admit(("SparkApplication", "ns", "c")).admitted
    clock.now += 61  # their creates failed: they stop counting
    assert gate.admit(("SparkApplication", "ns", "c")).admitted


def test_gate_reads_retry_after_from_a_429_status_and_off_admits_everything() -> None:
    clock = Clock()
    gate = CapacityGate(CapacitySettings(initial=10), clock)
    status = {"reason": "TooManyRequests", "details": {"retryAfterSeconds": 4}}
    exc = KubeError("throttled", code=429, status=status)
    assert retry_after(exc) == 4.0
    gate.on_request(0.01, exc)
    verdict = gate.admit(("SparkApplication", "ns", "a"))
    assert not verdict.admitted and verdict.reason == THROTTLED
    clock.now += 4
    assert gate.admit(("SparkApplication", "ns", "a")).admitted
    off = CapacityGate(CapacitySettings(enabled=False, initial=1, minimum=1), clock)
    assert all(off.admit(("SparkApplication", "ns", str(i))).admitted for i in range(5))


# -- the held decision (pure) ---------------------------------------------------------------
def test_a_held_app_stays_submitted_says_why_once_then_goes_on_when_admitted() -> None:
    walk = Walk(make_cr())
    first = walk.step(0, held=FULL)
    assert walk.state == "Submitted" and not first.actions and not creates_driver(first)
    message = walk.cr["status"]["currentState"]["message"]
    assert message == f"{WAITING_FOR_CAPACITY}: {FULL}"
    assert first.requeue_after == 30.0
    assert walk.step(5, held=FULL).status is None  # same words: no second write
    admitted = walk.step(10)
    assert creates_driver(admitted) and walk.state == "DriverRequested"
    assert walk.cr["status"]["stateTransitionHistory"]["0"]["message"] != message
    walk.step(20, driver(phase="Running", ready=True))
    assert "WaitingForCapacity" not in walk.cr["status"]["currentState"]["message"]


# -- every kind that creates a driver is gated, each under its own queue key ------------------
def test_kubeflows_apps_and_sessions_wait_for_capacity_under_their_own_keys() -> None:
    clock = Clock()
    gate = CapacityGate(CapacitySettings(initial=1, minimum=1, maximum=1), clock)

    def now() -> datetime:
        return at(0)

    apps = AppAdapter(None, ReconcileSettings(), now, capacity=gate)  # type: ignore[arg-type]
    kubeflow, connect = KubeflowAdapter(apps), ConnectAdapter(apps)
    first = kubeflow.decide(kf_app())
    assert creates_driver(first)  # the one slot
    held = connect.decide(connect_cr())
    assert not creates_driver(held) and held.status is not None
    internal = held.status["sparkplane"]["currentState"]["message"]
    assert internal.startswith(WAITING_FOR_CAPACITY)
    (condition,) = held.status["conditions"]  # what `kubectl describe sparkconnect` shows
    assert held.status["state"] == "NotReady" and internal in condition["message"]
    assert gate.snapshot()["held"] == 1.0
    gate.on_pod("ADDED", driver(phase="Running"), ((KUBEFLOW_APP, "ns1", "pi"),))
    clock.now += 60
    assert gate.wake() == [(CONNECT, "ns1", "pi")]  # the key the runner queues SparkConnects by
    assert creates_driver(connect.decide(connect_cr()))


# -- the urgent lane ------------------------------------------------------------------------
def test_urgent_keys_are_handed_out_first_and_a_normal_key_moves_up() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("new-1", "new-2", "running-1"):
        queue.add(key)
    queue.add("running-1", urgent=True)  # its pods changed: moves up
    queue.add("running-2", urgent=True)
    queue.add("running-2")  # already urgent: stays urgent, queued once
    assert len(queue) == 4 and queue.urgent() == 2
    got = [queue.get(timeout=0) for _ in range(4)]
    assert got == ["running-1", "running-2", "new-1", "new-2"]
    assert queue.get(timeout=0) is None


def test_an_urgent_add_while_processing_is_requeued_urgent() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.add("b")
    queue.add("a", urgent=True)  # while a is being processed
    queue.done("a")
    assert [queue.get(timeout=0), queue.get(timeout=0)] == ["a", "b"]


# -- settings -------------------------------------------------------------------------------
def test_capacity_settings_merge_from_flat_flags() -> None:
    settings = merge({"capacity_enabled": False, "capacity_maximum": 50.0}, {})
    assert settings.capacity == CapacitySettings(enabled=False, maximum=50.0)
    assert merge({}, {}).capacity == CapacitySettings()
    with pytest.raises(TypeError):
        merge({"capacity_nonsense": 1}, {})


def test_an_executor_change_waits_in_the_normal_lane_and_a_driver_change_is_urgent() -> None:
    from sparkplane.operator.runtime.runner import urgent_change

    def pod(role: str) -> dict[str, object]:
        return {"metadata": {"labels": {"spark-role": role}}}

    assert urgent_change("Pod", pod("driver"))
    assert not urgent_change("Pod", pod("executor"))
    assert urgent_change("Pod", {"metadata": {}})  # a pod of no role (a SparkCluster's)
    assert urgent_change("Workload", {"metadata": {"labels": {"spark-role": "executor"}}})
