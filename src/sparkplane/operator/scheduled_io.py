"""The I/O half of ScheduledSparkApplication reconciliation (the runner's workers call it).

Owns :class:`ScheduleAdapter`, the kind's adapter for the generic loop
(:mod:`sparkplane.operator.loop`, which commits the status, runs the actions - create the due
run, delete replaced or surplus runs; AlreadyExists and NotFound count as done - and retries on
409 Conflict): it finds the schedule's runs among the cached SparkApplications (label
``sparkplane.io/scheduled-by=<name>`` and an ownerReference to the schedule's uid) and calls
the pure :func:`~sparkplane.operator.scheduled.decide_schedule`. Its notes (``RunCreated``,
``RunSkipped``, ``RunReplaced``) become Events on the schedule, one each.
Also :func:`schedule_of`, which maps a changed SparkApplication to the schedule that owns it.
Must not decide anything itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sparkplane.errors import KubeError
from sparkplane.kube.informer import Informer
from sparkplane.operator import states as st
from sparkplane.operator.scheduled import SCHEDULE_LABEL, SCHEDULED_AT, Run, decide_schedule
from sparkplane.operator.scheduled import parse_time as _parse
from sparkplane.operator.scheduled_spec import GROUP, KIND, VERSION

if TYPE_CHECKING:
    from sparkplane.kube import Kube
    from sparkplane.operator.runner import Operator

log = logging.getLogger(__name__)
API_VERSION = f"{GROUP}/{VERSION}"
Obj = dict[str, Any]


def informers(kube: Kube, namespaces: Iterable[str | None]) -> list[Informer]:
    """One ScheduledSparkApplication informer per watched namespace (None: all).

    None at all, with a warning, when the API server does not serve the kind (CRDs installed
    by an older sparkplane): applications and clusters are still reconciled.
    """
    try:
        kube.resource(API_VERSION, KIND)
    except KubeError as exc:
        if exc.code != 404:
            raise
        log.warning("%s is not served (run `sparkplane operator install`): no schedules", KIND)
        return []
    return [Informer(kube, API_VERSION, KIND, namespace=ns) for ns in namespaces]


def schedule_of(app: Obj) -> str | None:
    """The name of the ScheduledSparkApplication that owns SparkApplication ``app``, if any."""
    for ref in (app.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == KIND and str(ref.get("apiVersion", "")).startswith(GROUP):
            return str(ref["name"])
    return None


def runs_of(schedule: Obj, apps: Iterable[Obj]) -> list[Run]:
    """The schedule's runs among ``apps`` (matched by label and owner uid)."""
    meta = schedule["metadata"]
    found = []
    for app in apps:
        app_meta = app.get("metadata") or {}
        if (app_meta.get("labels") or {}).get(SCHEDULE_LABEL) != meta["name"]:
            continue
        owners = {r.get("uid") for r in app_meta.get("ownerReferences") or []}
        if meta.get("uid") not in owners:
            continue
        at = (app_meta.get("annotations") or {}).get(SCHEDULED_AT) or app_meta.get(
            "creationTimestamp"
        )
        states = tuple(st.history_states(app.get("status") or {}))
        found.append(Run(str(app_meta["name"]), _parse(str(at)), states))
    return found


class ScheduleAdapter:
    """ScheduledSparkApplications for the generic loop (:mod:`sparkplane.operator.loop`): runs
    found among the cached SparkApplications, decided by :func:`decide_schedule`. Its notes
    (``RunCreated``...) are Events of their own (``fold_events`` False)."""

    kind = KIND
    api_version = API_VERSION
    fold_events = False

    def __init__(self, op: Operator) -> None:
        self.op = op

    def watches(self) -> tuple[()]:
        return ()  # its runs are SparkApplications: the runner maps them (schedule_of)

    def resync(self) -> None:
        return None

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Any:
        namespace = cr["metadata"].get("namespace")
        apps = [
            a
            for a in self.op.cached("SparkApplication")
            if a["metadata"].get("namespace") == namespace
        ]
        decision = decide_schedule(cr, runs_of(cr, apps), self.op.clock())
        if create_error is not None:
            status = {
                **(cr.get("status") or {}),
                "reason": f"cannot create the run: {create_error}",
            }
            decision = type(decision)(status=status, requeue_after=decision.requeue_after)
        return decision
