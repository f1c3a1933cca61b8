"""The idle clock and limits of Spark Connect sessions (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sparkplane.model.session import (
    SessionLimit,
    beyond_limit,
    expiry,
    last_activity,
    limit,
    session_limit,
    spark_time,
)
from sparkplane.vocab import IDLE_TIMEOUT_KEY, MAX_LIFETIME_KEY, SESSION_LABEL, SESSION_QUOTA_KEY

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
START = NOW - timedelta(hours=1)


def pod(
    idle: str | None = "600", lifetime: str | None = "7200", age: timedelta = timedelta(hours=1)
) -> dict:
    annotations = {k: v for k, v in ((IDLE_TIMEOUT_KEY, idle), (MAX_LIFETIME_KEY, lifetime)) if v}
    created = (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"creationTimestamp": created, "annotations": annotations}}


def test_spark_rest_times() -> None:
    assert spark_time("2026-11-28T11:59:30.250GMT") == NOW - timedelta(seconds=29.75)
    assert spark_time("not a time") is None
    assert spark_time(None) is None


def test_last_activity_is_the_newest_job_or_query_end() -> None:
    jobs = [
        {
            "status": "SUCCEEDED",
            "submissionTime": "2026-11-28T11:10:00.000GMT",
            "completionTime": "2026-11-28T11:20:00.000GMT",
        }
    ]
    sql = [
        {"status": "COMPLETED", "submissionTime": "2026-11-28T11:30:00.000GMT", "duration": 60000}
    ]
    assert last_activity(START, jobs, sql, NOW) == datetime(2026, 11, 28, 11, 31, tzinfo=UTC)
    assert last_activity(START, [], [], NOW) == START  # nothing ran: idle since the start


def test_anything_running_is_activity_now() -> None:
    assert last_activity(START, [{"status": "RUNNING"}], [], NOW) == NOW
    assert last_activity(START, [], [{"status": "RUNNING"}], NOW) == NOW


def test_limits_from_annotations() -> None:
    assert limit(pod(), IDLE_TIMEOUT_KEY) == timedelta(minutes=10)
    assert limit(pod(idle="0"), IDLE_TIMEOUT_KEY) is None  # 0: none
    assert limit(pod(idle="soon"), IDLE_TIMEOUT_KEY) is None
    assert limit(pod(idle=None), IDLE_TIMEOUT_KEY) is None


def test_expiry_idle_lifetime_or_neither() -> None:
    assert not expiry(pod(), NOW, timedelta(minutes=5)).expired
    idle = expiry(pod(), NOW, timedelta(minutes=10))
    assert idle.expired and "idle" in idle.reason
    old = expiry(pod(age=timedelta(hours=2)), NOW, timedelta(0))
    assert old.expired and "max lifetime" in old.reason
    assert not expiry(pod(), NOW, None).expired  # idle time unknown: never on a guess
    assert not expiry(pod(idle=None, lifetime=None), NOW, timedelta(days=9)).expired


def quota(name: str, hard: dict[str, str]) -> dict:
    return {"metadata": {"name": name}, "spec": {"hard": hard}}


def test_the_tightest_session_quota_is_the_cap() -> None:
    quotas = [
        quota("compute", {"requests.cpu": "8"}),
        quota("team", {SESSION_QUOTA_KEY: "3", "pods": "40"}),
        quota("tight", {SESSION_QUOTA_KEY: "2"}),
        quota("odd", {SESSION_QUOTA_KEY: "1k"}),  # not a whole number: ignored
    ]
    assert session_limit(quotas) == SessionLimit(2, "tight")
    assert session_limit(quotas[:1]) is None
    assert session_limit([]) is None


def driver(name: str, age_s: int, phase: str = "Running", *, deleting: bool = False) -> dict:
    meta = {
        "name": name,
        "labels": {SESSION_LABEL: name},
        "creationTimestamp": (NOW - timedelta(seconds=age_s)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if deleting:
        meta["deletionTimestamp"] = meta["creationTimestamp"]
    return {"metadata": meta, "status": {"phase": phase}}


def test_beyond_the_cap_are_the_newest_live_sessions() -> None:
    drivers = [
        driver("new", 10),
        driver("old", 300),
        driver("ended", 200, "Succeeded"),
        driver("going", 250, deleting=True),
        driver("mid", 100, "Pending"),
        {"metadata": {"name": "batch", "labels": {}}, "status": {"phase": "Running"}},
    ]
    names = [p["metadata"]["name"] for p in beyond_limit(drivers, SessionLimit(1, "q"))]
    assert names == ["mid", "new"]
    assert beyond_limit(drivers, SessionLimit(3, "q")) == []
    assert [p["metadata"]["name"] for p in beyond_limit(drivers, SessionLimit(0, "q"))] == [
        "old",
        "mid",
        "new",
    ]
