"""Kubeflow's ``status`` of a v1beta2 SparkApplication, written from the one state machine's.

The operator runs a v1beta2 resource through the same :func:`~.reconciler.decide` as an Apache
one; the Apache-shaped status it evolves is kept in ``status.sparkplane`` (the resource's
memory between reconciles) and :func:`kubeflow_status` writes beside it what Kubeflow writes
(reference §10.4): ``applicationState`` {``state``, ``errorMessage``}, ``driverInfo``
{``podName``, ``webUIServiceName``, ``webUIAddress``, ``webUIPort``}, ``executorState``,
``sparkApplicationId``, ``submissionAttempts``, ``executionAttempts``,
``lastSubmissionAttemptTime`` and ``terminationTime``. :data:`STATES` maps each Apache state
onto Kubeflow's; a terminated resource takes its outcome from the state that stopped it
(``COMPLETED``, else ``FAILED``, as Kubeflow ends once its retries are out; a spec that did not
render is ``SUBMISSION_FAILED``), and a restart after a failed submission stays
``SUBMISSION_FAILED`` until the next one. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparkplane.operator.core import states as st
from sparkplane.operator.core.naming import (
    OperatorIds,
    attempt_driver_pod_name,
    attempt_of,
    kubeflow_driver_pod_name,
)
from sparkplane.vocab import APP_SELECTOR_LABEL, DRIVER_ROLE, EXECUTOR_ROLE, ROLE_LABEL

A = st.AppStateSummary
Obj = dict[str, Any]
#: Where the Apache-shaped status the state machine evolves is kept.
INTERNAL = "sparkplane"
#: The attempts whose driver started (Kubeflow's executionAttempts), kept in the internal status.
EXECUTED = "kubeflowExecutedAttempts"
UI_PORT = 4040

#: Apache state → Kubeflow ``applicationState.state`` (terminated states: see :func:`outcome`).
STATES: dict[A, str] = {
    A.SUBMITTED: "SUBMITTED",
    A.DRIVER_REQUESTED: "SUBMITTED",
    A.SCHEDULED_TO_RESTART: "PENDING_RERUN",
    A.DRIVER_STARTED: "RUNNING",
    A.DRIVER_READY: "RUNNING",
    A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS: "RUNNING",
    A.RUNNING_HEALTHY: "RUNNING",
    A.RUNNING_WITH_PARTIAL_CAPACITY: "RUNNING",
    A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS: "RUNNING",
    A.SUCCEEDED: "SUCCEEDING",
    A.FAILED: "FAILING",
    A.DRIVER_EVICTED: "FAILING",
    A.DRIVER_START_TIMED_OUT: "FAILING",
    A.DRIVER_READY_TIMED_OUT: "FAILING",
    A.EXECUTORS_START_TIMED_OUT: "FAILING",
    A.SCHEDULING_FAILURE: "SUBMISSION_FAILED",
    A.SUSPENDED: "SUSPENDED",
    A.ADMISSION_PENDING: "SUBMITTED",
}
#: Kubeflow v2.4's suspend states (reference §10.4): ``SUSPENDING`` while ``spec.suspend`` is
#: true and the app is not ``Suspended`` yet, ``RESUMING`` while it is false and the app still
#: is (or is starting the attempt the resume made, before its driver is requested).
SUSPENDING, RESUMING = "SUSPENDING", "RESUMING"
#: Kubeflow's final states.
TERMINAL = frozenset({"COMPLETED", "FAILED", "SUBMISSION_FAILED"})
_POD_PHASES = {"Pending": "PENDING", "Running": "RUNNING", "Succeeded": "COMPLETED"}
_POD_PHASES |= {"Failed": "FAILED"}


def _history(internal: Mapping[str, Any]) -> list[Obj]:
    history = internal.get("stateTransitionHistory") or {}
    return [history[k] or {} for k in sorted(history, key=int)]


def _summary(entry: Mapping[str, Any]) -> A | None:
    try:
        return A(str(entry.get("currentStateSummary")))
    except ValueError:
        return None


def outcome(internal: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """(Kubeflow state, errorMessage, terminationTime) of the Apache status ``internal``."""
    entries = _history(internal)
    current = st.current_summary(internal)
    if not isinstance(current, A):
        return "", "", None
    if current not in st.APP_TERMINATED:
        entry = internal.get("currentState") or {}
        state = STATES.get(current, "UNKNOWN")
        info = (internal.get("currentAttemptSummary") or {}).get("attemptInfo") or {}
        resubmitting = int(info.get("schedulingFailureRestartCounter") or 0) > 0
        if current == A.SCHEDULED_TO_RESTART and resubmitting:
            state = "SUBMISSION_FAILED"  # Kubeflow stays there until it submits again
        if current == A.SCHEDULED_TO_RESTART and _after_suspended(internal):
            state = RESUMING
        failing = state in ("FAILING", "SUBMISSION_FAILED")
        return state, str(entry.get("message") or "") if failing else "", None
    stopped = next((e for e in reversed(entries) if _summary(e) in st.APP_STOPPING), None)
    if stopped is None:
        return "FAILED", "", None
    summary = _summary(stopped)
    state = "COMPLETED" if summary == A.SUCCEEDED else "FAILED"
    requested = any(_summary(e) == A.DRIVER_REQUESTED for e in entries)
    if summary == A.FAILED and not requested:  # the spec did not render: nothing was submitted
        state = "SUBMISSION_FAILED"
    message = "" if state == "COMPLETED" else str(stopped.get("message") or "")
    if summary == A.SCHEDULING_FAILURE:  # Kubeflow: FAILED once the submission retries are out
        message = f"failed to submit the driver: {message}"
    return state, message, stopped.get("lastTransitionTime")


def suspend_state(cr: Mapping[str, Any], state: str, current: A | None) -> str:
    """``state``, or Kubeflow's ``SUSPENDING``/``RESUMING`` when ``spec.suspend`` disagrees with
    where the state machine is (the status this reconcile decided)."""
    wanted = (cr.get("spec") or {}).get("suspend") is True
    if current is None or current in st.APP_TERMINATED or state in TERMINAL:
        return state
    if wanted and current != A.SUSPENDED and current in st.APP_SUSPENDABLE:
        return SUSPENDING
    if not wanted and current == A.SUSPENDED:
        return RESUMING
    return state


def _after_suspended(internal: Mapping[str, Any]) -> bool:
    previous = (internal.get("previousAttemptSummary") or {}).get("stateTransitionHistory") or {}
    entries = [previous[k] or {} for k in sorted(previous, key=int)] + _history(internal)
    return len(entries) > 1 and _summary(entries[-2]) == A.SUSPENDED


def _executor_state(
    pods: Sequence[Mapping[str, Any]], app_id: str, before: Mapping[str, Any]
) -> Obj:
    """Pod name → PENDING/RUNNING/COMPLETED/FAILED/UNKNOWN, keeping executors that went."""
    out = {k: v for k, v in before.items() if isinstance(v, str)}
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(ROLE_LABEL) != EXECUTOR_ROLE or labels.get(APP_SELECTOR_LABEL) != app_id:
            continue
        phase = str((pod.get("status") or {}).get("phase") or "")
        out[str(pod["metadata"]["name"])] = _POD_PHASES.get(phase, "UNKNOWN")
    return out


def kubeflow_status(
    cr: Mapping[str, Any],
    internal: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]] = (),
) -> Obj:
    """The whole ``.status`` of v1beta2 resource ``cr`` for the Apache status ``internal``
    (and the pods observed: its driver's name and its executors' states)."""
    before = cr.get("status") or {}
    if not internal:
        return dict(before)
    meta = cr.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    attempt = attempt_of(internal)
    ids = OperatorIds.of(cr, attempt)
    state, message, ended = outcome(internal)
    current = st.current_summary(internal)
    state = suspend_state(cr, state, current if isinstance(current, A) else None)
    entries = _history(internal)
    requested = [e for e in entries if _summary(e) == A.DRIVER_REQUESTED]
    started = any(_summary(e) == A.DRIVER_STARTED for e in entries)
    executed = {int(i) for i in internal.get(EXECUTED) or []} | ({attempt} if started else set())
    driver = next(
        (
            p
            for p in pods
            if ((p.get("metadata") or {}).get("labels") or {}).get(ROLE_LABEL) == DRIVER_ROLE
            and (p["metadata"].get("labels") or {}).get(APP_SELECTOR_LABEL) == ids.app_id
        ),
        None,
    )
    driver_info = dict(before.get("driverInfo") or {})
    if requested:
        driver_info["podName"] = (
            str(driver["metadata"]["name"])
            if driver
            else attempt_driver_pod_name(kubeflow_driver_pod_name(cr), attempt)
        )
        service = ids.driver_service_name
        driver_info |= {
            "webUIServiceName": service,
            "webUIPort": UI_PORT,
            "webUIAddress": f"{service}.{namespace}.svc:{UI_PORT}",
        }
    same_attempt = before.get("sparkApplicationId") == ids.app_id
    executors = _executor_state(
        pods, ids.app_id, (before.get("executorState") or {}) if same_attempt else {}
    )
    out: Obj = {
        "applicationState": {"state": state, **({"errorMessage": message} if message else {})},
        "sparkApplicationId": ids.app_id,
        "submissionID": ids.submission_id,
        "submissionAttempts": attempt + 1,
        "executionAttempts": len(executed),
        INTERNAL: {**internal, EXECUTED: sorted(executed)},
    }
    out["driverInfo"] = driver_info  # always, {} at first: Kubeflow's is not omitempty
    if executors:
        out["executorState"] = executors
    when = requested[-1].get("lastTransitionTime") if requested else None
    if when or before.get("lastSubmissionAttemptTime"):
        out["lastSubmissionAttemptTime"] = when or before.get("lastSubmissionAttemptTime")
    if ended:
        out["terminationTime"] = ended
    return out


def refused_status(cr: Mapping[str, Any], message: str, now: str) -> Obj:
    """The status of a resource whose spec sparkplane refuses: ``SUBMISSION_FAILED``, as
    Kubeflow ends an app its spark-submit rejected (one attempt, nothing created)."""
    before = cr.get("status") or {}
    if (before.get("applicationState") or {}).get("errorMessage") == message:
        return dict(before)
    return {
        "applicationState": {"state": "SUBMISSION_FAILED", "errorMessage": message},
        "driverInfo": {},
        "submissionAttempts": 1,
        "executionAttempts": 0,
        "lastSubmissionAttemptTime": now,
        "terminationTime": now,
    }
