"""classify_apache_cr and classify_kubeflow_cr: operator states onto the shared AppState."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sparkplane.model import (
    AppPhase,
    Reason,
    classify_apache_cr,
    classify_kubeflow_cr,
    is_finished,
)
from sparkplane.model.crstate import APACHE_STATES, APACHE_TERMINATED, KUBEFLOW_STATES
from sparkplane.operator.core.states import AppStateSummary


def entry(summary: str, minute: int, message: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "currentStateSummary": summary,
        "lastTransitionTime": f"2025-03-01T10:{minute:02d}:00Z",
        "message": message,
        **extra,
    }


def apache_cr(*states: dict[str, Any], name: str = "pi", attempt: int = 0) -> dict[str, Any]:
    """A spark.apache.org/v1 SparkApplication whose history is ``states``."""
    cr: dict[str, Any] = {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": "spark-jobs"},
        "spec": {"mainClass": "org.apache.spark.examples.SparkPi"},
    }
    if states:
        cr["status"] = {
            "currentState": states[-1],
            "stateTransitionHistory": {str(i): s for i, s in enumerate(states)},
            "currentAttemptSummary": {"attemptInfo": {"id": attempt, "restartCounter": attempt}},
        }
    return cr


def test_every_apache_state_is_mapped() -> None:
    assert set(APACHE_STATES) | APACHE_TERMINATED == {s.value for s in AppStateSummary}
    assert not set(APACHE_STATES) & APACHE_TERMINATED


def test_new_cr_without_status_is_submitted() -> None:
    state = classify_apache_cr(apache_cr())
    assert (state.phase, state.reason) == (AppPhase.PENDING, Reason.SUBMITTED)
    assert state.driver == "pi-0-driver"


def test_running_healthy() -> None:
    cr = apache_cr(
        entry("Submitted", 0),
        entry("DriverRequested", 1),
        entry("DriverStarted", 2),
        entry("DriverReady", 3),
        entry("RunningHealthy", 4, "Application is running healthy."),
        attempt=2,
    )
    state = classify_apache_cr(cr)
    assert (state.phase, state.reason, state.raw_state) == (
        AppPhase.RUNNING,
        Reason.NONE,
        "RunningHealthy",
    )
    assert state.driver == "pi-2-driver"
    assert state.since == datetime(2025, 3, 1, 10, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("summary", "phase", "reason"),
    [
        ("ScheduledToRestart", AppPhase.PENDING, Reason.RESTARTING),
        ("InitializedBelowThresholdExecutors", AppPhase.RUNNING, Reason.BELOW_THRESHOLD_EXECUTORS),
        ("RunningWithPartialCapacity", AppPhase.RUNNING, Reason.PARTIAL_CAPACITY),
        ("DriverStartTimedOut", AppPhase.FAILED, Reason.TIMED_OUT),
        ("ExecutorsStartTimedOut", AppPhase.FAILED, Reason.TIMED_OUT),
        ("SchedulingFailure", AppPhase.FAILED, Reason.SCHEDULING_FAILURE),
        ("DriverEvicted", AppPhase.FAILED, Reason.EVICTED),
        ("Succeeded", AppPhase.SUCCEEDED, Reason.COMPLETED),
    ],
)
def test_apache_state_mapping(summary: str, phase: AppPhase, reason: Reason) -> None:
    state = classify_apache_cr(apache_cr(entry("Submitted", 0), entry(summary, 1)))
    assert (state.phase, state.reason) == (phase, reason)


def test_resource_released_takes_outcome_from_last_stopping_state() -> None:
    cr = apache_cr(
        entry("Submitted", 0),
        entry("DriverRequested", 1),
        entry("DriverStarted", 2),
        entry("Failed", 3, "Driver has one or more failed critical container(s)."),
        entry("ResourceReleased", 4),
    )
    state = classify_apache_cr(cr)
    assert (state.phase, state.reason, state.raw_state) == (
        AppPhase.FAILED,
        Reason.ERROR,
        "ResourceReleased",
    )
    assert "failed critical container" in state.message
    assert is_finished(state)


def test_released_after_success_is_succeeded() -> None:
    cr = apache_cr(entry("RunningHealthy", 0), entry("Succeeded", 1), entry("ResourceReleased", 2))
    assert classify_apache_cr(cr).phase is AppPhase.SUCCEEDED


def test_evicted_driver_that_was_preempted() -> None:
    observed = {
        "phase": "Failed",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    }
    cr = apache_cr(
        entry("RunningHealthy", 0),
        entry("DriverEvicted", 1, "Driver has failed.", lastObservedDriverStatus=observed),
        entry("TerminatedWithoutReleaseResources", 2),
    )
    state = classify_apache_cr(cr)
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.PREEMPTED)


def test_failed_driver_oom_from_last_observed_status() -> None:
    observed = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "spark-kubernetes-driver",
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
            }
        ],
    }
    cr = apache_cr(
        entry("RunningHealthy", 0), entry("Failed", 1, lastObservedDriverStatus=observed)
    )
    assert classify_apache_cr(cr).reason == Reason.OOM_KILLED


def test_pending_driver_pod_sharpens_driver_requested() -> None:
    pod = {
        "metadata": {"name": "pi-0-driver"},
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "spark-kubernetes-driver",
                    "state": {"waiting": {"reason": "ErrImagePull"}},
                }
            ],
        },
    }
    execs = [{"status": {"phase": "Running"}}]
    state = classify_apache_cr(
        apache_cr(entry("Submitted", 0), entry("DriverRequested", 1)),
        driver_pod=pod,
        executor_pods=execs,
    )
    assert (state.phase, state.reason) == (AppPhase.PENDING, Reason.ERR_IMAGE_PULL)
    assert state.executors["running"] == 1


def test_long_name_has_no_guessable_driver() -> None:
    cr = apache_cr(entry("Submitted", 0), name="a" * 50)
    assert classify_apache_cr(cr).driver is None


def test_unknown_future_state_is_pending_unknown() -> None:
    state = classify_apache_cr(apache_cr(entry("Submitted", 0), entry("Hibernating", 1)))
    assert (state.phase, state.reason, state.raw_state) == (
        AppPhase.PENDING,
        Reason.UNKNOWN,
        "Hibernating",
    )


def test_suspended_is_pending_suspended() -> None:
    state = classify_apache_cr(apache_cr(entry("Submitted", 0), entry("Suspended", 1)))
    assert (state.phase, state.reason) == (AppPhase.PENDING, Reason.SUSPENDED)


def kubeflow_cr(state: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": "spark-pi", "namespace": "default"},
        "status": {
            "applicationState": {"state": state},
            "driverInfo": {"podName": "spark-pi-driver", "webUIServiceName": "spark-pi-ui-svc"},
            "lastSubmissionAttemptTime": "2025-03-01T10:00:00Z",
            **status,
        },
    }


def test_kubeflow_running_counts_executor_state() -> None:
    cr = kubeflow_cr(
        "RUNNING",
        executorState={
            "spark-pi-1-exec-1": "RUNNING",
            "spark-pi-1-exec-2": "RUNNING",
            "spark-pi-1-exec-3": "PENDING",
            "spark-pi-1-exec-4": "FAILED",
        },
    )
    state = classify_kubeflow_cr(cr)
    assert (state.phase, state.driver) == (AppPhase.RUNNING, "spark-pi-driver")
    assert state.executors == {"pending": 1, "running": 2, "succeeded": 0, "failed": 1}
    assert state.since == datetime(2025, 3, 1, 10, tzinfo=UTC)


def test_kubeflow_completed_since_termination() -> None:
    state = classify_kubeflow_cr(kubeflow_cr("COMPLETED", terminationTime="2025-03-01T10:09:00Z"))
    assert (state.phase, state.reason) == (AppPhase.SUCCEEDED, Reason.COMPLETED)
    assert state.since == datetime(2025, 3, 1, 10, 9, tzinfo=UTC)


def test_kubeflow_failed_oom() -> None:
    cr = kubeflow_cr("FAILED")
    msg = "driver container failed with ExitCode: 137, Reason: OOMKilled"
    cr["status"]["applicationState"]["errorMessage"] = msg
    state = classify_kubeflow_cr(cr)
    assert (state.phase, state.reason, state.message) == (AppPhase.FAILED, Reason.OOM_KILLED, msg)


@pytest.mark.parametrize(
    ("kf_state", "phase", "finished"),
    [
        ("", AppPhase.PENDING, False),
        ("SUBMITTED", AppPhase.PENDING, False),
        ("SUCCEEDING", AppPhase.RUNNING, False),
        ("FAILING", AppPhase.RUNNING, False),
        ("SUBMISSION_FAILED", AppPhase.PENDING, False),
        ("PENDING_RERUN", AppPhase.PENDING, False),
        ("SUSPENDED", AppPhase.PENDING, False),
        ("FAILED", AppPhase.FAILED, True),
    ],
)
def test_kubeflow_states(kf_state: str, phase: AppPhase, finished: bool) -> None:
    state = classify_kubeflow_cr(kubeflow_cr(kf_state))
    assert state.phase is phase
    assert is_finished(state) is finished


def test_kubeflow_state_list_is_complete() -> None:
    documented = {"", "SUBMITTED", "RUNNING", "COMPLETED", "FAILED", "SUBMISSION_FAILED"}
    documented |= {"PENDING_RERUN", "INVALIDATING", "SUCCEEDING", "FAILING", "UNKNOWN"}
    documented |= {"SUSPENDING", "SUSPENDED", "RESUMING"}
    assert set(KUBEFLOW_STATES) == documented
