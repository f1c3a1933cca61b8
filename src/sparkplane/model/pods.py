"""Small readers over raw Kubernetes pod and event dicts (camelCase, as the API returns them).

Owns: condition and container-status lookup, choosing the driver container,
and matching an event to the object it is about. Called by the pure state classifiers
(``lifecycle.state``, ``lifecycle.preemption``, ``lifecycle.ttl``). Must not do I/O or import the
Kubernetes client: everything here is a function of the dicts it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sparkplane.vocab import DRIVER_CONTAINER, parse_time

Obj = Mapping[str, Any]

#: The container name Spark gives the driver unless a pod template names another one.


def meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def status(obj: Obj | None) -> Obj:
    return (obj or {}).get("status") or {}


def condition(pod: Obj | None, kind: str) -> Obj | None:
    """The pod condition of that type (``PodScheduled``, ``Ready``, ``DisruptionTarget``...)."""
    for cond in status(pod).get("conditions") or ():
        if cond.get("type") == kind:
            return cond  # type: ignore[no-any-return]
    return None


def driver_container_status(pod: Obj | None, container: str | None = None) -> Obj | None:
    """The status of the driver's main container.

    Spark names it ``spark-kubernetes-driver``; with a pod template it may be any name, and Spark
    then puts it first in ``spec.containers``. ``container`` overrides both guesses.
    """
    statuses: list[Obj] = list(status(pod).get("containerStatuses") or ())
    if not statuses:
        return None
    spec_containers = ((pod or {}).get("spec") or {}).get("containers") or ()
    candidates = [container] if container else []
    candidates.append(DRIVER_CONTAINER)
    if spec_containers:
        candidates.append(spec_containers[0].get("name"))
    for name in candidates:
        for st in statuses:
            if st.get("name") == name:
                return st
    return statuses[0]


def terminated(container_status: Obj | None) -> Obj | None:
    return ((container_status or {}).get("state") or {}).get("terminated")


def waiting(container_status: Obj | None) -> Obj | None:
    return ((container_status or {}).get("state") or {}).get("waiting")


def running(container_status: Obj | None) -> Obj | None:
    return ((container_status or {}).get("state") or {}).get("running")


def all_container_statuses(pod: Obj | None) -> list[Obj]:
    """Init containers first, then the main ones: the order in which they block a pod."""
    st = status(pod)
    return [*(st.get("initContainerStatuses") or ()), *(st.get("containerStatuses") or ())]


def finished_at(pod: Obj | None) -> datetime | None:
    """When a finished pod finished: the latest container ``terminated.finishedAt``.

    Falls back to the ``Ready``/``ContainersReady`` condition's last transition (set when the
    containers stopped), then to the newest condition transition of any kind.
    """
    times = [
        parse_time((terminated(cs) or {}).get("finishedAt")) for cs in all_container_statuses(pod)
    ]
    known = [t for t in times if t is not None]
    if known:
        return max(known)
    for kind in ("Ready", "ContainersReady"):
        cond = condition(pod, kind)
        if cond and cond.get("status") == "False":
            when = parse_time(cond.get("lastTransitionTime"))
            if when:
                return when
    conds = [parse_time(c.get("lastTransitionTime")) for c in status(pod).get("conditions") or ()]
    known = [t for t in conds if t is not None]
    return max(known) if known else None


def event_time(event: Obj) -> datetime | None:
    """When an event last happened, for core/v1 and events.k8s.io/v1 shapes alike."""
    series = event.get("series") or {}
    for value in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("deprecatedLastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        event.get("deprecatedFirstTimestamp"),
        meta(event).get("creationTimestamp"),
    ):
        when = parse_time(value)
        if when:
            return when
    return None


def event_subject(event: Obj) -> Obj:
    """The object an event is about (``involvedObject`` in core/v1, ``regarding`` in events/v1)."""
    return event.get("involvedObject") or event.get("regarding") or {}


def event_message(event: Obj) -> str:
    return str(event.get("message") or event.get("note") or "")


def event_is_about(event: Obj, obj: Obj) -> bool:
    """True when the event concerns ``obj``: same uid when both have one, else same name/ns."""
    subject = event_subject(event)
    md = meta(obj)
    if subject.get("kind", "Pod") != obj.get("kind", "Pod"):
        return False
    if subject.get("uid") and md.get("uid"):
        return bool(subject["uid"] == md["uid"])
    same_ns = not subject.get("namespace") or not md.get("namespace")
    same_ns = same_ns or subject.get("namespace") == md.get("namespace")
    return bool(subject.get("name") == md.get("name") and same_ns)


def events_about(events: Iterable[Obj], obj: Obj) -> list[Obj]:
    """The events about ``obj``, oldest first (events without a time sort first)."""
    mine = [e for e in events if event_is_about(e, obj)]
    return sorted(mine, key=lambda e: event_time(e) or datetime.min.replace(tzinfo=UTC))
