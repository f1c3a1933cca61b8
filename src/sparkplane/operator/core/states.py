"""The SparkApplication and SparkCluster state machines, as tables, and the status history.

Owns the states of the Apache Spark Kubernetes Operator (whose ``spark.apache.org`` API we
serve), every allowed transition, the state sets the reconciler decides with (stopping, failure,
infrastructure failure, terminated), and pure helpers that append a transition to an
Apache-style ``.status`` dict. Called by the operator's reconciler and runner, the metrics, the
diagram generator (``operator.diagram``) and the tests. Must not do I/O, and never relies on enum
order: every set is written out.

Sources: the state diagram of apache/spark-kubernetes-operator ``docs/architecture.md`` and the
reference (§9.4-9.7). ``Suspended`` (with ``suspendReason``) is the state Apache's operator 1.1.0
added for ``spec.suspend`` (its release notes as issue 23 quotes them: the snapshot of its sources
read here, d5acafd of 2026-08-18, predates it, so the edges are ours: every state before the
attempt stops may be suspended, and a resume is a new attempt). Edges marked ``code`` are not
drawn in that diagram but are taken by the
Apache operator's reconcile code (``AppValidateStep``, ``AppInitStep``, the driver observers'
``observeDriverTermination`` and ``AppDriverTimeoutObserver``), so a compatible operator needs them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

from sparkplane.errors import SparkplaneError
from sparkplane.vocab import SPARK_APPLICATION, SPARK_CLUSTER, format_instant


class AppStateSummary(StrEnum):
    """``status.currentState.currentStateSummary`` of a SparkApplication."""

    SUBMITTED = "Submitted"
    SCHEDULED_TO_RESTART = "ScheduledToRestart"
    DRIVER_REQUESTED = "DriverRequested"
    DRIVER_STARTED = "DriverStarted"
    DRIVER_READY = "DriverReady"
    INITIALIZED_BELOW_THRESHOLD_EXECUTORS = "InitializedBelowThresholdExecutors"
    RUNNING_HEALTHY = "RunningHealthy"
    RUNNING_WITH_PARTIAL_CAPACITY = "RunningWithPartialCapacity"
    RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS = "RunningWithBelowThresholdExecutors"
    DRIVER_START_TIMED_OUT = "DriverStartTimedOut"
    EXECUTORS_START_TIMED_OUT = "ExecutorsStartTimedOut"
    DRIVER_READY_TIMED_OUT = "DriverReadyTimedOut"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SCHEDULING_FAILURE = "SchedulingFailure"
    DRIVER_EVICTED = "DriverEvicted"
    RESOURCE_RELEASED = "ResourceReleased"
    TERMINATED_WITHOUT_RELEASE_RESOURCES = "TerminatedWithoutReleaseResources"
    SUSPENDED = "Suspended"
    ADMISSION_PENDING = "AdmissionPending"


class ClusterStateSummary(StrEnum):
    """``status.currentState.currentStateSummary`` of a SparkCluster."""

    SUBMITTED = "Submitted"
    SCHEDULING_FAILURE = "SchedulingFailure"
    RUNNING_HEALTHY = "RunningHealthy"
    FAILED = "Failed"
    RESOURCE_RELEASED = "ResourceReleased"
    SUSPENDED = "Suspended"


A, C = AppStateSummary, ClusterStateSummary

APP_DESCRIPTIONS: Mapping[AppStateSummary, str] = {
    A.SUBMITTED: "Accepted; no resources requested yet.",
    A.SCHEDULED_TO_RESTART: "A new attempt will start with the same spec after the backoff.",
    A.ADMISSION_PENDING: (
        "Queued: the app names a Kueue LocalQueue; its Workload waits for Kueue's admission "
        "(no pod exists yet)."
    ),
    A.DRIVER_REQUESTED: "The driver pod and its resources were created; waiting for it to run.",
    A.DRIVER_STARTED: "The driver pod is Running (bound to a node, containers started).",
    A.DRIVER_READY: "The driver pod is Ready: its SparkContext accepts executors.",
    A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS: "Starting, fewer Ready executors than initExecutors.",
    A.RUNNING_HEALTHY: "Running with at least the required executors Ready.",
    A.RUNNING_WITH_PARTIAL_CAPACITY: (
        "Running with executors between min and max (dynamic allocation off)."
    ),
    A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS: "Running, but lost executors below minExecutors.",
    A.DRIVER_START_TIMED_OUT: "The driver did not start within driverStartTimeoutMillis.",
    A.EXECUTORS_START_TIMED_OUT: "Too few executors within executorStartTimeoutMillis.",
    A.DRIVER_READY_TIMED_OUT: "The driver did not become Ready within driverReadyTimeoutMillis.",
    A.SUCCEEDED: "The driver exited 0 after its SparkContext started.",
    A.FAILED: "The driver failed: non-zero exit, failed init container, restart or removal.",
    A.SCHEDULING_FAILURE: "The operator could not create the resources (template, quota, RBAC).",
    A.DRIVER_EVICTED: "The driver pod was evicted (or preempted).",
    A.RESOURCE_RELEASED: "Terminal: the attempt's resources were deleted.",
    A.TERMINATED_WITHOUT_RELEASE_RESOURCES: "Terminal: resources kept per resourceRetainPolicy.",
    A.SUSPENDED: (
        "spec.suspend is true: nothing runs (driver and executors released, logs archived); "
        "clearing it starts a new attempt."
    ),
}
CLUSTER_DESCRIPTIONS: Mapping[ClusterStateSummary, str] = {
    C.SUBMITTED: "Accepted; master and workers not created or not Ready yet.",
    C.SCHEDULING_FAILURE: (
        "The operator could not create the master or worker resources, or their pods failed "
        "for good before the cluster was ever healthy."
    ),
    C.RUNNING_HEALTHY: "The master and at least minWorkers workers are Ready.",
    C.FAILED: "A StatefulSet vanished, or the master (or too many workers) failed for good.",
    C.RESOURCE_RELEASED: "Terminal: the cluster's resources were deleted.",
    C.SUSPENDED: (
        "spec.suspend is true: the master and workers are released (the auth Secret kept); "
        "clearing it creates them again."
    ),
}

# --- sets the reconciler decides with (written out: never derived from enum order) -----------

APP_INITIALIZING = frozenset({A.SUBMITTED, A.SCHEDULED_TO_RESTART})
#: A queued app's attempt waits for Kueue to admit its Workload (nothing else exists yet).
APP_QUEUED = frozenset({A.ADMISSION_PENDING})
APP_STARTING = frozenset(
    {A.DRIVER_REQUESTED, A.DRIVER_STARTED, A.DRIVER_READY, A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS}
)
APP_RUNNING = frozenset(
    {A.RUNNING_HEALTHY, A.RUNNING_WITH_PARTIAL_CAPACITY, A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS}
)
APP_INFRASTRUCTURE_FAILURES = frozenset(
    {A.DRIVER_START_TIMED_OUT, A.EXECUTORS_START_TIMED_OUT, A.SCHEDULING_FAILURE}
)
APP_FAILURES = APP_INFRASTRUCTURE_FAILURES | {A.DRIVER_READY_TIMED_OUT, A.FAILED, A.DRIVER_EVICTED}
#: The attempt is over; restart or release decides what follows (``terminateOrRestart``).
APP_STOPPING = APP_FAILURES | {A.SUCCEEDED}
APP_TERMINATED = frozenset({A.RESOURCE_RELEASED, A.TERMINATED_WITHOUT_RELEASE_RESOURCES})
#: ``spec.suspend`` takes an app from these to ``Suspended`` (releasing what the attempt made);
#: a stopping or terminated app finishes as it would have.
APP_SUSPENDABLE = APP_INITIALIZING | APP_QUEUED | APP_STARTING | APP_RUNNING
#: States in which a queued app's attempt holds (or waits for) its Kueue Workload.
APP_HOLDS_WORKLOAD = APP_QUEUED | APP_STARTING | APP_RUNNING
#: The key of the ``Suspended`` state entry saying why (Apache 1.1.0's ``suspendReason``), and
#: the reason when the user asked for it (``spec.suspend: true``).
SUSPEND_REASON = "suspendReason"
SUSPEND_BY_SPEC = "SpecSuspend"
#: The ``suspendReason`` when Kueue evicted the app's Workload (preempted, or its admission
#: removed): the app is released, then requeued as a new attempt.
SUSPEND_BY_KUEUE = "KueueEvicted"

CLUSTER_FAILURES = frozenset({C.SCHEDULING_FAILURE, C.FAILED})
CLUSTER_INFRASTRUCTURE_FAILURES = frozenset({C.SCHEDULING_FAILURE})
CLUSTER_TERMINATED = frozenset({C.RESOURCE_RELEASED})

S = TypeVar("S", AppStateSummary, ClusterStateSummary)


@dataclass(frozen=True)
class Edge(Generic[S]):
    """One allowed transition; ``origin`` is ``diagram`` or ``code`` (see the module docstring)."""

    src: S
    dst: S
    origin: str = "diagram"
    note: str = ""


def _edges(src: S, dsts: Iterable[S], note: str = "") -> list[Edge[S]]:
    """Edges from ``src``; a ``note`` (which code takes them) marks them as ``code`` edges."""
    return [Edge(src, dst, "code" if note else "diagram", note) for dst in dsts]


_OBSERVED = "the driver observers' observeDriverTermination: the driver pod ended or vanished"
_EVICTED = "observeDriverTermination: driver pod Failed with reason Evicted"
_SUSPEND = "spec.suspend set (Apache operator 1.1.0): the attempt's resources are released"
_RESUME = "spec.suspend cleared: a new attempt, restart counters unchanged"
_QUEUE = "a queued app (label kueue.x-k8s.io/queue-name): its Workload is created first"
_ADMIT = "Kueue admitted the Workload: the driver is created with the admitted counts"


_END = (A.SCHEDULED_TO_RESTART, A.RESOURCE_RELEASED, A.TERMINATED_WITHOUT_RELEASE_RESOURCES)
_STOPPING_ORDER = (
    A.DRIVER_START_TIMED_OUT,
    A.EXECUTORS_START_TIMED_OUT,
    A.DRIVER_READY_TIMED_OUT,
    A.FAILED,
    A.SCHEDULING_FAILURE,
    A.DRIVER_EVICTED,
)
_DRIVER_ENDED = (A.FAILED, A.DRIVER_EVICTED, A.SUCCEEDED)

#: Every allowed SparkApplication transition.
APP_EDGES: tuple[Edge[AppStateSummary], ...] = (
    *_edges(A.SUBMITTED, (A.DRIVER_REQUESTED, A.SCHEDULING_FAILURE)),
    *_edges(A.SUBMITTED, (A.FAILED,), "AppValidateStep rejects the spec (e.g. ClientMode)"),
    *_edges(A.SUBMITTED, (A.ADMISSION_PENDING,), _QUEUE),
    *_edges(A.SCHEDULED_TO_RESTART, (A.ADMISSION_PENDING,), _QUEUE),
    *_edges(A.ADMISSION_PENDING, (A.DRIVER_REQUESTED, A.SCHEDULING_FAILURE), _ADMIT),
    *_edges(A.SCHEDULED_TO_RESTART, (A.DRIVER_REQUESTED,)),
    *_edges(A.SCHEDULED_TO_RESTART, (A.SCHEDULING_FAILURE,), "AppInitStep fails on a new attempt"),
    *_edges(A.DRIVER_REQUESTED, (A.DRIVER_STARTED, A.DRIVER_START_TIMED_OUT)),
    *_edges(A.DRIVER_REQUESTED, _DRIVER_ENDED, _OBSERVED),
    *_edges(A.DRIVER_STARTED, (A.DRIVER_READY, A.DRIVER_READY_TIMED_OUT, A.DRIVER_EVICTED)),
    *_edges(A.DRIVER_STARTED, (A.FAILED, A.SUCCEEDED), _OBSERVED),
    *_edges(
        A.DRIVER_READY,
        (
            A.RUNNING_HEALTHY,
            A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS,
            A.RUNNING_WITH_PARTIAL_CAPACITY,
            A.EXECUTORS_START_TIMED_OUT,
            A.DRIVER_EVICTED,
        ),
    ),
    *_edges(A.DRIVER_READY, (A.FAILED, A.SUCCEEDED), _OBSERVED),
    *_edges(
        A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS,
        (A.RUNNING_HEALTHY, A.RUNNING_WITH_PARTIAL_CAPACITY, A.FAILED),
    ),
    *_edges(
        A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS,
        (A.EXECUTORS_START_TIMED_OUT,),
        "AppDriverTimeoutObserver: executorStartTimeoutMillis also runs in this state",
    ),
    *_edges(A.INITIALIZED_BELOW_THRESHOLD_EXECUTORS, (A.DRIVER_EVICTED, A.SUCCEEDED), _OBSERVED),
    *_edges(
        A.RUNNING_HEALTHY,
        (
            A.SUCCEEDED,
            A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS,
            A.RUNNING_WITH_PARTIAL_CAPACITY,
            A.FAILED,
        ),
    ),
    *_edges(A.RUNNING_HEALTHY, (A.DRIVER_EVICTED,), _EVICTED),
    *_edges(
        A.RUNNING_WITH_PARTIAL_CAPACITY,
        (A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS, A.RUNNING_HEALTHY, A.SUCCEEDED, A.FAILED),
    ),
    *_edges(A.RUNNING_WITH_PARTIAL_CAPACITY, (A.DRIVER_EVICTED,), _EVICTED),
    *_edges(
        A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS,
        (A.RUNNING_WITH_PARTIAL_CAPACITY, A.RUNNING_HEALTHY, A.FAILED),
    ),
    *_edges(A.RUNNING_WITH_BELOW_THRESHOLD_EXECUTORS, (A.DRIVER_EVICTED, A.SUCCEEDED), _OBSERVED),
    *(edge for state in _STOPPING_ORDER for edge in _edges(state, _END)),
    *_edges(A.SUCCEEDED, _END[1:]),
    *_edges(A.SUCCEEDED, _END[:1], "terminateOrRestart: restartPolicy Always restarts a success"),
    *_edges(
        A.TERMINATED_WITHOUT_RELEASE_RESOURCES,
        (A.RESOURCE_RELEASED,),
        "AppCleanUpStep: resourceRetainDurationMillis (or ttlAfterStopMillis) ran out",
    ),
    *(
        edge
        for state in sorted(APP_SUSPENDABLE)
        for edge in _edges(state, (A.SUSPENDED,), _SUSPEND)
    ),
    *_edges(A.SUSPENDED, (A.SCHEDULED_TO_RESTART,), _RESUME),
)

#: Every allowed SparkCluster transition.
CLUSTER_EDGES: tuple[Edge[ClusterStateSummary], ...] = (
    *_edges(C.SUBMITTED, (C.RUNNING_HEALTHY, C.SCHEDULING_FAILURE)),
    *_edges(C.RUNNING_HEALTHY, (C.FAILED, C.RESOURCE_RELEASED)),
    *_edges(C.SCHEDULING_FAILURE, (C.RESOURCE_RELEASED,)),
    *_edges(C.FAILED, (C.RESOURCE_RELEASED,)),
    *_edges(C.SUBMITTED, (C.SUSPENDED,), _SUSPEND),
    *_edges(C.RUNNING_HEALTHY, (C.SUSPENDED,), _SUSPEND),
    *_edges(C.SUSPENDED, (C.SUBMITTED,), "spec.suspend cleared: the objects are created again"),
)


class IllegalTransition(SparkplaneError):
    """A transition the table does not allow was attempted: a bug in the reconciler."""

    def __init__(self, src: StrEnum | None, dst: StrEnum, allowed: Iterable[StrEnum]) -> None:
        self.src, self.dst = src, dst
        self.allowed = tuple(sorted(str(s) for s in allowed))
        choices = ", ".join(self.allowed) or "nothing (terminal state)"
        super().__init__(f"illegal state transition {src} -> {dst}; allowed from {src}: {choices}")


@dataclass(frozen=True)
class StateMachine(Generic[S]):
    """A state enum with its descriptions, initial state, edges and terminal set."""

    kind: str
    initial: S
    edges: tuple[Edge[S], ...]
    descriptions: Mapping[S, str]
    terminal: frozenset[S]

    @property
    def states(self) -> tuple[S, ...]:
        """Every state, in the order of the descriptions table (for display only)."""
        return tuple(self.descriptions)

    def allowed(self, src: S) -> frozenset[S]:
        return frozenset(e.dst for e in self.edges if e.src == src)

    def check(self, src: S | None, dst: S) -> None:
        """Raise :class:`IllegalTransition` unless ``src -> dst`` is in the table.

        ``src`` None means a new object, which may only enter the initial state.
        """
        allowed = frozenset({self.initial}) if src is None else self.allowed(src)
        if dst not in allowed:
            raise IllegalTransition(src, dst, allowed)


APP_MACHINE: StateMachine[AppStateSummary] = StateMachine(
    SPARK_APPLICATION, A.SUBMITTED, APP_EDGES, APP_DESCRIPTIONS, APP_TERMINATED
)
CLUSTER_MACHINE: StateMachine[ClusterStateSummary] = StateMachine(
    SPARK_CLUSTER, C.SUBMITTED, CLUSTER_EDGES, CLUSTER_DESCRIPTIONS, CLUSTER_TERMINATED
)


def machine_of(state: S) -> StateMachine[Any]:
    return APP_MACHINE if isinstance(state, AppStateSummary) else CLUSTER_MACHINE


def check_transition(src: S | None, dst: S) -> None:
    """Raise :class:`IllegalTransition` unless the table allows ``src -> dst``."""
    machine_of(dst).check(src, dst)


# --- restart and retention decisions (Apache ``terminateOrRestart``) --------------------------

RESTART_POLICIES = ("Never", "Always", "OnFailure", "OnInfrastructureFailure")
RETAIN_POLICIES = ("Never", "Always", "OnFailure")


def restart_allowed(policy: str, state: AppStateSummary) -> bool:
    """Whether ``restartConfig.restartPolicy`` wants a new attempt after stopping in ``state``."""
    if policy not in RESTART_POLICIES:
        raise ValueError(f"unknown restartPolicy {policy!r}; expected one of {RESTART_POLICIES}")
    if state not in APP_STOPPING:
        return False
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return state in APP_FAILURES
    if policy == "OnInfrastructureFailure":
        return state in APP_INFRASTRUCTURE_FAILURES
    return False


def terminal_state(state: AppStateSummary, retain_policy: str) -> AppStateSummary:
    """Where a stopping app ends without restart, per ``resourceRetainPolicy``."""
    if retain_policy not in RETAIN_POLICIES:
        raise ValueError(f"unknown resourceRetainPolicy {retain_policy!r}")
    keep = retain_policy == "Always" or (retain_policy == "OnFailure" and state in APP_FAILURES)
    return A.TERMINATED_WITHOUT_RELEASE_RESOURCES if keep else A.RESOURCE_RELEASED


# --- the status history (same shape for applications and clusters) ----------------------------

Status = dict[str, Any]


def new_status(now: datetime, message: str = "", *, cluster: bool = False) -> Status:
    """The first status of a new object: ``{0: Submitted}`` and attempt 0."""
    machine = CLUSTER_MACHINE if cluster else APP_MACHINE
    entry = _entry(machine.initial, now, message, None)
    info: dict[str, int] = {"id": 0, "restartCounter": 0}
    if not cluster:
        info |= {"failureRestartCounter": 0, "schedulingFailureRestartCounter": 0}
    return {
        "currentState": entry,
        "stateTransitionHistory": {"0": dict(entry)},
        "currentAttemptSummary": {"attemptInfo": info},
    }


def current_summary(
    status: Mapping[str, Any] | None, *, cluster: bool = False
) -> AppStateSummary | ClusterStateSummary | None:
    """The current state as an enum member, or None for an empty or unknown status."""
    name = ((status or {}).get("currentState") or {}).get("currentStateSummary")
    enum: type[AppStateSummary] | type[ClusterStateSummary]
    enum = ClusterStateSummary if cluster else AppStateSummary
    try:
        return enum(str(name)) if name else None
    except ValueError:
        return None


def append_state(
    status: Mapping[str, Any],
    state: S,
    now: datetime,
    message: str = "",
    *,
    driver_status: Mapping[str, Any] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> Status:
    """A new status with ``state`` current and appended to the history under the next key.

    Checks the transition against the table first. Never mutates ``status``. ``fields`` are
    extra keys of the entry (``Suspended``'s :data:`SUSPEND_REASON`).
    """
    cluster = isinstance(state, ClusterStateSummary)
    machine_of(state).check(current_summary(status, cluster=cluster), state)
    entry = {**_entry(state, now, message, driver_status), **(fields or {})}
    result = copy.deepcopy(dict(status))
    history = result.get("stateTransitionHistory") or {}
    history[str(_next_key(history))] = copy.deepcopy(entry)
    result["stateTransitionHistory"] = history
    result["currentState"] = entry
    return result


def restart_status(
    status: Mapping[str, Any],
    now: datetime,
    message: str = "",
    *,
    trim_history: bool = True,
    counts: bool = True,
) -> Status:
    """A new attempt: ``ScheduledToRestart``, attempt id + 1, the old attempt kept as previous.

    With ``trim_history`` (the Apache default) the old history moves into
    ``previousAttemptSummary.stateTransitionHistory`` and the new one starts at the next key.
    Consecutive-failure counters grow on a failure (and a scheduling failure) and reset otherwise.
    ``counts`` False (a resume from ``Suspended``): a new attempt that is no restart, every
    counter kept as it was.
    """
    found = current_summary(status)
    stopped = found if isinstance(found, AppStateSummary) else None
    APP_MACHINE.check(stopped, A.SCHEDULED_TO_RESTART)
    entry = _entry(A.SCHEDULED_TO_RESTART, now, message, None)
    result = copy.deepcopy(dict(status))
    history = result.get("stateTransitionHistory") or {}
    previous = result.get("currentAttemptSummary") or {"attemptInfo": {"id": 0}}
    info = dict(previous.get("attemptInfo") or {})
    failure = stopped in APP_FAILURES
    scheduling = stopped == A.SCHEDULING_FAILURE
    next_info = {
        "id": int(info.get("id", 0)) + 1,
        "restartCounter": int(info.get("restartCounter", 0)) + 1,
        "failureRestartCounter": int(info.get("failureRestartCounter", 0)) + 1 if failure else 0,
        "schedulingFailureRestartCounter": (
            int(info.get("schedulingFailureRestartCounter", 0)) + 1 if scheduling else 0
        ),
    }
    if not counts:
        next_info = {**next_info, **{k: int(info.get(k, 0)) for k in _COUNTERS}}
    key = str(_next_key(history))
    if trim_history:
        previous = {**previous, "stateTransitionHistory": history}
        result["stateTransitionHistory"] = {key: copy.deepcopy(entry)}
    else:
        result["stateTransitionHistory"] = {**history, key: copy.deepcopy(entry)}
    result["previousAttemptSummary"] = previous
    result["currentAttemptSummary"] = {"attemptInfo": next_info}
    result["currentState"] = entry
    return result


_COUNTERS = ("restartCounter", "failureRestartCounter", "schedulingFailureRestartCounter")


def history_states(status: Mapping[str, Any], *, with_previous: bool = True) -> list[str]:
    """The state names in history order (previous attempt first): what e2e tests assert."""
    histories: list[Mapping[str, Any]] = []
    if with_previous:
        previous = status.get("previousAttemptSummary") or {}
        histories.append(previous.get("stateTransitionHistory") or {})
    histories.append(status.get("stateTransitionHistory") or {})
    return [
        str((history[key] or {}).get("currentStateSummary"))
        for history in histories
        for key in sorted(history, key=int)
    ]


def _entry(
    state: StrEnum, now: datetime, message: str, driver_status: Mapping[str, Any] | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "currentStateSummary": state.value,
        "lastTransitionTime": format_instant(now),
        "message": message,
    }
    if driver_status is not None:
        entry["lastObservedDriverStatus"] = copy.deepcopy(dict(driver_status))
    return entry


def _next_key(history: Mapping[str, Any]) -> int:
    return max((int(k) for k in history), default=-1) + 1
