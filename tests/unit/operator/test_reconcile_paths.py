"""``decide`` walked through every path of the SparkApplication state machine."""

from __future__ import annotations

from typing import Any

from sparkplane.model import AppPhase, Reason, classify_apache_cr
from sparkplane.operator.core.decision import (
    CreateResources,
    DeleteCustomResource,
    DeleteResources,
)
from sparkplane.operator.core.settings import Limits, ReconcileSettings
from sparkplane.operator.core.states import APP_MACHINE, AppStateSummary
from sparkplane.render.properties import load
from tests.unit.operator.opfixtures import UID, Walk, driver, executor, make_cr

A = AppStateSummary
NO_MIN_BACKOFF = ReconcileSettings(limits=Limits(min_restart_backoff_millis=0))


def creates(walk: Walk) -> CreateResources:
    found = [a for d in walk.decisions for a in d.actions if isinstance(a, CreateResources)]
    assert found, "no CreateResources action"
    return found[-1]


def deletes(decision: Any) -> list[DeleteResources]:
    return [a for a in decision.actions if isinstance(a, DeleteResources)]


def test_new_application_requests_a_driver_owned_by_the_cr() -> None:
    walk = Walk(make_cr())
    decision = walk.step(0)
    assert walk.states == ["Submitted", "DriverRequested"]
    action = creates(walk)
    names = {(o["kind"], o["metadata"]["name"]) for o in action.objects}
    assert names == {
        ("Pod", "pi-0-driver"),
        ("Service", "pi-0-driver-svc"),
        ("ConfigMap", "pi-0-spark-drv-conf-map"),
    }
    for obj in action.objects:
        meta = obj["metadata"]
        assert meta["namespace"] == "ns1"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "spark.apache.org/v1",
                "kind": "SparkApplication",
                "name": "pi",
                "uid": UID,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"]["spark.operator/name"] == "spark-kubernetes-operator"
        assert meta["labels"]["spark.operator/spark-app-name"] == "pi"
    pod = action.objects[-1]  # the driver pod is created last
    assert pod["kind"] == "Pod"
    assert pod["metadata"]["labels"]["spark-app-selector"] == "pi-0"
    cm = next(o for o in action.objects if o["kind"] == "ConfigMap")
    props = load(cm["data"]["spark.properties"])
    assert props["spark.kubernetes.namespace"] == "ns1"
    assert props["spark.app.id"] == "pi-0"
    assert props["spark.kubernetes.executor.label.spark.operator/spark-app-name"] == "pi"
    assert decision.requeue_after is not None  # the driver start timeout
    assert [t.dst for t in decision.transitions] == [A.SUBMITTED, A.DRIVER_REQUESTED]


def test_spark_app_name_is_left_unset_unless_the_user_sets_it() -> None:
    """Apache leaves ``spark.app.name`` unset (issue 27): the driver's ``spark-app-name`` label
    is Spark's default, ``spark`` (Apache's e2e asserts it); a name the user sets is kept."""
    for conf, name, label in (({}, None, "spark"), ({"spark.app.name": "My Pi"}, "My Pi", "my-pi")):
        walk = Walk(make_cr(conf=conf))
        walk.step(0)
        action = creates(walk)
        cm = next(o for o in action.objects if o["kind"] == "ConfigMap")
        assert load(cm["data"]["spark.properties"]).get("spark.app.name") == name
        pod = action.objects[-1]
        assert pod["metadata"]["labels"]["spark-app-name"] == label
        assert pod["metadata"]["labels"]["spark.operator/spark-app-name"] == "pi"


def test_repeated_create_uses_the_same_names() -> None:
    first = Walk(make_cr())
    first.step(0)
    again = Walk(make_cr())  # e.g. the operator died before writing the status
    again.step(5)
    assert (
        creates(first).objects[0]["metadata"]["name"]
        == creates(again).objects[0]["metadata"]["name"]
    )


