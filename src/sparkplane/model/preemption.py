"""Detect that a pod was preempted, and by whom, from its conditions and the scheduler's events.

Owns :class:`Preemption` and :func:`find_preemption`. Called by ``lifecycle.state`` (to report a
distinct ``Preempted`` state) and by the events/monitoring shell. Pure: works on pod and event
dicts; never lists pods or events itself.

What Kubernetes leaves behind when the default scheduler preempts a pod (checked against the
kube-scheduler's preemption code, ``pkg/scheduler/framework/preemption``):

* before deleting the victim it sets the condition ``DisruptionTarget=True`` with reason
  ``PreemptionByScheduler`` and message ``"<scheduler>: preempting to accommodate a higher
  priority pod"`` (``... podgroup`` for gang preemption);
* it records an event on the victim with reason ``Preempted`` (action ``Preempting``), with the
  preemptor as the event's ``related`` object. The message is ``"Preempted by pod <uid> on node
  <node>"`` in current releases (v1.28+, still so in v1.36) and ``"Preempted by <ns>/<name> on
  node <node>"`` in older ones. Both are understood.

Volcano (as in the seed article) instead records ``Evict`` / ``"Pod is evicted, because of
preempt"``; the kubelet, preempting for a critical pod, sets ``status.reason=Preempting``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sparkplane.model.pods import (
    Obj,
    condition,
    event_message,
    event_time,
    events_about,
    meta,
    status,
)
from sparkplane.vocab import parse_time

#: ``DisruptionTarget`` reason the scheduler sets on a victim.
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_BY_UID = re.compile(r"^Preempted by pod (?P<uid>[^\s/]+) on node (?P<node>\S+)")
_BY_NAME = re.compile(r"^Preempted by (?P<ns>[^\s/]+)/(?P<name>\S+) on node (?P<node>\S+)")


@dataclass(frozen=True)
class Preemption:
    """A preemption of one pod. The preemptor is known from the scheduler's event only."""

    victim: str
    source: str  # "event", "condition" or "kubelet"
    message: str = ""
    at: datetime | None = None
    node: str | None = None
    preemptor_name: str | None = None
    preemptor_namespace: str | None = None
    preemptor_uid: str | None = None

    @property
    def preemptor(self) -> str | None:
        """``ns/name`` when known, else the preemptor's uid, else None."""
        if self.preemptor_name:
            ns = self.preemptor_namespace
            return f"{ns}/{self.preemptor_name}" if ns else self.preemptor_name
        return self.preemptor_uid


def parse_preempted_message(message: str) -> dict[str, str]:
    """Fields of a scheduler ``Preempted`` message: ``uid`` or ``namespace``+``name``, ``node``."""
    if match := _BY_UID.match(message):
        return {"uid": match["uid"], "node": match["node"]}
    if match := _BY_NAME.match(message):
        return {"namespace": match["ns"], "name": match["name"], "node": match["node"]}
    return {}


def _victim(pod: Obj) -> str:
    md = meta(pod)
    return f"{md.get('namespace')}/{md.get('name')}" if md.get("namespace") else str(md.get("name"))


def _from_event(pod: Obj, event: Obj) -> Preemption | None:
    reason = event.get("reason")
    message = event_message(event)
    if reason == "Preempted":
        fields = parse_preempted_message(message)
        related = event.get("related") or {}
        return Preemption(
            victim=_victim(pod),
            source="event",
            message=message,
            at=event_time(event),
            node=fields.get("node"),
            preemptor_name=related.get("name") or fields.get("name"),
            preemptor_namespace=related.get("namespace") or fields.get("namespace"),
            preemptor_uid=related.get("uid") or fields.get("uid"),
        )
    if reason in ("Evict", "Evicted") and "preempt" in message.lower():
        return Preemption(
            victim=_victim(pod), source="event", message=message, at=event_time(event)
        )
    return None


def find_preemption(pod: Obj, events: Iterable[Obj]) -> Preemption | None:
    """The preemption of ``pod``, if there was one.

    ``pod`` may be a stub (``{"metadata": {"name", "namespace"}}``) when the pod is already gone:
    the events outlive it. The newest scheduler event wins since it names the preemptor; the
    ``DisruptionTarget`` condition is used when no event was seen (events are best-effort).
    """
    for event in reversed(events_about(events, pod)):
        found = _from_event(pod, event)
        if found:
            return found
    cond = condition(pod, "DisruptionTarget")
    if cond and cond.get("status") == "True" and cond.get("reason") == PREEMPTION_BY_SCHEDULER:
        return Preemption(
            victim=_victim(pod),
            source="condition",
            message=str(cond.get("message") or ""),
            at=parse_time(cond.get("lastTransitionTime")),
            node=((pod.get("spec") or {}).get("nodeName")),
        )
    if status(pod).get("reason") == "Preempting":
        return Preemption(
            victim=_victim(pod),
            source="kubelet",
            message=str(status(pod).get("message") or ""),
            node=((pod.get("spec") or {}).get("nodeName")),
        )
    return None


def resolve_preemptor(preemption: Preemption, pods: Sequence[Obj]) -> Preemption:
    """Fill in the preemptor's name from a list of pods when the event only gave its uid."""
    if preemption.preemptor_name or not preemption.preemptor_uid:
        return preemption
    for pod in pods:
        md = meta(pod)
        if md.get("uid") == preemption.preemptor_uid:
            return replace(
                preemption, preemptor_name=md.get("name"), preemptor_namespace=md.get("namespace")
            )
    return preemption
