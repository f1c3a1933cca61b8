"""What the reconciler observes about one attempt: its driver pod and its executors.

Owns :class:`Observed` (the pods the runner found for a SparkApplication, plus facts the runner
checked for it) and the readings the state machine needs: has the driver started, is it Ready,
has it ended and how (``Succeeded``, ``Failed``, evicted or preempted → ``DriverEvicted``), and
how many executors are Ready. A deleted driver pod arrives as a *tombstone* (its last state,
from the watch's DELETED event), so a preempted driver that KWOK or the kubelet removed at once is
still recognised as evicted.

Called by :mod:`sparkplane.operator.core.reconciler`. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkplane.model import AppPhase, Reason, classify_driver_pod
from sparkplane.model.pods import condition, driver_container_status
from sparkplane.operator.core.priority import ClassRef
from sparkplane.operator.core.states import AppStateSummary
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    DRIVER_ROLE,
    EXECUTOR_ROLE,
    POD_ENDED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    ROLE_LABEL,
    owner_refs,
)

Obj = Mapping[str, Any]
_EVICTIONS = frozenset({Reason.PREEMPTED, Reason.EVICTED, Reason.NODE_LOST})


@dataclass(frozen=True)
class Observed:
    """Pods of one SparkApplication as the runner saw them.

    ``pods``: live driver pods owned by the CR (any attempt) and executor pods of the current
    attempt. ``tombstones``: last states of deleted driver pods. ``driver_absent``: the runner
    confirmed with a live read that the current driver does not exist (the cache alone is never
    trusted for that). ``create_error``: creating this attempt's resources failed for good.
    ``templates``: role → pod template the runner loaded from a ``podTemplateFile``.
    ``auth_cluster``: the SparkCluster of the app's namespace its ``spark.master`` names, when
    the runner found it (its driver gets the cluster's secret). ``owner``: the uid of the
    SparkApplication observed; a driver pod another uid controls is never its (issue 27).
    ``kueue``: the API server serves Kueue's Workloads (the operator watches them).
    ``workloads``: the Kueue Workloads this SparkApplication controls (any attempt).
    ``flavors``: the ResourceFlavors its admitted Workload names, as read while the driver may
    be created (name -> object; None: not found; a name absent: not read).
    ``priority``: the priority classes read for a queued app's Workload (:mod:`.priority`:
    a ref -> the class, None: not found; for ``priority.DEFAULT`` the globalDefault
    PriorityClass, None: none; a ref absent: not read, the decision asks for it).
    ``held``: why the runner's backpressure (:mod:`~sparkplane.operator.core.capacity`) does
    not let this app's driver be created now (empty: it may be); ``held_recheck``: seconds
    before the held app is looked at again at the latest (the runner wakes it sooner).
    """

    pods: tuple[Obj, ...] = ()
    tombstones: tuple[Obj, ...] = ()
    driver_absent: bool = False
    create_error: str | None = None
    templates: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    auth_cluster: str | None = None
    owner: str = ""
    kueue: bool = False
    workloads: tuple[Obj, ...] = ()
    flavors: Mapping[str, Obj | None] = field(default_factory=dict)
    priority: Mapping[ClassRef, Obj | None] = field(default_factory=dict)
    held: str = ""
    held_recheck: float = 30.0


def _labels(pod: Obj) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _role(pod: Obj) -> str:
    return str(_labels(pod).get(ROLE_LABEL, ""))


def _app_id(pod: Obj) -> str:
    return str(_labels(pod).get(APP_SELECTOR_LABEL, ""))


@dataclass(frozen=True)
class DriverView:
    """The current attempt's driver pod (``pod`` None: not seen) and whether it was deleted."""

    pod: Obj | None
    deleted: bool = False

    @property
    def exists(self) -> bool:
        return self.pod is not None and not self.deleted

    @property
    def status(self) -> dict[str, Any]:
        return dict((self.pod or {}).get("status") or {})

    @property
    def reported_status(self) -> dict[str, Any]:
        """The pod status as the CR's history may carry it (:func:`reported_status`)."""
        return reported_status(self.pod or {})

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or POD_PENDING)

    @property
    def finished(self) -> bool:
        """The pod's containers stopped (or the pod is gone): nothing left to stop."""
        return self.pod is None or self.deleted or self.phase in POD_ENDED

    @property
    def started(self) -> bool:
        return self.exists and self.phase == POD_RUNNING

    @property
    def ready(self) -> bool:
        cond = condition(self.pod, "Ready") if self.pod else None
        return self.started and bool(cond) and (cond or {}).get("status") == "True"

    def ended(self) -> tuple[AppStateSummary, str] | None:
        """The stopping state the driver's end implies, with a message, or None if it runs."""
        if self.pod is None:
            return None
        if not self.deleted and self.phase not in POD_ENDED:
            state = classify_driver_pod(self.pod)
            if state.reason in _EVICTIONS:  # disrupted, deletion pending
                return AppStateSummary.DRIVER_EVICTED, state.message or str(state.reason)
            return None
        state = classify_driver_pod(self.pod)
        if self.phase == POD_SUCCEEDED or state.phase is AppPhase.SUCCEEDED:
            return AppStateSummary.SUCCEEDED, "Driver completed successfully"
        if state.reason in _EVICTIONS:
            return AppStateSummary.DRIVER_EVICTED, state.message or str(state.reason)
        if self.deleted and self.phase not in POD_ENDED:
            return AppStateSummary.FAILED, "Driver pod was deleted before it finished"
        detail = f" ({state.reason}: {bounded(state.message)})" if state.reason else ""
        return AppStateSummary.FAILED, f"Driver failed{detail}".rstrip()


