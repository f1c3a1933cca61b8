"""The small pod/event readers the classifiers are built on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sparkplane.model.pods import (
    driver_container_status,
    event_time,
    events_about,
    finished_at,
)
from sparkplane.vocab import format_time, parse_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-03-01T10:00:00Z", datetime(2025, 3, 1, 10, tzinfo=UTC)),
        ("2025-03-01T10:00:00.250000Z", datetime(2025, 3, 1, 10, 0, 0, 250000, tzinfo=UTC)),
        ("2025-03-01T12:00:00+02:00", datetime(2025, 3, 1, 10, tzinfo=UTC)),
        ("", None),
        (None, None),
        ("yesterday", None),
    ],
)
def test_parse_time(text: str | None, expected: datetime | None) -> None:
    assert parse_time(text) == expected


def test_format_time_round_trips_in_utc() -> None:
    when = datetime(2025, 3, 1, 10, 0, 5, tzinfo=UTC)
    assert format_time(when) == "2025-03-01T10:00:05Z"
    assert parse_time(format_time(when)) == when


def test_driver_container_prefers_spark_name_then_first_spec_container() -> None:
    pod = {
        "spec": {"containers": [{"name": "main"}, {"name": "sidecar"}]},
        "status": {"containerStatuses": [{"name": "sidecar"}, {"name": "main"}]},
    }
    assert driver_container_status(pod) == {"name": "main"}
    assert driver_container_status(pod, "sidecar") == {"name": "sidecar"}
    pod["status"]["containerStatuses"].append({"name": "spark-kubernetes-driver"})
    assert driver_container_status(pod) == {"name": "spark-kubernetes-driver"}
    assert driver_container_status({"status": {}}) is None


def test_finished_at_uses_latest_container_then_ready_condition() -> None:
    pod = {
        "status": {
            "containerStatuses": [
                {"state": {"terminated": {"finishedAt": "2025-03-01T10:05:00Z"}}},
                {"state": {"terminated": {"finishedAt": "2025-03-01T10:06:00Z"}}},
            ]
        }
    }
    assert finished_at(pod) == datetime(2025, 3, 1, 10, 6, tzinfo=UTC)
    no_containers = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastTransitionTime": "2025-03-01T09:00:00Z",
                },
                {"type": "Ready", "status": "False", "lastTransitionTime": "2025-03-01T10:07:00Z"},
            ]
        }
    }
    assert finished_at(no_containers) == datetime(2025, 3, 1, 10, 7, tzinfo=UTC)
    assert finished_at({"status": {}}) is None


def test_event_time_reads_both_event_apis() -> None:
    assert event_time({"lastTimestamp": "2025-03-01T10:00:00Z"}) == datetime(
        2025, 3, 1, 10, tzinfo=UTC
    )
    series = {
        "series": {"lastObservedTime": "2025-03-01T11:00:00Z"},
        "eventTime": "2025-03-01T10:00:00Z",
    }
    assert event_time(series) == datetime(2025, 3, 1, 11, tzinfo=UTC)
    assert event_time({"metadata": {"creationTimestamp": "2025-03-01T09:00:00Z"}}) is not None


def test_events_about_filters_and_sorts_oldest_first() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "d", "namespace": "ns", "uid": "u1"}}
    late = {
        "involvedObject": {"kind": "Pod", "name": "d", "uid": "u1"},
        "lastTimestamp": "2025-03-01T10:02:00Z",
    }
    early = {
        "involvedObject": {"kind": "Pod", "name": "d"},
        "lastTimestamp": "2025-03-01T10:01:00Z",
    }
    other_ns = {"involvedObject": {"kind": "Pod", "name": "d", "namespace": "other"}}
    service = {"involvedObject": {"kind": "Service", "name": "d", "namespace": "ns"}}
    assert events_about([late, other_ns, early, service], pod) == [early, late]