def test_success_path_in_few_passes_with_history_and_release() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver())  # Running and Ready: three transitions in one pass
    assert walk.states[-3:] == ["DriverStarted", "DriverReady", "RunningHealthy"]
    ended = walk.step(5, driver(phase="Succeeded"))
    assert walk.state == "Succeeded" and not deletes(ended)  # the end is written alone first
    assert ended.requeue_after == 0.0  # and released at once, in the next pass
    decision = walk.step(5, driver(phase="Succeeded"))
    assert walk.states == [
        "Submitted",
        "DriverRequested",
        "DriverStarted",
        "DriverReady",
        "RunningHealthy",
        "Succeeded",
        "ResourceReleased",
    ]
    (delete,) = deletes(decision)
    assert ("v1", "Pod", "pi-0-driver") in delete.refs
    assert ("v1", "ConfigMap", "pi-0-spark-drv-conf-map") in delete.refs
    history = walk.cr["status"]["stateTransitionHistory"]
    succeeded = next(e for e in history.values() if e["currentStateSummary"] == "Succeeded")
    assert succeeded["lastObservedDriverStatus"]["phase"] == "Succeeded"
    state = classify_apache_cr(walk.cr)
    assert (state.phase, state.reason) == (AppPhase.SUCCEEDED, Reason.COMPLETED)
    assert walk.step(6).status is None  # terminal: nothing more to do


def test_driver_failure_is_failed_then_released() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver(phase="Pending", ready=False))
    walk.step(3, driver(phase="Failed"))
    walk.step(3, driver(phase="Failed"))
    assert walk.states[-3:] == ["DriverRequested", "Failed", "ResourceReleased"]
    assert classify_apache_cr(walk.cr).phase is AppPhase.FAILED


def test_driver_start_timeout_stops_the_driver_then_releases() -> None:
    walk = Walk(make_cr({"applicationTimeoutConfig": {"driverStartTimeoutMillis": 2000}}))
    walk.step(0)
    pending = driver(phase="Pending")
    decision = walk.step(1, pending)
    assert walk.state == "DriverRequested"
    assert decision.requeue_after == 1.0
    decision = walk.step(2.5, pending)
    assert walk.state == "DriverStartTimedOut"
    (delete,) = deletes(decision)
    assert delete.grace_period_seconds is None
    assert decision.requeue_after == 2.0  # terminationRequeuePeriodMillis default
    decision = walk.step(4, tombstones=(pending,))
    assert walk.states[-2:] == ["DriverStartTimedOut", "ResourceReleased"]
    assert classify_apache_cr(walk.cr).reason is Reason.TIMED_OUT


def test_force_termination_after_grace_period() -> None:
    timeouts = {"driverStartTimeoutMillis": 1000, "forceTerminationGracePeriodMillis": 3000}
    walk = Walk(make_cr({"applicationTimeoutConfig": timeouts}))
    walk.step(0)
    pending = driver(phase="Pending")
    walk.step(1.5, pending)
    assert walk.state == "DriverStartTimedOut"
    assert deletes(walk.step(3, pending))[0].grace_period_seconds is None
    assert deletes(walk.step(5, pending))[0].grace_period_seconds == 0


def test_driver_ready_timeout() -> None:
    walk = Walk(make_cr({"applicationTimeoutConfig": {"driverReadyTimeoutMillis": 1000}}))
    walk.step(0)
    walk.step(1, driver(ready=False))
    assert walk.state == "DriverStarted"
    walk.step(2.5, driver(ready=False))
    assert walk.states[-1] == "DriverReadyTimedOut"


