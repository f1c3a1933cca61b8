"""State of an application submitted through an operator, from its SparkApplication's status.

Owns :func:`classify_apache_cr` (``spark.apache.org``: ours or Apache's operator, reading
``.status.currentState.currentStateSummary``) and :func:`classify_kubeflow_cr`
(``sparkoperator.k8s.io/v1beta2``, reading ``.status.applicationState.state``). Both map the
operator's states onto the shared :class:`AppState`. Called through ``lifecycle.state``. Pure:
the custom resource (and optionally its pods) are passed in as dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sparkplane.model.native import classify_driver_pod
from sparkplane.model.phase import (
    EXECUTOR_KEYS,
    AppPhase,
    AppState,
    Reason,
    count_executors,
    is_finished,
)
from sparkplane.model.pods import Obj, meta, status
from sparkplane.vocab import parse_time

_P, _R, _S, _F = AppPhase.PENDING, AppPhase.RUNNING, AppPhase.SUCCEEDED, AppPhase.FAILED

#: Every ``ApplicationStateSummary`` of the Apache operator but the two terminated ones.
APACHE_STATES: dict[str, tuple[AppPhase, Reason]] = {
    "Submitted": (_P, Reason.SUBMITTED),
    "ScheduledToRestart": (_P, Reason.RESTARTING),
    "DriverRequested": (_P, Reason.NONE),
    "DriverStarted": (_R, Reason.NONE),
    "DriverReady": (_R, Reason.NONE),
    "InitializedBelowThresholdExecutors": (_R, Reason.BELOW_THRESHOLD_EXECUTORS),
    "RunningHealthy": (_R, Reason.NONE),
    "RunningWithPartialCapacity": (_R, Reason.PARTIAL_CAPACITY),
    "RunningWithBelowThresholdExecutors": (_R, Reason.BELOW_THRESHOLD_EXECUTORS),
    "DriverStartTimedOut": (_F, Reason.TIMED_OUT),
    "ExecutorsStartTimedOut": (_F, Reason.TIMED_OUT),
    "DriverReadyTimedOut": (_F, Reason.TIMED_OUT),
    "Succeeded": (_S, Reason.COMPLETED),
    "Failed": (_F, Reason.ERROR),
    "SchedulingFailure": (_F, Reason.SCHEDULING_FAILURE),
    "DriverEvicted": (_F, Reason.EVICTED),
    "Suspended": (_P, Reason.SUSPENDED),
    "AdmissionPending": (_P, Reason.ADMISSION_PENDING),
}
#: After these the outcome is the last stopping state in the history.
APACHE_TERMINATED = frozenset({"ResourceReleased", "TerminatedWithoutReleaseResources"})

#: Every ``applicationState.state`` of Kubeflow's operator (v2.4+ adds the suspend states).
KUBEFLOW_STATES: dict[str, tuple[AppPhase, Reason]] = {
    "": (_P, Reason.SUBMITTED),
    "SUBMITTED": (_P, Reason.NONE),
    "RUNNING": (_R, Reason.NONE),
    "SUCCEEDING": (_R, Reason.FINISHING),
    "FAILING": (_R, Reason.FINISHING),
    "COMPLETED": (_S, Reason.COMPLETED),
    "FAILED": (_F, Reason.ERROR),
    "SUBMISSION_FAILED": (_P, Reason.SUBMISSION_FAILED),
    "PENDING_RERUN": (_P, Reason.RESTARTING),
    "INVALIDATING": (_P, Reason.RESTARTING),
    "UNKNOWN": (_R, Reason.UNKNOWN),
    "SUSPENDING": (_R, Reason.SUSPENDED),
    "SUSPENDED": (_P, Reason.SUSPENDED),
    "RESUMING": (_P, Reason.NONE),
}
_KUBEFLOW_EXECUTORS = {"PENDING": "pending", "RUNNING": "running", "COMPLETED": "succeeded"}
_KUBEFLOW_EXECUTORS |= {"FAILED": "failed"}

# Reasons the driver pod can add to an operator's coarse failure ("Failed", "DriverEvicted").
_SHARPER = frozenset({Reason.PREEMPTED, Reason.OOM_KILLED, Reason.EVICTED, Reason.NODE_LOST})
_MAX_PREFIX = 46  # longer app ids are hashed by the Apache operator; the driver is then unknown


def classify_apache_cr(
    cr: Obj, *, driver_pod: Obj | None = None, executor_pods: Sequence[Obj] = ()
) -> AppState:
    """The state of a ``spark.apache.org`` SparkApplication.

    ``ResourceReleased`` / ``TerminatedWithoutReleaseResources`` only say the attempt is over; the
    outcome comes from the last stopping state in ``stateTransitionHistory``. A driver pod, when
    given, sharpens a pending state (``Unschedulable``, ``ImagePullBackOff``...); the operator's
    ``lastObservedDriverStatus`` sharpens a failure (``Preempted``, ``OOMKilled``).
    """
    st = status(cr)
    current = st.get("currentState") or {}
    summary = str(current.get("currentStateSummary") or "")
    execs = count_executors(executor_pods) if executor_pods else {}
    driver = _apache_driver_name(cr)
    if not summary:
        return AppState(_P, Reason.SUBMITTED, "not reconciled yet", driver=driver, executors=execs)
    outcome = _last_stopping_state(st) if summary in APACHE_TERMINATED else current
    outcome = outcome or current
    name = str(outcome.get("currentStateSummary") or "")
    if name in APACHE_STATES:
        phase, reason = APACHE_STATES[name]
    else:
        phase, reason = (_F if summary in APACHE_TERMINATED else _P), Reason.UNKNOWN
    message = str(outcome.get("message") or current.get("message") or "")
    preemptor = None
    observed = outcome.get("lastObservedDriverStatus")
    if phase is _F and observed:
        pod_state = classify_driver_pod({"status": observed})
        if pod_state.reason in _SHARPER:
            reason, preemptor = Reason(pod_state.reason), pod_state.preemptor
    if phase is _P and driver_pod is not None:
        pod_state = classify_driver_pod(driver_pod)
        if pod_state.phase is _P and pod_state.reason:
            reason, message = Reason(pod_state.reason), pod_state.message
    return AppState(
        phase,
        reason,
        message,
        preemptor=preemptor,
        driver=driver,
        executors=execs,
        since=parse_time(current.get("lastTransitionTime")),
        raw_state=summary,
    )


def _last_stopping_state(st: Obj) -> Obj | None:
    history = st.get("stateTransitionHistory") or {}
    for key in sorted(history, key=_int_key, reverse=True):
        entry = history[key] or {}
        if entry.get("currentStateSummary") not in APACHE_TERMINATED:
            return entry
    return None


def _int_key(key: object) -> int:
    try:
        return int(str(key))
    except ValueError:
        return -1


def _apache_driver_name(cr: Obj) -> str | None:
    attempt = ((status(cr).get("currentAttemptSummary") or {}).get("attemptInfo") or {}).get("id")
    prefix = f"{meta(cr).get('name')}-{attempt or 0}"
    return f"{prefix}-driver" if len(prefix) <= _MAX_PREFIX else None


def classify_kubeflow_cr(cr: Obj, *, executor_pods: Sequence[Obj] = ()) -> AppState:
    """The state of a ``sparkoperator.k8s.io/v1beta2`` SparkApplication.

    ``SUCCEEDING``/``FAILING`` stay ``Running`` (reason ``Finishing``): Kubeflow may still rerun.
    """
    st = status(cr)
    app = st.get("applicationState") or {}
    state = str(app.get("state") or "")
    phase, reason = KUBEFLOW_STATES.get(state, (_P, Reason.UNKNOWN))
    message = str(app.get("errorMessage") or "")
    if reason is Reason.ERROR and "OOMKilled" in message:
        reason = Reason.OOM_KILLED
    if executor_pods:
        execs = count_executors(executor_pods)
    else:
        execs = dict.fromkeys(EXECUTOR_KEYS, 0)
        for value in (st.get("executorState") or {}).values():
            if value in _KUBEFLOW_EXECUTORS:
                execs[_KUBEFLOW_EXECUTORS[value]] += 1
    result = AppState(
        phase,
        reason,
        message,
        driver=(st.get("driverInfo") or {}).get("podName"),
        executors=execs,
        raw_state=state,
    )
    when = st.get("terminationTime") if is_finished(result) else st.get("lastSubmissionAttemptTime")
    return replace(result, since=parse_time(when))
