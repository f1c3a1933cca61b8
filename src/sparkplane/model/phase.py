"""The application state model shared by both submission modes: phase, reason, counts.

Owns :class:`AppPhase`, :class:`Reason`, :class:`AppState` and :class:`Event` (one event of an
application's objects, as ``events()``/``describe()`` return it). Imported by the classifiers
(``lifecycle.state``, ``lifecycle.crstate``) and, through ``lifecycle.state``, by the lifecycle
shell and the CLI. Pure data: no Kubernetes access, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from sparkplane.model.pods import Obj, event_time, status
from sparkplane.vocab import POD_PENDING


class AppPhase(StrEnum):
    """Where an application is in its life. ``Succeeded`` and ``Failed`` are final."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class Reason(StrEnum):
    """Why an application is in its phase. ``NONE`` when there is nothing to add."""

    NONE = ""
    SUBMITTED = "Submitted"  # accepted, nothing acted on it yet
    CONTAINER_CREATING = "ContainerCreating"
    UNSCHEDULABLE = "Unschedulable"
    SCHEDULING_GATED = "SchedulingGated"
    IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
    ERR_IMAGE_PULL = "ErrImagePull"
    INVALID_IMAGE_NAME = "InvalidImageName"
    CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
    CREATE_CONTAINER_ERROR = "CreateContainerError"
    CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
    RESTARTING = "Restarting"  # an operator will start a new attempt
    SUBMISSION_FAILED = "SubmissionFailed"
    SUSPENDED = "Suspended"
    ADMISSION_PENDING = "AdmissionPending"  # queued: Kueue has not admitted its Workload yet
    BELOW_THRESHOLD_EXECUTORS = "BelowThresholdExecutors"
    PARTIAL_CAPACITY = "PartialCapacity"
    FINISHING = "Finishing"  # the driver ended; the operator has not settled the outcome yet
    COMPLETED = "Completed"
    ERROR = "Error"
    OOM_KILLED = "OOMKilled"
    PREEMPTED = "Preempted"
    EVICTED = "Evicted"
    NODE_LOST = "NodeLost"
    KILLED = "Killed"  # deleted by a user (or by the deletion of its owner)
    TIMED_OUT = "TimedOut"
    SCHEDULING_FAILURE = "SchedulingFailure"
    DRIVER_MISSING = "DriverMissing"
    UNKNOWN = "Unknown"


#: Pending reasons that will not clear up without someone fixing the spec or the cluster.
STUCK_REASONS = frozenset(
    {
        Reason.IMAGE_PULL_BACK_OFF,
        Reason.ERR_IMAGE_PULL,
        Reason.INVALID_IMAGE_NAME,
        Reason.CREATE_CONTAINER_CONFIG_ERROR,
        Reason.CREATE_CONTAINER_ERROR,
    }
)
EXECUTOR_KEYS = ("pending", "running", "succeeded", "failed")


@dataclass(frozen=True)
class AppState:
    """The observed state of one application. ``raw_state`` keeps an operator's own state name."""

    phase: AppPhase
    reason: str = Reason.NONE
    message: str = ""
    preemptor: str | None = None
    driver: str | None = None
    executors: Mapping[str, int] = field(default_factory=dict)
    since: datetime | None = None
    raw_state: str = ""

    @property
    def finished(self) -> bool:
        return is_finished(self)

    def __str__(self) -> str:
        return f"{self.phase}({self.reason})" if self.reason else str(self.phase)


def is_finished(state: AppState) -> bool:
    """True once the application can no longer change phase."""
    return state.phase in (AppPhase.SUCCEEDED, AppPhase.FAILED)


def count_executors(pods: Iterable[Obj]) -> dict[str, int]:
    """Executor pods counted by phase; every key of :data:`EXECUTOR_KEYS` is present."""
    counts = dict.fromkeys(EXECUTOR_KEYS, 0)
    for pod in pods:
        key = str(status(pod).get("phase") or POD_PENDING).lower()
        if key in counts:
            counts[key] += 1
    return counts


@dataclass(frozen=True)
class Event:
    """One event of an application's objects: what ``sparkplane events`` prints. ``raw`` is
    the Event object as the API server returned it (not shown, not compared)."""

    time: datetime | None
    type: str  # Normal or Warning
    reason: str
    object: str  # Kind/name of the object it is about
    message: str
    count: int = 1
    name: str = ""  # the Event object's own name
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_api(cls, event: Mapping[str, Any]) -> Event:
        """An Event from a ``v1`` Event object."""
        obj = event.get("involvedObject") or {}
        series = event.get("series") or {}
        return cls(
            time=event_time(event),
            type=str(event.get("type") or ""),
            reason=str(event.get("reason") or ""),
            object=f"{obj.get('kind', '')}/{obj.get('name', '')}",
            message=str(event.get("message") or ""),
            count=int(series.get("count") or event.get("count") or 1),
            name=str((event.get("metadata") or {}).get("name") or ""),
            raw=event,
        )
