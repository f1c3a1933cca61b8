"""The SparkCluster failure rule: crash-looping master/worker pods fail the cluster, blips don't."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sparkplane.operator.core.cluster import decide_cluster
from sparkplane.operator.core.cluster_health import CRASH_RESTARTS, crash, failure
from sparkplane.operator.core.decision import CreateResources, DeleteResources
from sparkplane.operator.core.states import history_states

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def pod(
    role: str,
    name: str = "c-master-0",
    *,
    restarts: int = 0,
    exit_code: int | None = None,
    waiting: str | None = None,
    running: bool = False,
    ready: bool = False,
    phase: str = "Running",
) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if running:
        state["running"] = {"startedAt": "2026-01-01T00:00:00Z"}
    elif waiting:
        state["waiting"] = {"reason": waiting, "message": "back-off restarting"}
    last = (
        {"terminated": {"exitCode": exit_code, "reason": "Error"}} if exit_code is not None else {}
    )
    status = {"name": role, "ready": ready, "restartCount": restarts, "state": state}
    status["lastState"] = last
    return {"metadata": {"name": name}, "status": {"phase": phase, "containerStatuses": [status]}}


def test_a_crash_loop_is_a_failure_after_the_restarts() -> None:
    looping = pod("master", restarts=CRASH_RESTARTS, exit_code=1, waiting="CrashLoopBackOff")
    why = crash(looping, "master")
    assert why == "pod c-master-0: container master exited 1 (Error) and restarted 2 times"
    # one restart, a clean exit, a restarted container or a Ready one is not (yet) a failure
    assert (
        crash(pod("master", restarts=1, exit_code=1, waiting="CrashLoopBackOff"), "master") is None
    )
    assert (
        crash(pod("master", restarts=5, exit_code=0, waiting="CrashLoopBackOff"), "master") is None
    )
    assert crash(pod("master", restarts=5, exit_code=1, running=True), "master") is None
    assert crash(pod("master", restarts=5, exit_code=1, ready=True, running=True), "master") is None
    # another container's crash is not the daemon's
    assert crash(looping, "worker") is None


@pytest.mark.parametrize("reason", ["InvalidImageName", "ErrImageNeverPull"])
def test_an_image_that_can_never_be_had_is_a_failure_at_once(reason: str) -> None:
    assert reason in (crash(pod("worker", waiting=reason), "worker") or "")


def test_pending_pulling_and_failed_pods() -> None:
    assert crash(pod("worker", waiting="ContainerCreating"), "worker") is None
    assert crash(pod("worker", waiting="ImagePullBackOff"), "worker") is None  # may yet pull
    assert crash({"metadata": {"name": "p"}, "status": {"phase": "Pending"}}, "worker") is None
    evicted = {"metadata": {"name": "p"}, "status": {"phase": "Failed", "reason": "Evicted"}}
    assert crash(evicted, "worker") == "pod p failed: Evicted"


def test_workers_fail_the_cluster_only_below_min_workers() -> None:
    bad = pod("worker", "c-worker-1", restarts=3, exit_code=2, waiting="CrashLoopBackOff")
    good = pod("worker", "c-worker-0", ready=True, running=True)
    assert failure({"worker": [good, bad]}, workers_wanted=2, min_workers=1) is None
    why = failure({"worker": [good, bad]}, workers_wanted=2, min_workers=2)
    assert why is not None and why.startswith("1 of 2 worker(s) failed, fewer than minWorkers (2)")
    assert failure({"worker": [bad]}, workers_wanted=1, min_workers=0) is None
    master = pod("master", restarts=2, exit_code=1, waiting="CrashLoopBackOff")
    assert (failure({"master": [master]}, 0, 0) or "").startswith(
        "The master failed: pod c-master-0"
    )


def cluster(**tol: int) -> dict[str, Any]:
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.1"},
            "clusterTolerations": {"instanceConfig": tol},
        },
    }


LOOPING = pod("master", restarts=2, exit_code=1, waiting="CrashLoopBackOff")
READY = {"spec": {"replicas": 1}, "status": {"readyReplicas": 1}}


def test_a_master_that_never_starts_is_a_scheduling_failure_and_is_released() -> None:
    cr = cluster()
    d = decide_cluster(cr, {}, T0, "op")
    assert any(isinstance(a, CreateResources) for a in d.actions)
    cr["status"] = d.status
    sets = {"master": {"spec": {"replicas": 1}}, "worker": {"spec": {"replicas": 0}}}
    d = decide_cluster(cr, sets, T0 + timedelta(seconds=5), "op", pods={"master": [LOOPING]})
    assert d.status is not None
    assert history_states(d.status) == ["Submitted", "SchedulingFailure", "ResourceReleased"]
    (delete,) = [a for a in d.actions if isinstance(a, DeleteResources)]
    assert ("apps/v1", "StatefulSet", "c-master") in delete.refs
    messages = [h["message"] for h in d.status["stateTransitionHistory"].values()]
    assert (
        "Cluster failed to start: The master failed: pod c-master-0: container master"
        in (messages[1])
    )
    assert not any(isinstance(a, CreateResources) for a in d.actions)


def test_a_healthy_cluster_whose_master_breaks_fails_and_is_released() -> None:
    cr = cluster(initWorkers=1, minWorkers=1, maxWorkers=1)
    cr["status"] = decide_cluster(cr, {}, T0, "op").status
    d = decide_cluster(cr, {"master": READY, "worker": READY}, T0, "op", pods={})
    cr["status"] = d.status
    assert history_states(cr["status"]) == ["Submitted", "RunningHealthy"]
    # healthy pods change nothing
    ok = {"master": [pod("master", ready=True, running=True)]}
    assert decide_cluster(cr, {"master": READY, "worker": READY}, T0, "op", pods=ok).status is None
    d = decide_cluster(cr, {"master": READY, "worker": READY}, T0, "op", pods={"master": [LOOPING]})
    assert d.status is not None
    assert history_states(d.status)[-2:] == ["Failed", "ResourceReleased"]
    assert any(isinstance(a, DeleteResources) for a in d.actions)
    # a worker below minWorkers fails it the same way
    worker = pod("worker", "c-worker-0", restarts=4, exit_code=137, waiting="CrashLoopBackOff")
    d = decide_cluster(cr, {"master": READY, "worker": READY}, T0, "op", pods={"worker": [worker]})
    assert d.status is not None and "Failed" in history_states(d.status)
