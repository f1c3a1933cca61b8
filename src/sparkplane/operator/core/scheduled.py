"""When a ScheduledSparkApplication runs, and what it creates and deletes: a pure decide function.

Owns :func:`next_after` (the first schedule time after an instant, in the schedule's time zone,
via ``croniter``; ``@every`` intervals count from the resource's creation) and
:func:`decide_schedule` (the resource, its runs as observed, the time → a
:class:`~sparkplane.operator.core.decision.Decision`):

* The latest schedule time in ``(lastRun, now]`` is due, where ``lastRun`` is the newest run
  seen (or the status's, or the creation time); older missed times are skipped (as a CronJob
  with many missed runs). A run moves ``lastRun`` only once it is observed, so whichever
  order a runner writes status and creates in, a crash in between never loses a run (the
  next pass creates it under the same name). A suspended schedule creates nothing but still
  moves ``lastRun`` on, so resuming does not replay the pause.
* A due run with an unfinished earlier run (not yet ``ResourceReleased`` /
  ``TerminatedWithoutReleaseResources``): ``Allow`` creates it anyway, ``Forbid`` skips it,
  ``Replace`` deletes the unfinished runs and creates it.
* A run is the SparkApplication (``spark.apache.org/v1``; for Kubeflow's API
  ``sparkoperator.k8s.io/v1beta2``) ``<name>-<unix seconds of the schedule time>``
  (deterministic, so a repeated reconcile never makes two; Kubeflow's own operator appends
  the creation time in nanoseconds) with ``template`` as spec, the ``runMetadata``, the
  label ``sparkplane.io/scheduled-by`` (:data:`~sparkplane.vocab.SCHEDULED_BY_LABEL`) and an
  ownerReference to the schedule.
* Finished runs beyond ``successfulRunHistoryLimit`` / ``failedRunHistoryLimit`` (oldest first)
  are deleted. ``status`` as Kubeflow's: ``scheduleState``, ``reason``, ``lastRun``,
  ``lastRunName``, ``nextRun``, ``pastSuccessfulRunNames``, ``pastFailedRunNames``.

Called by the runner's ScheduledSparkApplication adapter. Pure: no I/O, the clock is an argument.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pydantic
from croniter import croniter

from sparkplane.operator.core import bounds
from sparkplane.operator.core.decision import CreateResources, Decision, DeleteResources, Transition
from sparkplane.operator.core.driver import owner_ref
from sparkplane.operator.core.scheduled_spec import (
    ConcurrencyPolicy,
    ScheduleFields,
    every,
    schedule_kind,
)
from sparkplane.operator.core.settings import Limits
from sparkplane.operator.core.states import AppStateSummary as A
from sparkplane.vocab import (
    SCHEDULED_AT_ANNOTATION,
    SCHEDULED_BY_LABEL,
    SPARK_APPLICATION,
    format_time,
    parse_time,
)

Obj = dict[str, Any]
FINISHED = frozenset({A.RESOURCE_RELEASED, A.TERMINATED_WITHOUT_RELEASE_RESOURCES})


@dataclass(frozen=True)
class Run:
    """One SparkApplication the schedule created, as observed."""

    name: str
    scheduled: datetime
    states: tuple[str, ...]

    @property
    def finished(self) -> bool:
        return bool(self.states) and self.states[-1] in FINISHED

    @property
    def succeeded(self) -> bool:
        return self.finished and A.SUCCEEDED in self.states


def next_after(spec: ScheduleFields, after: datetime, origin: datetime) -> datetime:
    """The first schedule time strictly after ``after`` (``origin``: where ``@every`` starts)."""
    interval = every(spec.schedule)
    if interval is not None:
        steps = int((after - origin) / interval) + 1 if after >= origin else 0
        return origin + steps * interval
    local = after.astimezone(ZoneInfo(spec.time_zone))
    nxt: datetime = croniter(spec.schedule, local).get_next(datetime)
    return nxt.astimezone(UTC)


def latest_due(
    spec: ScheduleFields, since: datetime, now: datetime, origin: datetime
) -> datetime | None:
    """The last schedule time in ``(since, now]``, or None."""
    due = None
    at = next_after(spec, since, origin)
    for _ in range(100_000):  # a schedule far behind: stop at the newest time, not the first
        if at > now:
            break
        due = at
        at = next_after(spec, at, origin)
    return due


def run_name(schedule_name: str, at: datetime) -> str:
    return f"{schedule_name}-{int(at.timestamp())}"


def build_run(cr: Mapping[str, Any], spec: ScheduleFields, at: datetime) -> Obj:
    """The SparkApplication of the run scheduled at ``at`` (of the schedule's API: Apache's
    for ``sparkplane.io``, v1beta2 for Kubeflow's)."""
    meta = cr["metadata"]
    labels = {**spec.run_metadata.labels, SCHEDULED_BY_LABEL: str(meta["name"])}
    annotations = {**spec.run_metadata.annotations, SCHEDULED_AT_ANNOTATION: format_time(at)}
    template = (cr.get("spec") or {}).get("template") or {}
    return {
        "apiVersion": schedule_kind(cr.get("apiVersion")).run_api_version,
        "kind": SPARK_APPLICATION,
        "metadata": {
            "name": run_name(str(meta["name"]), at),
            "namespace": meta.get("namespace") or "default",
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_ref(cr)],
        },
        "spec": copy.deepcopy(template),
    }


