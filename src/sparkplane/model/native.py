"""State of a natively submitted application: its driver pod is the application.

Owns :func:`classify_native`, :func:`classify_driver_pod` and :func:`node_lost` (a lost node
is not an end: ``wait`` keeps waiting while the driver may still run). Called through
``sparkplane.model`` by the use cases (get/list/wait/watch), and by ``model.crstate`` to refine
an operator's coarse states with what the driver pod shows (:func:`classify_driver_pod`, which the
operator also reads, keeps its meaning: a disrupted pod is evicted). Pure: no I/O; pods and
events are plain dicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sparkplane.model.phase import STUCK_REASONS, AppPhase, AppState, Reason, count_executors
from sparkplane.model.pods import (
    Obj,
    condition,
    driver_container_status,
    event_message,
    event_time,
    events_about,
    finished_at,
    meta,
    running,
    status,
    terminated,
    waiting,
)
from sparkplane.model.preemption import find_preemption
from sparkplane.vocab import (
    KUEUE_ADMISSION_GATE,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    POD_SUCCEEDED,
    POD_UNKNOWN,
    QUEUE_NAME_LABEL,
    parse_time,
)

_DISRUPTIONS = {
    "EvictionByEvictionAPI": (Reason.EVICTED, "evicted through the Eviction API (e.g. a drain)"),
    "DeletionByTaintManager": (Reason.EVICTED, "deleted by the taint manager (NoExecute taint)"),
    "TerminationByKubelet": (Reason.EVICTED, "terminated by the kubelet (node pressure/shutdown)"),
    "DeletionByPodGC": (Reason.NODE_LOST, "deleted by the pod garbage collector (node gone)"),
}
_STATUS_REASONS = {
    "Evicted": Reason.EVICTED,
    "Terminated": Reason.EVICTED,  # graceful node shutdown
    "Shutdown": Reason.EVICTED,
    "NodeLost": Reason.NODE_LOST,
    "DeadlineExceeded": Reason.TIMED_OUT,  # activeDeadlineSeconds
}
_WAITING_REASONS = {r.value: r for r in (*STUCK_REASONS, Reason.CRASH_LOOP_BACK_OFF)}
_WAITING_REASONS |= {"ContainerCreating": Reason.CONTAINER_CREATING}
_WAITING_REASONS |= {"PodInitializing": Reason.CONTAINER_CREATING}


def classify_native(
    driver_pod: Obj | None,
    executor_pods: Sequence[Obj],
    events: Sequence[Obj],
    *,
    driver_name: str | None = None,
    driver_container: str | None = None,
    deleted: bool = False,
) -> AppState:
    """The state of a natively submitted app from its driver pod, executors and events.

    Precedence: success, then a lost node (:func:`node_lost`: not an end while the pod exists,
    the driver may still run), then disruption (preemption, eviction), then a timeout, then
    a deletion in progress (``Killed``), then the pod phase and container states. ``deleted``:
    ``driver_pod`` is the last state of a pod that is gone (a real end, lost node or not). When
    the driver pod is gone, ``driver_name`` lets the events still tell a preemption or eviction
    apart; callers must rule out a stale cache before trusting ``DriverMissing``.
    """
    execs = count_executors(executor_pods)
    if driver_pod is None:
        return _missing_driver(driver_name, events, execs)
    lost = None if deleted else node_lost(driver_pod)
    if lost is not None:
        phase = AppPhase.PENDING if status(driver_pod).get("phase") == POD_PENDING else None
        return AppState(
            phase or AppPhase.RUNNING,
            Reason.UNKNOWN,
            f"{lost}; the driver may still run: waiting until its pod ends or is deleted",
            driver=meta(driver_pod).get("name"),
            executors=execs,
            since=_lost_since(driver_pod),
        )
    return classify_driver_pod(driver_pod, events, container=driver_container, executors=execs)


def node_lost(pod: Obj) -> str | None:
    """Why the pod's node looks lost (its kubelet stopped reporting), else None; never for a pod
    that ended (phase Succeeded or Failed).

    Then the pod no longer says what the driver does: on a partitioned node it still runs, even
    once the taint manager asks for its deletion (``DisruptionTarget``, a ``deletionTimestamp``)
    or the node controller writes ``status.reason: NodeLost``. The signs: phase ``Unknown``,
    ``status.reason`` ``NodeLost``, or ``Ready`` set False by the node controller (which leaves
    ``ContainersReady`` True: the kubelet always sets both)."""
    st = status(pod)
    phase = st.get("phase")
    if phase in ("Succeeded", "Failed"):
        return None
    node = ((pod.get("spec") or {}).get("nodeName")) or "?"
    if phase == POD_UNKNOWN:
        return f"node {node} stopped reporting the driver pod (phase Unknown)"
    if st.get("reason") == "NodeLost":
        return str(st.get("message") or f"node {node} is unresponsive (NodeLost)")
    ready, containers = condition(pod, "Ready"), condition(pod, "ContainersReady")
    if (
        ready is not None
        and ready.get("status") != "True"
        and ready.get("reason") != "ReadinessGatesNotReady"
        and containers is not None
        and containers.get("status") == "True"
    ):
        return f"node {node} is not ready (the node controller marked the driver pod not Ready)"
    return None


def _lost_since(pod: Obj) -> datetime | None:
    ready = condition(pod, "Ready") or {}
    return parse_time(ready.get("lastTransitionTime")) if ready.get("status") != "True" else None


def classify_driver_pod(
    pod: Obj,
    events: Sequence[Obj] = (),
    *,
    container: str | None = None,
    executors: dict[str, int] | None = None,
) -> AppState:
    """The state one driver pod shows (see :func:`classify_native` for the precedence)."""
    found = _classify_pod(pod, events, container)
    return AppState(driver=meta(pod).get("name"), executors=executors or {}, **found)


def _classify_pod(pod: Obj, events: Sequence[Obj], container: str | None) -> dict[str, Any]:
    st = status(pod)
    phase = st.get("phase") or POD_PENDING
    main = driver_container_status(pod, container)
    if phase == POD_SUCCEEDED:
        return _done(AppPhase.SUCCEEDED, Reason.COMPLETED, "driver completed", finished_at(pod))
    if preemption := find_preemption(pod, events):
        msg = preemption.message or "preempted by a higher-priority pod"
        found = _done(AppPhase.FAILED, Reason.PREEMPTED, msg, preemption.at)
        return {**found, "preemptor": preemption.preemptor}
    if kueue := _kueue_stopped(pod):
        return kueue
    disruption = condition(pod, "DisruptionTarget")
    if disruption and disruption.get("status") == "True":
        reason, why = _DISRUPTIONS.get(str(disruption.get("reason")), (Reason.EVICTED, "disrupted"))
        when = parse_time(disruption.get("lastTransitionTime"))
        return _done(AppPhase.FAILED, reason, str(disruption.get("message") or why), when)
    if st.get("reason") in _STATUS_REASONS:
        text = str(st.get("message") or st.get("reason"))
        return _done(AppPhase.FAILED, _STATUS_REASONS[st["reason"]], text, finished_at(pod))
    if killed_at := _killed_at(pod):
        return _done(AppPhase.FAILED, Reason.KILLED, "driver pod deleted", killed_at)
    if phase == POD_FAILED or terminated(main):
        return _terminated(pod, main)
    if phase == POD_RUNNING:
        if (wait := waiting(main)) and wait.get("reason") in _WAITING_REASONS:
            reason = _WAITING_REASONS[wait["reason"]]
            return _done(AppPhase.RUNNING, reason, wait.get("message"), None)
        started = (running(main) or {}).get("startedAt") or st.get("startTime")
        return _done(AppPhase.RUNNING, Reason.NONE, "", parse_time(started))
    if phase == POD_PENDING:
        return _pending(pod)
    return _done(AppPhase.RUNNING, Reason.UNKNOWN, f"driver pod phase {phase}", None)


def _done(phase: AppPhase, reason: str, message: object, since: datetime | None) -> dict[str, Any]:
    return {"phase": phase, "reason": reason, "message": str(message or ""), "since": since}


def _killed_at(pod: Obj) -> datetime | None:
    """When the deletion was asked for, if the pod was deleted while running or died of it.

    ``deletionTimestamp`` is the request time plus the grace period.
    """
    md = meta(pod)
    deleted = parse_time(md.get("deletionTimestamp"))
    if deleted is None:
        return None
    requested = deleted - timedelta(seconds=int(md.get("deletionGracePeriodSeconds") or 0))
    ended = finished_at(pod) if status(pod).get("phase") == POD_FAILED else None
    return requested if ended is None or ended >= requested else None


def _terminated(pod: Obj, main: Obj | None) -> dict[str, Any]:
    for cs in status(pod).get("initContainerStatuses") or ():
        term = terminated(cs)
        if term and term.get("exitCode", 0) != 0:
            text = f"init container {cs.get('name')} exited with code {term.get('exitCode')}"
            return _done(AppPhase.FAILED, Reason.ERROR, text, finished_at(pod))
    term = terminated(main) or {}
    code = term.get("exitCode")
    when = parse_time(term.get("finishedAt")) or finished_at(pod)
    if code == 0:
        return _done(AppPhase.SUCCEEDED, Reason.COMPLETED, "driver completed", when)
    if term.get("reason") == "OOMKilled":
        return _done(AppPhase.FAILED, Reason.OOM_KILLED, "driver container ran out of memory", when)
    text = f"driver container exited with code {code}" if code is not None else "driver failed"
    detail = term.get("message") or status(pod).get("message")
    return _done(AppPhase.FAILED, Reason.ERROR, f"{text}: {detail}" if detail else text, when)


#: the pod condition Kueue's Pod integration sets on a pod it stops, before deleting it
#: (its reason: ``WorkloadEvicted``, ``WorkloadEvictedDueToPreempted``, ``NotAdmitted``, ...)
KUEUE_TERMINATION_TARGET = "TerminationTarget"
#: the Event reason Kueue's job framework writes on the pod it stops
KUEUE_STOPPED = "Stopped"
EVICTED_BY_KUEUE = "evicted by Kueue"


def _kueue_stopped(pod: Obj) -> dict[str, Any] | None:
    """A driver Kueue stopped (its admission taken back: a preemption, an eviction): the app
    ends, Failed/Evicted, and says so; nothing requeues a native app (docs/queues.md)."""
    stopped = condition(pod, KUEUE_TERMINATION_TARGET)
    if not stopped or stopped.get("status") != "True":
        return None
    why = stopped.get("message") or stopped.get("reason") or "its admission was taken back"
    when = parse_time(stopped.get("lastTransitionTime"))
    return _done(AppPhase.FAILED, Reason.EVICTED, f"{EVICTED_BY_KUEUE}: {why}", when)


def _admission_pending(pod: Obj) -> dict[str, Any] | None:
    """A driver Kueue's Pod integration holds (its scheduling gate) until its one-pod Workload
    is admitted in the LocalQueue the pod names."""
    gates = [g.get("name") for g in (pod.get("spec") or {}).get("schedulingGates") or ()]
    if KUEUE_ADMISSION_GATE not in gates:
        return None
    queue = (meta(pod).get("labels") or {}).get(QUEUE_NAME_LABEL, "?")
    text = (
        f"waiting for Kueue to admit the driver in LocalQueue {queue!r} (its Workload: "
        f"kubectl get workloads -n {meta(pod).get('namespace') or 'default'})"
    )
    created = parse_time(meta(pod).get("creationTimestamp"))
    return _done(AppPhase.PENDING, Reason.ADMISSION_PENDING, text, created)


def _pending(pod: Obj) -> dict[str, Any]:
    if queued := _admission_pending(pod):
        return queued
    scheduled = condition(pod, "PodScheduled")
    if scheduled and scheduled.get("status") == "False":
        reason = {"Unschedulable": Reason.UNSCHEDULABLE, "SchedulingGated": Reason.SCHEDULING_GATED}
        when = parse_time(scheduled.get("lastTransitionTime"))
        if scheduled.get("reason") in reason:
            text = scheduled.get("message")
            return _done(AppPhase.PENDING, reason[scheduled["reason"]], text, when)
    statuses = [*(status(pod).get("initContainerStatuses") or ())]
    statuses += status(pod).get("containerStatuses") or ()
    for cs in statuses:
        wait = waiting(cs) or {}
        if wait.get("reason") in _WAITING_REASONS:
            text = wait.get("message") or f"container {cs.get('name')}: {wait['reason']}"
            return _done(AppPhase.PENDING, _WAITING_REASONS[wait["reason"]], text, None)
    created = parse_time(meta(pod).get("creationTimestamp"))
    return _done(AppPhase.PENDING, Reason.NONE, "", created)


def _missing_driver(name: str | None, events: Sequence[Obj], execs: dict[str, int]) -> AppState:
    if name:
        stub = {"kind": "Pod", "metadata": {"name": name}}
        if preemption := find_preemption(stub, events):
            return AppState(
                AppPhase.FAILED,
                Reason.PREEMPTED,
                preemption.message or "driver pod preempted",
                preemptor=preemption.preemptor,
                driver=name,
                executors=execs,
                since=preemption.at,
            )
        for event in reversed(events_about(events, stub)):
            if stopped_by_kueue(event):
                msg = f"{EVICTED_BY_KUEUE}: {event_message(event)}"
                return AppState(
                    AppPhase.FAILED, Reason.EVICTED, msg, None, name, execs, event_time(event)
                )
            if event.get("reason") == "Evicted":
                msg, when = event_message(event), event_time(event)
                return AppState(AppPhase.FAILED, Reason.EVICTED, msg, None, name, execs, when)
    text = f"driver pod {name} not found" if name else "driver pod not found"
    return AppState(AppPhase.FAILED, Reason.DRIVER_MISSING, text, None, name, execs)


def stopped_by_kueue(event: Obj) -> bool:
    """Kueue's ``Stopped`` Event on the pod (written by its pod controller, e.g.
    ``pod-kueue-controller``)."""
    source = (event.get("source") or {}).get("component") or event.get("reportingComponent")
    return event.get("reason") == KUEUE_STOPPED and "kueue" in str(source or "")
