"""``spec.suspend``: ``decide`` holds, releases and resumes; Kubeflow's suspend states; the
Events a suspend and a resume publish (reasons, folding)."""

from __future__ import annotations

import copy
from typing import Any

from sparkplane.operator.core.decision import CreateResources, DeleteResources, Transition
from sparkplane.operator.core.kubeflow_status import kubeflow_status
from sparkplane.operator.core.reconciler import RESUMED
from sparkplane.operator.core.states import SUSPEND_BY_SPEC, SUSPEND_REASON, AppStateSummary
from sparkplane.operator.runtime.actions import event_for, fold
from tests.unit.operator.opfixtures import Walk, at, driver, executor, make_cr

A = AppStateSummary


def suspend(walk: Walk, value: bool) -> None:
    walk.cr = copy.deepcopy(walk.cr)
    walk.cr["spec"]["suspend"] = value


def kinds(decision: Any, kind: type) -> list[Any]:
    return [a for a in decision.actions if isinstance(a, kind)]


def test_created_suspended_is_held_with_nothing_created() -> None:
    walk = Walk(make_cr(suspend=True))
    decision = walk.step(0)
    assert walk.states == ["Submitted", "Suspended"]
    assert decision.actions == ()
    current = walk.cr["status"]["currentState"]
    assert current[SUSPEND_REASON] == SUSPEND_BY_SPEC
    again = walk.step(60)
    assert again.status is None and again.actions == () and again.requeue_after is None
    assert fold(decision.transitions).dst == A.SUSPENDED  # type: ignore[union-attr]


def test_resume_is_a_new_attempt_without_backoff_or_counted_restart() -> None:
    walk = Walk(make_cr(suspend=True))
    walk.step(0)
    suspend(walk, False)
    decision = walk.step(5)
    assert walk.state == "DriverRequested"
    assert walk.states == ["Submitted", "Suspended", "ScheduledToRestart", "DriverRequested"]
    (create,) = kinds(decision, CreateResources)
    assert create.app_id == "pi-1"
    info = walk.cr["status"]["currentAttemptSummary"]["attemptInfo"]
    assert (info["id"], info["restartCounter"], info["failureRestartCounter"]) == (1, 0, 0)
    event = fold(decision.transitions)
    assert event is not None and event.reason == RESUMED


def test_suspending_a_running_app_releases_it_then_holds() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver(), executor(1))
    assert walk.state == "RunningHealthy"
    suspend(walk, True)
    decision = walk.step(10, driver(), executor(1))
    assert walk.state == "Suspended"
    (release,) = kinds(decision, DeleteResources)
    assert ("v1", "Pod", "pi-0-driver") in release.refs
    assert release.uids == (("pi-0-driver", "d-uid"),)
    # the driver still terminating in the cache is not released twice, nor failed
    terminating = driver()
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:11Z"
    held = walk.step(11, terminating)
    assert held.status is None and held.actions == ()
    # a driver a crash left alive is released again
    repaired = walk.step(12, driver())
    assert kinds(repaired, DeleteResources) and repaired.status is None


def test_suspend_in_a_stopping_or_terminal_state_changes_nothing() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver())
    walk.step(5, driver(phase="Succeeded"))
    assert walk.state == "Succeeded"  # stopping: its release is the next pass
    suspend(walk, True)
    assert walk.step(5, driver(phase="Succeeded")).status is not None
    assert walk.state == "ResourceReleased" and "Suspended" not in walk.states
    decision = walk.step(6)
    assert decision.status is None
    assert "Suspended" not in walk.states


def test_suspend_while_scheduled_to_restart_creates_nothing() -> None:
    walk = Walk(
        make_cr({"restartConfig": {"restartPolicy": "Always", "restartBackoffMillis": 60000}})
    )
    walk.step(0)
    walk.step(1, driver())
    walk.step(5, driver(phase="Failed"))
    walk.step(5, driver(phase="Failed"))
    assert walk.state == "ScheduledToRestart"
    suspend(walk, True)
    decision = walk.step(6)
    assert walk.state == "Suspended" and decision.actions == ()