def test_executor_thresholds_through_every_running_state() -> None:
    tol = {
        "instanceConfig": {"initExecutors": 2, "minExecutors": 1, "maxExecutors": 3},
        "applicationTimeoutConfig": {"executorStartTimeoutMillis": 10000},
    }
    walk = Walk(make_cr(tol))
    walk.step(0)
    walk.step(1, driver())
    assert walk.states[-2:] == ["DriverReady", "InitializedBelowThresholdExecutors"]
    walk.step(2, driver(), executor(1), executor(2, ready=False))
    assert walk.state == "InitializedBelowThresholdExecutors"
    walk.step(3, driver(), executor(1), executor(2))
    assert walk.state == "RunningWithPartialCapacity"
    walk.step(4, driver(), executor(1), executor(2), executor(3))
    assert walk.state == "RunningHealthy"
    walk.step(5, driver())
    assert walk.state == "RunningWithBelowThresholdExecutors"
    walk.step(6, driver(), executor(1), executor(2), executor(3))
    assert walk.state == "RunningHealthy"


def test_executors_of_another_driver_do_not_count() -> None:
    walk = Walk(make_cr({"instanceConfig": {"initExecutors": 1, "minExecutors": 1}}))
    walk.step(0)
    walk.step(1, driver(), executor(1, owner="someone-else"))
    assert walk.state == "InitializedBelowThresholdExecutors"


def test_executor_start_timeout() -> None:
    tol = {
        "instanceConfig": {"initExecutors": 2},
        "applicationTimeoutConfig": {"executorStartTimeoutMillis": 2000},
    }
    walk = Walk(make_cr(tol))
    walk.step(0)
    walk.step(1, driver())
    decision = walk.step(2, driver(), executor(1))
    assert decision.requeue_after == 1.0
    walk.step(3.5, driver(), executor(1))
    assert walk.states[-3:] == [
        "DriverReady",
        "InitializedBelowThresholdExecutors",
        "ExecutorsStartTimedOut",
    ]


def test_eviction_from_a_tombstone_is_driver_evicted() -> None:
    evicted = driver(
        conditions=[
            {"type": "Ready", "status": "False"},
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"},
        ]
    )
    walk = Walk(make_cr())
    walk.step(0)
    walk.step(1, driver())
    walk.step(2, tombstones=(evicted,))
    assert walk.states[-2:] == ["DriverEvicted", "ResourceReleased"]
    assert classify_apache_cr(walk.cr).reason is Reason.EVICTED


def test_missing_driver_is_checked_live_before_failing() -> None:
    walk = Walk(make_cr())
    walk.step(0)
    assert walk.step(1).check_driver is None  # just requested: the cache may lag
    walk.step(2, driver())
    decision = walk.step(3)  # running driver absent from the cache
    assert decision.check_driver == "pi-0-driver"
    assert decision.status is None
    walk.step(4, driver_absent=True)
    assert walk.states[-2:] == ["Failed", "ResourceReleased"]


def test_restart_on_failure_with_backoff_up_to_the_limit() -> None:
    restart = {"restartPolicy": "OnFailure", "maxRestartAttempts": 2, "restartBackoffMillis": 3000}
    walk = Walk(make_cr({"restartConfig": restart}))
    walk.step(0)
    for attempt in range(3):
        now = attempt * 100
        walk.step(now + 1, driver(attempt, uid=f"u{attempt}"))
        walk.step(now + 2, driver(attempt, phase="Failed", uid=f"u{attempt}"))
        decision = walk.step(now + 2, driver(attempt, phase="Failed", uid=f"u{attempt}"))
        if attempt == 2:
            break
        assert walk.state == "ScheduledToRestart"
        assert decision.requeue_after == 3.0
        info = walk.cr["status"]["currentAttemptSummary"]["attemptInfo"]
        assert info == {
            "id": attempt + 1,
            "restartCounter": attempt + 1,
            "failureRestartCounter": attempt + 1,
            "schedulingFailureRestartCounter": 0,
        }
        assert walk.step(now + 3).status is None  # still backing off
        walk.step(now + 6)
        assert walk.state == "DriverRequested"
        assert creates(walk).objects[-1]["metadata"]["name"] == f"pi-{attempt + 1}-driver"
    assert walk.states[-2:] == ["Failed", "ResourceReleased"]
    previous = walk.cr["status"]["previousAttemptSummary"]
    assert previous["attemptInfo"]["id"] == 1


