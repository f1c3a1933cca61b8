"""The TTL clean-up policy for finished native drivers and the --older-than duration syntax."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.model.ttl import (
    TTL_KEY,
    app_ttl,
    format_duration,
    parse_duration,
    plan_cleanup,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def driver(
    name: str,
    phase: str = "Succeeded",
    finished: str | None = "2025-03-01T10:00:00Z",
    *,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    **metadata: Any,
) -> dict[str, Any]:
    state = {"terminated": {"exitCode": 0, "finishedAt": finished}} if finished else {}
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "spark-jobs",
            "labels": {"spark-role": "driver", **(labels or {})},
            "annotations": annotations or {},
            **metadata,
        },
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "spark-kubernetes-driver", "state": state}],
        },
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        (" 0s ", timedelta(0)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "90", "1.5h", "2 hours", "30m1h", "-5m", "1w", "h"])
def test_parse_duration_rejects_with_field_and_hint(text: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_duration(text, field="--older-than")
    problem = info.value.problems[0]
    assert problem.path == "--older-than"
    assert "1h30m" in problem.hint


def test_bare_number_says_unit_is_missing() -> None:
    with pytest.raises(ValidationError, match="unit is missing"):
        parse_duration("300")


@pytest.mark.parametrize("text", ["1m30s", "15m", "2h", "1d", "1h30m", "1d2h3m4s", "0s"])
def test_format_duration_round_trips(text: str) -> None:
    assert format_duration(parse_duration(text)) == text


def test_format_duration_normalises() -> None:
    assert format_duration(parse_duration("90s")) == "1m30s"
    assert format_duration(timedelta(seconds=-5)) == "0s"


def test_app_ttl_annotation_wins_over_label() -> None:
    pod = driver("a", annotations={TTL_KEY: "60"}, labels={TTL_KEY: "7200"})
    assert app_ttl(pod) == timedelta(seconds=60)
    assert app_ttl(driver("b", labels={TTL_KEY: "7200"})) == timedelta(hours=2)
    assert app_ttl(driver("c")) is None


def test_app_ttl_rejects_non_integer() -> None:
    with pytest.raises(ValidationError) as info:
        app_ttl(driver("a", annotations={TTL_KEY: "1h"}))
    assert info.value.problems[0].path == f"metadata.annotations.{TTL_KEY}"


def test_plan_deletes_only_expired_finished_drivers() -> None:
    pods = [
        driver("old-success"),  # finished 2h ago, default 1h -> delete
        driver("old-failure", "Failed", "2025-03-01T10:30:00Z"),  # 1h30m ago -> delete
        driver("recent", finished="2025-03-01T11:30:00Z"),  # 30m ago -> keep
        driver("running", "Running", None),
        driver("keep-longer", annotations={TTL_KEY: "86400"}),  # per-app 1d -> keep
        driver("delete-now", finished="2025-03-01T11:59:00Z", annotations={TTL_KEY: "0"}),
    ]
    decisions = {d.name: d for d in plan_cleanup(pods, NOW, timedelta(hours=1))}
    assert {n for n, d in decisions.items() if d.delete} == {
        "old-success",
        "old-failure",
        "delete-now",
    }
    assert decisions["old-success"].reason == "finished 2h ago, past its default TTL 1h"
    assert decisions["delete-now"].reason.startswith("finished 1m ago, past its per-app TTL")
    assert decisions["recent"].reason == "default TTL 1h not reached (30m left)"
    assert decisions["recent"].expires_at == datetime(2025, 3, 1, 12, 30, tzinfo=UTC)
    assert decisions["running"].reason == "not finished (phase Running)"
    assert "per-app TTL 1d" in decisions["keep-longer"].reason


def test_without_default_only_per_app_ttls_apply() -> None:
    pods = [driver("no-ttl"), driver("ttl", annotations={TTL_KEY: "3600"})]
    decisions = plan_cleanup(pods, NOW, None)
    assert [(d.name, d.delete) for d in decisions] == [("no-ttl", False), ("ttl", True)]
    assert "no TTL" in decisions[0].reason


def test_unreadable_ttl_or_unknown_finish_keeps_the_pod() -> None:
    pods = [
        driver("bad", annotations={TTL_KEY: "soon"}),
        driver("no-time", finished=None),
        driver("going", deletionTimestamp="2025-03-01T11:59:00Z"),
    ]
    decisions = plan_cleanup(pods, NOW, timedelta(0))
    assert not any(d.delete for d in decisions)
    assert [d.reason.split(":")[0] for d in decisions] == [
        "unreadable TTL",
        "finish time unknown",
        "already being deleted",
    ]


def test_finish_time_falls_back_to_ready_condition() -> None:
    pod = driver("evicted", "Failed", None)
    pod["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2025-03-01T09:00:00Z"}
    ]
    [decision] = plan_cleanup([pod], NOW, timedelta(hours=2))
    assert decision.delete
    assert decision.finished_at == datetime(2025, 3, 1, 9, tzinfo=UTC)


@pytest.mark.parametrize("text", ["99999999999d", "36501d", "876001h", "9" * 5000 + "s"])
def test_parse_duration_refuses_what_overflows_a_date(text: str) -> None:
    """``--ttl 99999999999d`` was an OverflowError (exit 1); now one message naming the field."""
    with pytest.raises(ValidationError) as info:
        parse_duration(text, field="--ttl")
    problem = info.value.problems[0]
    assert problem.path == "--ttl" and "longer than 36500d (100 years)" in problem.message
    assert len(str(info.value)) < 300  # a 5000-digit value is shown by its start
    assert parse_duration("36500d") == timedelta(days=36500)


@pytest.mark.parametrize("value", ["9" * 5000, "99999999999999", "٣٠"])
def test_an_absurd_per_app_ttl_keeps_the_pod(value: str) -> None:
    pod = driver("a", annotations={TTL_KEY: value})
    with pytest.raises(ValidationError, match="not a whole number of seconds up to"):
        app_ttl(pod)
    (decision,) = plan_cleanup([pod], NOW, None)
    assert not decision.delete and decision.reason.startswith("unreadable TTL")
