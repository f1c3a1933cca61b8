"""The operator's bounds (issue 26, finding 6): refused with the field, the limit and the setting
named, or clamped with the restart message saying so."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sparkplane.operator.core import bounds
from sparkplane.operator.core.cluster import decide_cluster
from sparkplane.operator.core.decision import CreateResources
from sparkplane.operator.core.scheduled import decide_schedule
from sparkplane.operator.core.settings import Limits, ReconcileSettings
from tests.unit.operator.opfixtures import UID, Walk, at, driver, make_cr


def creates_of(walk: Walk) -> list[CreateResources]:
    return [a for d in walk.decisions for a in d.actions if isinstance(a, CreateResources)]


LIMITS = Limits(
    min_schedule_seconds=60,
    min_restart_backoff_millis=1000,
    max_restart_attempts=5,
    max_workers=10,
    max_executors=50,
)


def test_executor_counts_above_the_limit_are_each_named() -> None:
    conf = {
        "spark.executor.instances": "51",
        "spark.dynamicAllocation.maxExecutors": "9" * 5000,  # never int()-parsed whole
        "spark.dynamicAllocation.minExecutors": "50",
    }
    problems = bounds.executor_problems(conf, LIMITS)
    assert [p.path for p in problems] == [
        "spec.sparkConf[spark.executor.instances]",
        "spec.sparkConf[spark.dynamicAllocation.maxExecutors]",
    ]
    assert "51 executors exceed the operator's limit of 50" in str(problems[0])
    assert "(5000 digits)" in str(problems[1])
    assert "--max-executors (Helm value limits.maxExecutors)" in str(problems[0])


def test_dynamic_allocation_without_a_maximum_gets_the_limit() -> None:
    on = {"spark.dynamicAllocation.enabled": "true"}
    assert bounds.with_executor_cap(on, LIMITS)["spark.dynamicAllocation.maxExecutors"] == "50"
    given = {**on, "spark.dynamicAllocation.maxExecutors": "7"}
    assert bounds.with_executor_cap(given, LIMITS) == given
    assert bounds.with_executor_cap({}, LIMITS) == {}


def test_an_app_asking_for_too_many_executors_fails_before_anything_is_created() -> None:
    cr = make_cr(conf={"spark.executor.instances": "100000"})
    walk = Walk(cr, ReconcileSettings(limits=LIMITS))
    decision = walk.step(0)
    assert walk.states == ["Submitted", "Failed", "ResourceReleased"]
    assert not [a for a in decision.actions if isinstance(a, CreateResources)]
    failed = next(t for t in decision.transitions if t.dst == "Failed")
    assert failed.warning  # the Warning Event carries it
    assert "spec.sparkConf[spark.executor.instances]" in failed.message
    assert "100000 executors exceed the operator's limit of 50" in failed.message
    assert "--max-executors" in failed.message


def test_dynamic_allocation_cap_reaches_the_driver_conf() -> None:
    walk = Walk(make_cr(conf={"spark.dynamicAllocation.enabled": "true"}),
                ReconcileSettings(limits=LIMITS))  # fmt: skip
    walk.step(0)
    (config_map,) = [o for o in creates_of(walk)[-1].objects if o["kind"] == "ConfigMap"]
    assert "spark.dynamicAllocation.maxExecutors=50" in config_map["data"]["spark.properties"]


def test_restart_backoff_is_raised_to_the_minimum_and_says_so() -> None:
    restart = {"restartPolicy": "Always", "maxRestartAttempts": 3, "restartBackoffMillis": 0}
    walk = Walk(make_cr({"restartConfig": restart}), ReconcileSettings(limits=LIMITS))
    walk.step(0)
    walk.step(1, driver())
    walk.step(2, driver(phase="Failed"))  # the end is written alone first
    decision = walk.step(2, driver(phase="Failed"))
    assert walk.state == "ScheduledToRestart"
    assert decision.requeue_after == 1.0
    (note,) = [t.message for t in decision.transitions if t.dst == "ScheduledToRestart"]
    assert "in 1000 ms" in note and "restartBackoffMillis 0 raised" in note
    assert "--min-restart-backoff-millis" in note
    assert walk.step(2.5).status is None  # still backing off
    walk.step(3)
    assert walk.state == "DriverRequested"


def test_restarts_stop_at_the_operator_cap_and_say_so() -> None:
    restart = {"restartPolicy": "Always", "maxRestartAttempts": 1000, "restartBackoffMillis": 0}
    walk = Walk(make_cr({"restartConfig": restart}), ReconcileSettings(limits=LIMITS))
    walk.step(0)
    now = 0.0
    for attempt in range(10):
        walk.step(now + 1, driver(attempt, uid=f"u{attempt}"))
        walk.step(now + 2, driver(attempt, phase="Failed", uid=f"u{attempt}"))
        now += 10
        walk.step(now)
        if walk.state == "ResourceReleased":
            break
    info = walk.cr["status"]["currentAttemptSummary"]["attemptInfo"]
    assert info["id"] == LIMITS.max_restart_attempts  # attempts 0..5: five restarts
    last = walk.cr["status"]["currentState"]["message"]
    assert "maxRestartAttempts 1000 is above the operator's limit of 5" in last
    assert "--max-restart-attempts" in last


def cluster(**tol: int) -> dict[str, Any]:
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkCluster",
        "metadata": {"name": "big", "namespace": "ns1", "uid": UID},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.1"},
            "clusterTolerations": {"instanceConfig": tol},
        },
    }


def test_a_cluster_with_too_many_workers_is_refused_before_anything_is_created() -> None:
    cr = cluster(initWorkers=100000, minWorkers=1, maxWorkers=100000)
    d = decide_cluster(cr, {}, at(0), "op", limits=LIMITS)
    assert not d.creates and not [a for a in d.actions if isinstance(a, CreateResources)]
    assert [t.dst for t in d.transitions] == ["Submitted", "SchedulingFailure", "ResourceReleased"]
    failure = d.transitions[1]
    assert failure.warning
    assert "initWorkers: 100000 workers exceed the operator's limit of 10" in failure.message
    assert "maxWorkers: 100000" in failure.message and "--max-workers" in failure.message
    ok = decide_cluster(cluster(initWorkers=10, minWorkers=10, maxWorkers=10), {}, at(0), "op",
                        limits=LIMITS)  # fmt: skip
    assert ok.creates


def schedule(expr: str) -> dict[str, Any]:
    return {
        "apiVersion": "sparkplane.io/v1alpha1",
        "kind": "ScheduledSparkApplication",
        "metadata": {
            "name": "s",
            "namespace": "ns1",
            "uid": UID,
            "creationTimestamp": "2025-03-01T10:00:00Z",
        },
        "spec": {"schedule": expr, "template": make_cr()["spec"]},
    }


def test_a_schedule_firing_too_often_is_refused_with_an_event() -> None:
    d = decide_schedule(schedule("@every 1s"), [], at(5), LIMITS)
    assert d.status is not None and d.status["scheduleState"] == "FailedValidation"
    assert (
        "runs every 1s, more often than the operator's minimum interval of 60s"
        in (d.status["reason"])
    )
    assert "--min-schedule-seconds" in d.status["reason"]
    assert not d.actions
    (event,) = d.transitions
    assert event.warning and event.dst == "FailedValidation"
    again = decide_schedule({**schedule("@every 1s"), "status": d.status}, [], at(9), LIMITS)
    assert again.status is None and not again.transitions  # one Event, not one per pass


def test_schedule_intervals() -> None:
    assert bounds.schedule_problem("* * * * *", "UTC", None, LIMITS) is None
    assert bounds.schedule_problem("@every 60s", "UTC", timedelta(seconds=60), LIMITS) is None
    strict = Limits(min_schedule_seconds=600)
    assert bounds.schedule_problem("*/5 * * * *", "UTC", None, strict)
    assert bounds.schedule_problem("0,1 * * * *", "UTC", None, strict)  # 60 s once an hour
    assert bounds.schedule_problem("@hourly", "Europe/Paris", None, strict) is None