def test_on_infrastructure_failure_restarts_only_infrastructure_failures() -> None:
    tol = {
        "restartConfig": {"restartPolicy": "OnInfrastructureFailure", "restartBackoffMillis": 0},
        "applicationTimeoutConfig": {"driverStartTimeoutMillis": 1000},
    }
    walk = Walk(make_cr(tol))
    walk.step(0)
    walk.step(2, tombstones=(driver(phase="Pending"),))
    assert walk.state == "ResourceReleased"  # Failed (deleted): not an infrastructure failure
    walk = Walk(make_cr(tol), NO_MIN_BACKOFF)
    walk.step(0)
    walk.step(2, driver(phase="Pending"))
    walk.step(3, tombstones=(driver(phase="Pending"),))
    assert walk.states[-3:] == ["DriverStartTimedOut", "ScheduledToRestart", "DriverRequested"]


def test_always_restarts_a_success_and_counter_reset() -> None:
    restart = {
        "restartPolicy": "Always",
        "maxRestartAttempts": 1,
        "restartBackoffMillis": 0,
        "restartCounterResetMillis": 10000,
    }
    walk = Walk(make_cr({"restartConfig": restart}), NO_MIN_BACKOFF)
    walk.step(0)
    walk.step(1, driver())
    walk.step(20, driver(phase="Succeeded"))  # ran 20 s >= 10 s: counters reset first
    walk.step(20, driver(phase="Succeeded"))
    assert walk.states[-3:] == ["Succeeded", "ScheduledToRestart", "DriverRequested"]
    info = walk.cr["status"]["currentAttemptSummary"]["attemptInfo"]
    assert (info["id"], info["restartCounter"]) == (1, 1)
    walk.step(21, driver(1, uid="b"))
    walk.step(22, driver(1, phase="Succeeded", uid="b"))  # short attempt: over the cap
    walk.step(22, driver(1, phase="Succeeded", uid="b"))
    assert walk.states[-2:] == ["Succeeded", "ResourceReleased"]


def test_retain_always_keeps_resources_then_retain_duration_deletes_them() -> None:
    tol = {"resourceRetainPolicy": "Always", "resourceRetainDurationMillis": 5000}
    walk = Walk(make_cr(tol))
    walk.step(0)
    done = driver(phase="Succeeded")
    decision = walk.step(1, done)
    assert walk.states[-2:] == ["Succeeded", "TerminatedWithoutReleaseResources"]
    assert not deletes(decision)
    assert decision.requeue_after == 5.0
    assert not deletes(walk.step(3, done))
    assert deletes(walk.step(7, done))
    # Apache's AppCleanUpStep appends ResourceReleased when the retention runs out (issue 27)
    assert walk.states[-3:] == [
        "Succeeded",
        "TerminatedWithoutReleaseResources",
        "ResourceReleased",
    ]
    assert (
        "exceeding the configured retain duration" in walk.cr["status"]["currentState"]["message"]
    )
    assert classify_apache_cr(walk.cr).phase is AppPhase.SUCCEEDED
    assert not deletes(walk.step(8)) and walk.states[-1] == "ResourceReleased"


def test_retain_duration_then_ttl_as_apaches_e2e() -> None:
    """Apache's resource-retain-duration e2e: retain 10 s, TTL 30 s. Released at 10 s after
    TerminatedWithoutReleaseResources, the CR deleted 30 s after it (not after the release)."""
    tol = {
        "resourceRetainPolicy": "Always",
        "resourceRetainDurationMillis": 10000,
        "ttlAfterStopMillis": 30000,
    }
    walk = Walk(make_cr(tol))
    walk.step(0)
    done = driver(phase="Succeeded")
    assert walk.step(1, done).requeue_after == 10.0
    decision = walk.step(11, done)
    assert deletes(decision) and walk.state == "ResourceReleased"
    assert decision.requeue_after == 20.0
    assert not [a for a in walk.step(30).actions if isinstance(a, DeleteCustomResource)]
    (gone,) = [a for a in walk.step(31.5).actions if isinstance(a, DeleteCustomResource)]
    assert gone.uid == UID


