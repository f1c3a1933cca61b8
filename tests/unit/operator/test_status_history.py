"""The Apache-style status history: append, restart, read back; never mutating the input."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sparkplane.operator.core.states import (
    AppStateSummary,
    ClusterStateSummary,
    IllegalTransition,
    append_state,
    current_summary,
    history_states,
    new_status,
    restart_status,
)

A = AppStateSummary
T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def walk(status: dict[str, Any], *states: AppStateSummary) -> dict[str, Any]:
    for i, state in enumerate(states, start=1):
        status = append_state(status, state, T0 + timedelta(seconds=i), f"entered {state}")
    return status


def test_new_status_is_submitted_attempt_zero() -> None:
    status = new_status(T0, "Spark application has been created.")
    assert status == {
        "currentState": {
            "currentStateSummary": "Submitted",
            "lastTransitionTime": "2025-03-01T10:00:00Z",
            "message": "Spark application has been created.",
        },
        "stateTransitionHistory": {
            "0": {
                "currentStateSummary": "Submitted",
                "lastTransitionTime": "2025-03-01T10:00:00Z",
                "message": "Spark application has been created.",
            }
        },
        "currentAttemptSummary": {
            "attemptInfo": {
                "id": 0,
                "restartCounter": 0,
                "failureRestartCounter": 0,
                "schedulingFailureRestartCounter": 0,
            }
        },
    }
    assert current_summary(status) is A.SUBMITTED


def test_success_path_history() -> None:
    status = walk(
        new_status(T0),
        A.DRIVER_REQUESTED,
        A.DRIVER_STARTED,
        A.DRIVER_READY,
        A.RUNNING_HEALTHY,
        A.SUCCEEDED,
        A.RESOURCE_RELEASED,
    )
    assert list(status["stateTransitionHistory"]) == ["0", "1", "2", "3", "4", "5", "6"]
    assert history_states(status) == [
        "Submitted",
        "DriverRequested",
        "DriverStarted",
        "DriverReady",
        "RunningHealthy",
        "Succeeded",
        "ResourceReleased",
    ]
    assert status["currentState"] == status["stateTransitionHistory"]["6"]
    assert status["currentState"]["lastTransitionTime"] == "2025-03-01T10:00:06Z"


def test_append_never_mutates_its_input() -> None:
    before = walk(new_status(T0), A.DRIVER_REQUESTED)
    snapshot = copy.deepcopy(before)
    after = append_state(before, A.DRIVER_STARTED, T0)
    assert before == snapshot
    after["stateTransitionHistory"]["2"]["message"] = "changed"
    assert after["currentState"]["message"] == ""  # history and current are separate copies


def test_append_refuses_an_illegal_transition() -> None:
    status = new_status(T0)
    with pytest.raises(IllegalTransition):
        append_state(status, A.RUNNING_HEALTHY, T0)
    with pytest.raises(IllegalTransition):
        append_state({}, A.DRIVER_REQUESTED, T0)


def test_stopping_state_keeps_last_observed_driver_status() -> None:
    driver_status = {"phase": "Failed", "reason": "Evicted", "message": "low on memory"}
    status = walk(new_status(T0), A.DRIVER_REQUESTED, A.DRIVER_STARTED)
    status = append_state(status, A.DRIVER_EVICTED, T0, "evicted", driver_status=driver_status)
    assert status["currentState"]["lastObservedDriverStatus"] == driver_status
    assert status["stateTransitionHistory"]["3"]["lastObservedDriverStatus"] == driver_status


def test_restart_moves_history_to_previous_attempt_and_continues_keys() -> None:
    failed = walk(new_status(T0), A.DRIVER_REQUESTED, A.DRIVER_START_TIMED_OUT)
    restarted = restart_status(failed, T0 + timedelta(minutes=1), "restarting")
    assert restarted["currentState"]["currentStateSummary"] == "ScheduledToRestart"
    assert list(restarted["stateTransitionHistory"]) == ["3"]
    previous = restarted["previousAttemptSummary"]
    assert previous["attemptInfo"]["id"] == 0
    assert list(previous["stateTransitionHistory"]) == ["0", "1", "2"]
    assert restarted["currentAttemptSummary"]["attemptInfo"] == {
        "id": 1,
        "restartCounter": 1,
        "failureRestartCounter": 1,
        "schedulingFailureRestartCounter": 0,
    }
    again = walk(restarted, A.DRIVER_REQUESTED)
    assert list(again["stateTransitionHistory"]) == ["3", "4"]
    assert history_states(again) == [
        "Submitted",
        "DriverRequested",
        "DriverStartTimedOut",
        "ScheduledToRestart",
        "DriverRequested",
    ]
    assert history_states(again, with_previous=False) == ["ScheduledToRestart", "DriverRequested"]
    assert "previousAttemptSummary" not in failed  # input untouched


def test_restart_counters_track_consecutive_failures() -> None:
    status = walk(new_status(T0), A.SCHEDULING_FAILURE)
    status = restart_status(status, T0)
    status = walk(status, A.SCHEDULING_FAILURE)
    status = restart_status(status, T0)
    assert status["currentAttemptSummary"]["attemptInfo"] == {
        "id": 2,
        "restartCounter": 2,
        "failureRestartCounter": 2,
        "schedulingFailureRestartCounter": 2,
    }
    status = walk(status, A.DRIVER_REQUESTED, A.DRIVER_STARTED, A.SUCCEEDED)
    status = restart_status(status, T0)  # restartPolicy Always: a success resets the streaks
    info = status["currentAttemptSummary"]["attemptInfo"]
    assert (info["id"], info["failureRestartCounter"], info["schedulingFailureRestartCounter"]) == (
        3,
        0,
        0,
    )


def test_restart_without_trim_keeps_one_history() -> None:
    failed = walk(new_status(T0), A.DRIVER_REQUESTED, A.FAILED)
    restarted = restart_status(failed, T0, trim_history=False)
    assert list(restarted["stateTransitionHistory"]) == ["0", "1", "2", "3"]
    assert "stateTransitionHistory" not in restarted["previousAttemptSummary"]


def test_restart_only_from_a_stopping_state() -> None:
    running = walk(new_status(T0), A.DRIVER_REQUESTED, A.DRIVER_STARTED)
    with pytest.raises(IllegalTransition):
        restart_status(running, T0)
    released = walk(new_status(T0), A.SCHEDULING_FAILURE, A.RESOURCE_RELEASED)
    with pytest.raises(IllegalTransition):
        restart_status(released, T0)


def test_cluster_status() -> None:
    status = new_status(T0, cluster=True)
    assert status["currentAttemptSummary"]["attemptInfo"] == {"id": 0, "restartCounter": 0}
    status = append_state(status, ClusterStateSummary.RUNNING_HEALTHY, T0)
    assert current_summary(status, cluster=True) is ClusterStateSummary.RUNNING_HEALTHY
    with pytest.raises(IllegalTransition):
        append_state(status, ClusterStateSummary.SCHEDULING_FAILURE, T0)


def test_current_summary_of_unknown_status() -> None:
    assert current_summary(None) is None
    assert current_summary({"currentState": {"currentStateSummary": "Hibernating"}}) is None