MESSAGE_LIMIT = 1024
"""Bytes of the driver's own termination message the CR's status may carry."""
_STATUS_LISTS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def bounded(text: str | None, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes (marked when cut)."""
    raw = (text or "").encode()
    if len(raw) <= limit:
        return text or ""
    return raw[:limit].decode(errors="ignore") + " [truncated]"


def reported_status(pod: Obj) -> dict[str, Any]:
    """A driver pod's status fit for ``lastObservedDriverStatus``: the termination message of
    the driver's own main container only, at most :data:`MESSAGE_LIMIT` bytes; every other
    container's (init containers, sidecars) is dropped (issue 26: an init container wrote a
    Secret into ``/dev/termination-log`` and the status showed it to whoever reads the CR)."""
    out = copy.deepcopy(dict(pod.get("status") or {}))
    main = driver_container_status(pod)
    main_name = (main or {}).get("name")
    for key in _STATUS_LISTS:
        for cs in out.get(key) or ():
            own = key == "containerStatuses" and cs.get("name") == main_name
            for which in ("state", "lastState"):
                ended = (cs.get(which) or {}).get("terminated")
                if not isinstance(ended, dict) or "message" not in ended:
                    continue
                if own:
                    ended["message"] = bounded(str(ended["message"]))
                else:
                    del ended["message"]
    if "message" in out:
        out["message"] = bounded(str(out["message"]))
    return out


def _controlled_by(pod: Obj, uid: str) -> bool:
    """``pod`` is controlled by the custom resource ``uid`` (a SparkApplication, or the
    SparkConnect it stands for; any pod when ``uid`` is empty)."""
    return not uid or any(r.get("uid") == uid for r in owner_refs(pod))


def driver_view(observed: Observed, app_id: str) -> DriverView:
    """The driver of the attempt whose app ID is ``app_id`` and that ``observed.owner``
    controls: matched by label AND owner uid, so a predecessor's driver of the same name (same
    app ID) is never this resource's (live pods win over tombstones; newest tombstone first)."""

    def mine(pod: Obj) -> bool:
        return (
            _role(pod) == DRIVER_ROLE
            and _app_id(pod) == app_id
            and _controlled_by(pod, observed.owner)
        )

    for pod in observed.pods:
        if mine(pod):
            return DriverView(pod)
    for pod in observed.tombstones:
        if mine(pod):
            return DriverView(pod, deleted=True)
    return DriverView(None)


def executors_of(observed: Observed, app_id: str, driver: DriverView) -> list[Obj]:
    """Executors of ``app_id`` owned by the current driver pod (any phase, being deleted too)."""
    driver_uid = ((driver.pod or {}).get("metadata") or {}).get("uid")
    out = []
    for pod in observed.pods:
        if _role(pod) != EXECUTOR_ROLE or _app_id(pod) != app_id:
            continue
        owners = {r.get("uid") for r in (pod.get("metadata") or {}).get("ownerReferences") or []}
        if driver_uid and owners and driver_uid not in owners:
            continue
        out.append(pod)
    return out


def ready_executors(observed: Observed, app_id: str, driver: DriverView) -> int:
    """Executors of ``app_id`` that are Running and Ready, owned by the current driver pod."""
    count = 0
    for pod in executors_of(observed, app_id, driver):
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        ready = condition(pod, "Ready")
        phase = (pod.get("status") or {}).get("phase")
        if phase == POD_RUNNING and ready and ready.get("status") == "True":
            count += 1
    return count


def pods_of(observed: Observed, role: str) -> Sequence[Obj]:
    return [p for p in observed.pods if _role(p) == role]