def _trim(runs: Sequence[Run], keep: int) -> tuple[list[Run], list[Run]]:
    ordered = sorted(runs, key=lambda r: r.scheduled, reverse=True)
    return ordered[:keep], ordered[keep:]


def _refused(old: Obj, reason: str, now: datetime) -> Decision:
    """``FailedValidation`` with ``reason``; a Warning Event when it is new."""
    status = {**copy.deepcopy(old), "scheduleState": "FailedValidation", "reason": reason}
    if status == old:
        return Decision()
    return Decision(
        status=status,
        transitions=(Transition(None, "FailedValidation", reason, now, warning=True),),
    )


def decide_schedule(
    cr: Mapping[str, Any], runs: Sequence[Run], now: datetime, limits: Limits | None = None
) -> Decision:
    """The next status and actions of a ScheduledSparkApplication.

    A schedule that does not parse, or fires more often than ``limits.min_schedule_seconds``
    (:func:`sparkplane.operator.core.bounds.schedule_problem`), is ``FailedValidation``: no run.
    """
    old = cr.get("status") or {}
    status: Obj = copy.deepcopy(old)
    meta = cr["metadata"]
    namespace = str(meta.get("namespace") or "default")
    kind = schedule_kind(cr.get("apiVersion"))
    try:
        spec = kind.spec_model.model_validate(cr.get("spec") or {})
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"spec.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
        )
        return _refused(old, problems, now)
    interval = every(spec.schedule)
    too_often = bounds.schedule_problem(spec.schedule, spec.time_zone, interval, limits or Limits())
    if too_often:
        return _refused(old, too_often, now)
    created = parse_time(meta.get("creationTimestamp") or format_time(now)) or now
    since = parse_time(status.get("lastRun")) or created
    live = list(runs)
    newest = max(live, key=lambda r: r.scheduled, default=None)
    transitions: list[Transition] = []
    if newest is not None and newest.scheduled >= since:
        # A run is recorded once it is seen, so a crash between deciding and creating it
        # only means it is created (same name) on the next pass.
        since = newest.scheduled
        status["lastRun"] = format_time(since)
        if status.get("lastRunName") != newest.name:
            transitions.append(Transition(None, "RunCreated", newest.name, now))
        status["lastRunName"] = newest.name
    actions: list[Any] = []
    due = latest_due(spec, since, now, created)
    if due is not None:
        active = [r for r in live if not r.finished]
        name = run_name(str(meta["name"]), due)
        if spec.suspend:
            status["lastRun"] = format_time(due)
        elif active and spec.concurrency_policy is ConcurrencyPolicy.FORBID:
            status["lastRun"] = format_time(due)
            transitions.append(Transition(None, "RunSkipped", f"{name}: earlier run active", now))
        else:
            if active and spec.concurrency_policy is ConcurrencyPolicy.REPLACE:
                refs = tuple((kind.run_api_version, SPARK_APPLICATION, r.name) for r in active)
                actions.append(DeleteResources(namespace, refs))
                live = [r for r in live if r.finished]
                transitions.append(
                    Transition(None, "RunReplaced", ", ".join(r.name for r in active), now)
                )
            actions.append(CreateResources(namespace, (build_run(cr, spec, due),), ""))
    kept_ok, old_ok = _trim([r for r in live if r.succeeded], spec.successful_run_history_limit)
    failed = [r for r in live if r.finished and not r.succeeded]
    kept_bad, old_bad = _trim(failed, spec.failed_run_history_limit)
    if old_ok or old_bad:
        refs = tuple((kind.run_api_version, SPARK_APPLICATION, r.name) for r in (*old_ok, *old_bad))
        actions.append(DeleteResources(namespace, refs))
    nxt = next_after(spec, max(now, since), created)
    if any(isinstance(a, CreateResources) for a in actions):
        nxt = min(nxt, now + timedelta(seconds=1))  # come back to record the run
    status.update(
        scheduleState="Scheduled",
        reason="suspended" if spec.suspend else "",
        nextRun=format_time(nxt),
        pastSuccessfulRunNames=[r.name for r in kept_ok],
        pastFailedRunNames=[r.name for r in kept_bad],
    )
    return Decision(
        status=status if status != old else None,
        actions=tuple(actions),
        transitions=tuple(transitions),
        requeue_after=max((nxt - now).total_seconds(), 0.05),
    )