def test_retain_on_failure_keeps_only_failures() -> None:
    tol = {"resourceRetainPolicy": "OnFailure"}
    ok = Walk(make_cr(tol))
    ok.step(0)
    ok.step(1, driver(phase="Succeeded"))
    ok.step(1, driver(phase="Succeeded"))
    assert ok.state == "ResourceReleased"
    bad = Walk(make_cr(tol))
    bad.step(0)
    decision = bad.step(1, driver(phase="Failed"))
    assert bad.state == "TerminatedWithoutReleaseResources"
    assert not deletes(decision)


def test_ttl_after_stop_deletes_the_custom_resource() -> None:
    walk = Walk(make_cr({"ttlAfterStopMillis": 4000}))
    walk.step(0)
    walk.step(1, driver(phase="Succeeded"))
    decision = walk.step(1, driver(phase="Succeeded"))
    assert decision.requeue_after == 4.0
    assert not [a for a in walk.step(3).actions if isinstance(a, DeleteCustomResource)]
    (delete,) = [a for a in walk.step(5.5).actions if isinstance(a, DeleteCustomResource)]
    assert (delete.name, delete.uid) == ("pi", UID)


def test_invalid_spec_fails_and_create_rejection_is_scheduling_failure() -> None:
    walk = Walk(make_cr(deploymentMode="ClientMode"))
    walk.step(0)
    assert walk.states == ["Submitted", "Failed", "ResourceReleased"]
    walk = Walk(make_cr())
    walk.step(0, create_error="pods is forbidden: exceeded quota")
    assert walk.states == ["Submitted", "SchedulingFailure", "ResourceReleased"]
    assert classify_apache_cr(walk.cr).reason is Reason.SCHEDULING_FAILURE


def test_pod_template_spec_wins_over_template_file() -> None:
    template = {"metadata": {"annotations": {"from": "spec"}}, "spec": {}}
    conf = {"spark.kubernetes.driver.podTemplateFile": "/tmp/never-read.yaml"}
    walk = Walk(make_cr(conf=conf, driverSpec={"podTemplateSpec": template}))
    walk.step(0)
    pod = next(o for o in creates(walk).objects if o["kind"] == "Pod")
    assert pod["metadata"]["annotations"]["from"] == "spec"
    cm = next(o for o in creates(walk).objects if o["kind"] == "ConfigMap")
    assert "podTemplateFile=/tmp" not in cm["data"]["spark.properties"]


def test_template_file_used_when_loaded_else_rejected() -> None:
    conf = {"spark.kubernetes.driver.podTemplateFile": "/tmp/t.yaml"}
    loaded = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"from": "file"}}}
    walk = Walk(make_cr(conf=conf))
    walk.step(0, templates={"driver": loaded})
    pod = next(o for o in creates(walk).objects if o["kind"] == "Pod")
    assert pod["metadata"]["labels"]["from"] == "file"
    walk = Walk(make_cr(conf=conf))
    walk.step(0)
    assert walk.states[-2] == "Failed"
    assert "could not be read" in walk.cr["status"]["stateTransitionHistory"]["1"]["message"]


def test_every_decided_transition_is_in_the_table() -> None:
    walk = Walk(make_cr({"restartConfig": {"restartPolicy": "Always", "restartBackoffMillis": 0}}))
    walk.step(0)
    walk.step(1, driver())
    walk.step(2, driver(phase="Succeeded"))
    for decision in walk.decisions:
        for t in decision.transitions:
            if t.src is not None:
                assert t.dst in APP_MACHINE.allowed(A(t.src))
