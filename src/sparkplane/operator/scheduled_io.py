"""The I/O half of ScheduledSparkApplication reconciliation (the runner's workers call it).

Owns :func:`reconcile`: read the schedule (cache first), find its runs among the cached
SparkApplications (label ``sparkplane.io/scheduled-by=<name>`` and an ownerReference to the
schedule's uid), call the pure :func:`~sparkplane.operator.scheduled.decide_schedule`, run its
actions (create the due run, delete replaced or surplus runs; AlreadyExists and NotFound count
as done) and write ``.status`` through the status subresource, retrying on 409 Conflict. Its
notes (``RunCreated``, ``RunSkipped``, ``RunReplaced``) become Events on the schedule.
Also :func:`schedule_of`, which maps a changed SparkApplication to the schedule that owns it.
Must not decide anything itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sparkplane.errors import ConflictError, KubeError, NotFoundError
from sparkplane.kube.informer import Informer
from sparkplane.operator import actions
from sparkplane.operator import states as st
from sparkplane.operator.scheduled import SCHEDULE_LABEL, SCHEDULED_AT, Run, decide_schedule
from sparkplane.operator.scheduled import parse_time as _parse
from sparkplane.operator.scheduled_spec import GROUP, KIND, VERSION

if TYPE_CHECKING:
    from sparkplane.kube import Kube
    from sparkplane.operator.runner import Key, Operator

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


def reconcile(op: Operator, key: Key) -> float | None:
    """One pass for one ScheduledSparkApplication; returns the requeue delay."""
    cr = op.current(key)
    if cr is None or (cr.get("metadata") or {}).get("deletionTimestamp"):
        return None
    _, namespace, name = key
    for _ in range(5):
        apps = [a for i in op.apps for a in i.list() if a["metadata"].get("namespace") == namespace]
        decision = decide_schedule(cr, runs_of(cr, apps), op.clock())
        try:
            actions.run(op.kube, decision.actions, op.requests)
        except actions.CreateRejected as exc:
            status = {**(cr.get("status") or {}), "reason": f"cannot create the run: {exc}"}
            decision = type(decision)(status=status, requeue_after=decision.requeue_after)
        if decision.status is not None:
            try:
                written = op.kube.replace({**cr, "status": decision.status}, subresource="status")
            except ConflictError:
                cr = op.kube.get(API_VERSION, KIND, name, namespace)
                continue
            except NotFoundError:
                return None
            written.setdefault("apiVersion", API_VERSION)
            written.setdefault("kind", KIND)
            op.remember(key, written)
            cr = written
        for note in decision.transitions:
            op.events.record(cr, note)
        return decision.requeue_after
    raise ConflictError(f"{KIND} {namespace}/{name}: status kept changing")