def kubeflow_cr(suspend: bool) -> dict[str, Any]:
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": "ns1", "uid": "u1"},
        "spec": {"suspend": suspend},
    }


def test_kubeflow_suspend_states() -> None:
    walk = Walk(make_cr(suspend=True))
    walk.step(0)
    internal = walk.cr["status"]
    state = kubeflow_status(kubeflow_cr(True), internal)["applicationState"]["state"]
    assert state == "SUSPENDED"
    # suspend cleared, not yet reconciled: RESUMING
    state = kubeflow_status(kubeflow_cr(False), internal)["applicationState"]["state"]
    assert state == "RESUMING"
    # running with suspend set, not yet reconciled: SUSPENDING
    run = Walk(make_cr())
    run.step(0)
    run.step(1, driver())
    state = kubeflow_status(kubeflow_cr(True), run.cr["status"])["applicationState"]["state"]
    assert state == "SUSPENDING"


def test_event_reason_and_type() -> None:
    obj = make_cr()
    event = event_for(obj, Transition(A.RUNNING_HEALTHY, A.SUSPENDED, "m", at(0)), "op", "i")
    assert (event["reason"], event["type"]) == ("Suspended", "Normal")
    named = Transition(A.SUSPENDED, A.SCHEDULED_TO_RESTART, "m", at(0), reason=RESUMED)
    assert event_for(obj, named, "op", "i")["reason"] == "Resumed"


def test_spark_cluster_suspend_releases_and_resume_recreates() -> None:
    from sparkplane.operator.core.cluster import decide_cluster

    cr: dict[str, Any] = {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1"},
        "spec": {"runtimeVersions": {"sparkVersion": "4.0.1"}, "suspend": True},
    }
    held = decide_cluster(cr, {}, at(0), "op")
    assert held.actions == () and held.status is not None
    assert held.status["currentState"]["currentStateSummary"] == "Suspended"
    assert held.status["currentState"][SUSPEND_REASON] == SUSPEND_BY_SPEC
    ready = {"metadata": {}, "spec": {"replicas": 1}, "status": {"readyReplicas": 1}}
    running = decide_cluster({**cr, "spec": {**cr["spec"], "suspend": False}}, {}, at(1), "op")
    assert running.creates  # resumed: Submitted, the objects created again
    cr = {**cr, "status": running.status}
    healthy = decide_cluster(
        {**cr, "spec": {**cr["spec"], "suspend": False}},
        {"master": ready, "worker": ready},
        at(2),
        "op",
    )
    cr = {**cr, "status": healthy.status}
    assert cr["status"]["currentState"]["currentStateSummary"] == "RunningHealthy"
    suspended = decide_cluster(cr, {"master": ready, "worker": ready}, at(3), "op")
    (release,) = kinds(suspended, DeleteResources)
    assert ("apps/v1", "StatefulSet", "c-master") in release.refs
    assert all(kind != "Secret" for _, kind, _ in release.refs)
    assert suspended.status is not None
    assert suspended.status["currentState"]["currentStateSummary"] == "Suspended"


def test_event_key_is_object_reason_message_and_type() -> None:
    from sparkplane.operator.runtime.actions import event_key

    obj = make_cr()
    first = event_for(obj, Transition(A.RUNNING_HEALTHY, A.SUSPENDED, "m", at(0)), "op", "i")
    later = event_for(obj, Transition(A.DRIVER_READY, A.SUSPENDED, "m", at(60)), "op", "j")
    assert event_key(first) == event_key(later)  # a repeat: counted, not posted again
    other = event_for(obj, Transition(A.RUNNING_HEALTHY, A.SUSPENDED, "n", at(0)), "op", "i")
    assert event_key(other) != event_key(first)
