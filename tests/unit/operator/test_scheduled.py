"""ScheduledSparkApplication: schedule times (injected clock), concurrency, history, suspend."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pydantic
import pytest

from sparkplane.operator.core.decision import CreateResources, DeleteResources
from sparkplane.operator.core.scheduled import Run, decide_schedule, next_after
from sparkplane.operator.core.scheduled_spec import ScheduledSparkApplicationSpec
from sparkplane.vocab import SCHEDULED_AT_ANNOTATION as SCHEDULED_AT
from sparkplane.vocab import SCHEDULED_BY_LABEL as SCHEDULE_LABEL
from sparkplane.vocab import format_time

T0 = datetime(2026, 3, 28, 23, 0, 30, tzinfo=UTC)
TEMPLATE = {
    "mainClass": "org.apache.spark.examples.SparkPi",
    "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
    "runtimeVersions": {"sparkVersion": "4.0.1"},
}


def scheduled(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sparkplane.io/v1alpha1",
        "kind": "ScheduledSparkApplication",
        "metadata": {
            "name": "nightly",
            "namespace": "ns1",
            "uid": "u-s",
            "creationTimestamp": format_time(T0),
        },
        "spec": {"schedule": "*/5 * * * *", "template": TEMPLATE, **spec},
    }


def spec_of(cr: dict[str, Any]) -> ScheduledSparkApplicationSpec:
    return ScheduledSparkApplicationSpec.model_validate(cr["spec"])


def creates(decision: Any) -> list[dict[str, Any]]:
    return [o for a in decision.actions if isinstance(a, CreateResources) for o in a.objects]


def deletes(decision: Any) -> list[str]:
    return [r[2] for a in decision.actions if isinstance(a, DeleteResources) for r in a.refs]


def test_cron_in_a_time_zone_across_daylight_saving() -> None:
    spec = spec_of(scheduled(schedule="30 2 * * *", timeZone="Europe/Paris"))
    # 29 March 2026: Paris skips 02:00-03:00; croniter runs the missing 02:30 at 03:00 local
    first = next_after(spec, T0, T0)
    assert first == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    second = next_after(spec, first, T0)
    assert second == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)  # 02:30 CEST
    utc = spec_of(scheduled(schedule="30 2 * * *"))
    assert next_after(utc, T0, T0) == datetime(2026, 3, 29, 2, 30, tzinfo=UTC)


def test_every_counts_from_creation() -> None:
    spec = spec_of(scheduled(schedule="@every 1m30s"))
    assert next_after(spec, T0, T0) == T0 + timedelta(seconds=90)
    assert next_after(spec, T0 + timedelta(seconds=100), T0) == T0 + timedelta(seconds=180)


def test_nothing_due_sets_next_run_and_requeues_for_it() -> None:
    d = decide_schedule(scheduled(), [], T0 + timedelta(minutes=1))
    assert not d.actions
    assert d.status is not None
    assert d.status["nextRun"] == "2026-03-28T23:05:00Z"
    assert d.status["scheduleState"] == "Scheduled"
    assert d.requeue_after == pytest.approx(210)  # 23:01:30 -> 23:05:00


def test_due_run_creates_one_deterministic_app_recorded_once_seen() -> None:
    cr = scheduled(runMetadata={"labels": {"team": "a"}})
    now = T0 + timedelta(minutes=12)  # 23:05 and 23:10 passed: only the newest runs
    d = decide_schedule(cr, [], now)
    (app,) = creates(d)
    at = datetime(2026, 3, 28, 23, 10, tzinfo=UTC)
    name = f"nightly-{int(at.timestamp())}"
    assert app["metadata"]["name"] == name
    assert app["metadata"]["labels"] == {"team": "a", SCHEDULE_LABEL: "nightly"}
    assert app["metadata"]["annotations"][SCHEDULED_AT] == "2026-03-28T23:10:00Z"
    assert app["metadata"]["ownerReferences"][0]["kind"] == "ScheduledSparkApplication"
    assert app["spec"] == TEMPLATE
    assert d.requeue_after == pytest.approx(1)  # back soon to record it
    # not seen yet (a crash, or the cache lags): the same run again, never a second one
    again = copy.deepcopy(cr)
    again["status"] = d.status
    (same,) = creates(decide_schedule(again, [], now + timedelta(seconds=1)))
    assert same["metadata"]["name"] == name
    # seen: recorded as the last run, nothing new until 23:15
    seen = decide_schedule(again, [Run(name, at, ("Submitted",))], now + timedelta(seconds=2))
    assert not creates(seen)
    assert seen.status is not None
    assert seen.status["lastRun"] == "2026-03-28T23:10:00Z"
    assert seen.status["lastRunName"] == name
    assert [t.dst for t in seen.transitions] == ["RunCreated"]


def run(name: str, minutes: int, *states: str) -> Run:
    return Run(name, T0 + timedelta(minutes=minutes), tuple(states))


ACTIVE = run("nightly-old", 0, "Submitted", "DriverRequested", "RunningHealthy")


@pytest.mark.parametrize(
    ("policy", "created", "deleted"),
    [("Allow", True, []), ("Forbid", False, []), ("Replace", True, ["nightly-old"])],
)
def test_concurrency_policy(policy: str, created: bool, deleted: list[str]) -> None:
    d = decide_schedule(scheduled(concurrencyPolicy=policy), [ACTIVE], T0 + timedelta(minutes=5))
    assert bool(creates(d)) is created
    assert deletes(d) == deleted
    assert d.status is not None
    if policy == "Forbid":
        assert d.status["lastRun"] == "2026-03-28T23:05:00Z"  # a skip is not replayed later


def test_history_limits_keep_the_newest_finished_runs() -> None:
    runs = [
        run("ok1", 1, "Submitted", "Succeeded", "ResourceReleased"),
        run("ok2", 2, "Submitted", "Succeeded", "ResourceReleased"),
        run("ok3", 3, "Submitted", "Succeeded", "TerminatedWithoutReleaseResources"),
        run("bad1", 1, "Submitted", "Failed", "ResourceReleased"),
        run("bad2", 2, "Submitted", "SchedulingFailure", "ResourceReleased"),
        ACTIVE,
    ]
    cr = scheduled(successfulRunHistoryLimit=2, failedRunHistoryLimit=0)
    d = decide_schedule(cr, runs, T0 + timedelta(minutes=4))
    assert sorted(deletes(d)) == ["bad1", "bad2", "ok1"]
    assert d.status is not None
    assert d.status["pastSuccessfulRunNames"] == ["ok3", "ok2"]
    assert d.status["pastFailedRunNames"] == []


def test_suspended_schedule_creates_nothing_and_does_not_replay() -> None:
    d = decide_schedule(scheduled(suspend=True), [], T0 + timedelta(minutes=30))
    assert not creates(d)
    assert d.status is not None
    assert d.status["lastRun"] == "2026-03-28T23:30:00Z"
    assert d.status["reason"] == "suspended"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("schedule", "every day", "is not a schedule"),
        ("schedule", "* * * * * *", "five cron fields"),
        ("schedule", "@every 0.5s", "whole number of seconds"),
        ("timeZone", "Mars/Olympus", "IANA time zone"),
        ("concurrencyPolicy", "Sometimes", "Allow"),
    ],
)
def test_invalid_spec_is_reported_in_status(field: str, value: str, message: str) -> None:
    cr = scheduled(**{field: value})
    with pytest.raises(pydantic.ValidationError, match=message):
        spec_of(cr)
    d = decide_schedule(cr, [], T0 + timedelta(hours=1))
    assert not d.actions
    assert d.status is not None
    assert d.status["scheduleState"] == "FailedValidation"
    assert field in d.status["reason"]


def test_the_example_is_a_valid_schedule() -> None:
    from pathlib import Path

    import yaml

    doc = yaml.safe_load((Path(__file__).parents[3] / "examples" / "scheduled-pi.yaml").read_text())
    spec = ScheduledSparkApplicationSpec.model_validate(doc["spec"])
    after = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    assert next_after(spec, after, after) == datetime(2026, 6, 2, 0, 30, tzinfo=UTC)  # CEST


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("@every 30s", 30), ("@every 1h30m", 5400), ("@every 2m", 120), ("*/5 * * * *", None)],
)
def test_every_reads_go_durations(text: str, seconds: int | None) -> None:
    from sparkplane.operator.core.scheduled_spec import every

    got = every(text)
    assert (got.total_seconds() if got else None) == seconds


KUBEFLOW_TEMPLATE = {
    "type": "Scala",
    "mode": "cluster",
    "image": "docker.io/sparkplane/spark:4.0.1",
    "mainClass": "org.apache.spark.examples.SparkPi",
    "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
    "sparkVersion": "4.0.1",
    "driver": {"cores": 1, "memory": "512m"},
    "executor": {"instances": 1, "cores": 1, "memory": "512m"},
}


def kubeflow_scheduled(**spec: Any) -> dict[str, Any]:
    cr = scheduled(**spec)
    cr["apiVersion"] = "sparkoperator.k8s.io/v1beta2"
    cr["spec"]["template"] = spec.get("template", KUBEFLOW_TEMPLATE)
    return cr


def test_kubeflows_schedule_makes_v1beta2_runs_and_reads_their_internal_states() -> None:
    cr = kubeflow_scheduled(successfulRunHistoryLimit=1)
    due = datetime(2026, 3, 28, 23, 5, tzinfo=UTC)
    [run] = creates(decide_schedule(cr, [], due + timedelta(seconds=1)))
    assert run["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert run["kind"] == "SparkApplication" and run["spec"] == KUBEFLOW_TEMPLATE
    assert run["metadata"]["labels"][SCHEDULE_LABEL] == "nightly"
    assert run["metadata"]["ownerReferences"][0]["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    # two finished runs, history limit 1: the older one is deleted, as a v1beta2 resource
    done = ("Submitted", "Succeeded", "ResourceReleased")
    old = Run("nightly-1", due - timedelta(minutes=5), done)
    new = Run("nightly-2", due, done)
    decision = decide_schedule(cr, [old, new], due + timedelta(minutes=1))
    [refs] = [a.refs for a in decision.actions if isinstance(a, DeleteResources)]
    assert refs == (("sparkoperator.k8s.io/v1beta2", "SparkApplication", "nightly-1"),)


def test_kubeflows_schedule_refuses_an_apache_template_by_field() -> None:
    cr = kubeflow_scheduled(template=TEMPLATE)  # Apache's fields, not v1beta2's
    decision = decide_schedule(cr, [], T0 + timedelta(minutes=10))
    assert decision.status is not None
    assert decision.status["scheduleState"] == "FailedValidation"
    assert "spec.template" in decision.status["reason"]
    assert not creates(decision)


def test_a_v1beta2_runs_states_come_from_its_internal_apache_status() -> None:
    from sparkplane.operator.core.scheduled_spec import KUBEFLOW_SCHEDULE
    from sparkplane.operator.kinds.scheduled_io import runs_of

    cr = kubeflow_scheduled()
    history = {
        "0": {"currentStateSummary": "Succeeded"},
        "1": {"currentStateSummary": "ResourceReleased"},
    }
    app = {
        "metadata": {
            "name": "nightly-1",
            "labels": {SCHEDULE_LABEL: "nightly"},
            "annotations": {SCHEDULED_AT: format_time(T0)},
            "ownerReferences": [{"uid": "u-s"}],
        },
        "status": {
            "applicationState": {"state": "COMPLETED"},
            "sparkplane": {"stateTransitionHistory": history},
        },
    }
    [run] = runs_of(cr, [app], KUBEFLOW_SCHEDULE)
    assert run.finished and run.succeeded
