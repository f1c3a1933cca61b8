"""The ScheduledSparkApplication kind for the generic loop: its runs in, ``decide_schedule`` out.

Owns the index of the runs (SparkApplications labelled ``sparkplane.io/scheduled-by=<name>``,
from their informer's events; a run's change wakes its schedule, so history limits apply as
soon as a run finishes) and :func:`runs_of`, which keeps only those owned by the schedule's
uid. Decisions come from the pure :func:`~sparkplane.operator.core.scheduled.decide_schedule`;
writing, conflict retry and fencing are the loop's (:mod:`sparkplane.operator.runtime.loop`). Its
notes (``RunCreated``, ``RunSkipped``, ``RunReplaced``) become Events on the schedule.
:func:`served` lets the runner start without schedules when their CRD is not installed.
Called by the runner. Writes nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sparkplane.kube import Kube
from sparkplane.operator.core.decision import CreateResources, Decision
from sparkplane.operator.core.scheduled import Run, decide_schedule
from sparkplane.operator.core.scheduled_spec import APACHE_SCHEDULE, KIND, ScheduleKind
from sparkplane.operator.core.settings import Limits
from sparkplane.operator.kinds.adapter import Key, Watch, queue_kind
from sparkplane.vocab import (
    SCHEDULED_AT_ANNOTATION,
    SCHEDULED_BY_LABEL,
    SPARK_APPLICATION,
    parse_time,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def served(kube: Kube, kind: ScheduleKind = APACHE_SCHEDULE) -> bool:
    """Whether the API server serves the kind under ``kind``'s API (False, with a warning,
    for older CRDs)."""
    if kube.serves(kind.api_version, KIND):
        return True
    log.warning(
        "%s %s is not served (run `sparkplane operator install`): no schedules of that API",
        kind.api_version,
        KIND,
    )
    return False


def runs_of(schedule: Obj, apps: Iterable[Obj], kind: ScheduleKind = APACHE_SCHEDULE) -> list[Run]:
    """The schedule's runs among ``apps`` (matched by label and owner uid)."""
    meta = schedule["metadata"]
    found = []
    for app in apps:
        app_meta = app.get("metadata") or {}
        if (app_meta.get("labels") or {}).get(SCHEDULED_BY_LABEL) != meta["name"]:
            continue
        if meta.get("uid") not in {r.get("uid") for r in app_meta.get("ownerReferences") or []}:
            continue
        annotations = app_meta.get("annotations") or {}
        at = parse_time(annotations.get(SCHEDULED_AT_ANNOTATION)) or parse_time(
            app_meta.get("creationTimestamp")
        )
        if at is None:  # neither time readable: not a run this schedule can place
            continue
        states = kind.run_states(app.get("status") or {})
        found.append(Run(str(app_meta["name"]), at, states))
    return found


class ScheduleAdapter:
    """ScheduledSparkApplications of one API (``schedule``: sparkplane's or Kubeflow's):
    their runs in, :func:`decide_schedule` out. Registered under :attr:`queue` (Kubeflow's
    kind name is sparkplane's too)."""

    kind = KIND

    def __init__(
        self,
        clock: Callable[[], datetime],
        limits: Limits | None = None,
        schedule: ScheduleKind = APACHE_SCHEDULE,
    ) -> None:
        self.clock = clock
        self.limits = limits or Limits()
        self.schedule = schedule
        self.api_version = schedule.api_version
        self.queue = queue_kind(schedule.api_version, KIND)
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str], dict[str, Obj]] = {}

    def watches(self) -> Sequence[Watch]:
        run = self.schedule.run_api_version
        return (Watch(run, SPARK_APPLICATION, SCHEDULED_BY_LABEL, self._on_run),)

    def _on_run(self, event: str, obj: Obj) -> Iterable[Key]:
        meta = obj.get("metadata") or {}
        owner = (meta.get("labels") or {}).get(SCHEDULED_BY_LABEL)
        if not owner:
            return ()
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        with self._lock:
            bucket = self._runs.setdefault((namespace, str(owner)), {})
            if event == "DELETED":
                bucket.pop(name, None)
            else:
                bucket[name] = obj
            if not bucket:
                self._runs.pop((namespace, str(owner)), None)
        return ((self.queue, namespace, str(owner)),)

    def resync(self) -> None:
        return None

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Decision:
        meta = cr["metadata"]
        with self._lock:
            apps = list(self._runs.get((str(meta["namespace"]), str(meta["name"])), {}).values())
        decision = decide_schedule(cr, runs_of(cr, apps, self.schedule), self.clock(), self.limits)
        if create_error is None:
            return decision
        status = {**(decision.status or cr.get("status") or {})}
        status["reason"] = f"cannot create the run: {create_error}"
        kept = tuple(a for a in decision.actions if not isinstance(a, CreateResources))
        return replace(decision, status=status, actions=kept)
