"""The operator's bounds (:class:`~sparkplane.operator.core.settings.Limits`) applied to a resource.

Owns what is refused and what is clamped (docs/operator.md, "Bounds"), and the words of both:
every message names the field, the value, the limit and the operator setting that sets it
(the ``sparkplane operator run`` flag and the Helm value), so the author of the resource and
the platform admin both know what to change.

* refused: executors (:func:`executor_problems`: ``spark.executor.instances`` and the dynamic
  allocation counts), workers (:func:`worker_problems`), schedules firing more often than the
  minimum interval (:func:`schedule_problem`);
* clamped: the restart backoff (:func:`backoff_millis`) and the number of restarts
  (:func:`attempts_cap`);
* defaulted: ``spark.dynamicAllocation.maxExecutors`` when dynamic allocation is on and the
  key is unset (Spark's default is unbounded): :func:`with_executor_cap`.

Called by the reconcilers (applications, clusters, schedules). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

from croniter import croniter

from sparkplane.errors import Problem
from sparkplane.operator.core.settings import LIMIT_SETTINGS, Limits

DYNAMIC = "spark.dynamicAllocation"
EXECUTOR_KEYS = (
    "spark.executor.instances",
    f"{DYNAMIC}.initialExecutors",
    f"{DYNAMIC}.minExecutors",
    f"{DYNAMIC}.maxExecutors",
)
WORKER_FIELDS = ("initWorkers", "minWorkers", "maxWorkers")
_CRON_SAMPLES = 64  # consecutive cron times whose smallest gap is the schedule's interval


def setting(name: str) -> str:
    """``the operator setting --flag (Helm limits.x)`` for a :class:`Limits` field."""
    flag, value = LIMIT_SETTINGS[name]
    return f"the operator setting {flag} (Helm value {value})"


def _count(text: object) -> int | None:
    """A count as Spark would read it (None: not a whole number; validated elsewhere)."""
    value = str(text).strip()
    digits = value.removeprefix("+")
    if not digits.isdigit():
        return None
    if len(digits) > 18:  # beyond any limit, and beyond what int() parses cheaply
        return 10**18
    return int(digits)


def executor_problems(conf: Mapping[str, str], limits: Limits) -> list[Problem]:
    """One problem per executor count in ``conf`` above ``limits.max_executors``."""
    out = []
    for key in EXECUTOR_KEYS:
        count = _count(conf[key]) if key in conf else None
        if count is not None and count > limits.max_executors:
            shown = str(conf[key]).strip()
            shown = shown if len(shown) <= 20 else f"{shown[:12]}... ({len(shown)} digits)"
            out.append(
                Problem(
                    f"spec.sparkConf[{key}]",
                    f"{shown} executors exceed the operator's limit of {limits.max_executors}",
                    f"ask for at most {limits.max_executors}, or have the platform admin raise "
                    f"{setting('max_executors')}",
                )
            )
    return out


def with_executor_cap(conf: Mapping[str, str], limits: Limits) -> dict[str, str]:
    """``conf`` with ``spark.dynamicAllocation.maxExecutors`` = the limit when dynamic
    allocation is on and it is unset (Spark would scale without bound)."""
    out = dict(conf)
    dynamic = str(conf.get(f"{DYNAMIC}.enabled", "false")).strip().lower() == "true"
    if dynamic and f"{DYNAMIC}.maxExecutors" not in out:
        out[f"{DYNAMIC}.maxExecutors"] = str(limits.max_executors)
    return out


def worker_problems(instance_config: Mapping[str, object], limits: Limits) -> list[str]:
    """One message per worker count of ``clusterTolerations.instanceConfig`` above the limit."""
    out = []
    for name in WORKER_FIELDS:
        count = _count(instance_config.get(name, 0))
        if count is not None and count > limits.max_workers:
            out.append(
                f"spec.clusterTolerations.instanceConfig.{name}: {count} workers exceed the "
                f"operator's limit of {limits.max_workers}; ask for at most "
                f"{limits.max_workers}, or have the platform admin raise "
                f"{setting('max_workers')}"
            )
    return out


def shortest_interval(schedule: str, time_zone: str, every: timedelta | None) -> timedelta:
    """The shortest time between two runs of a schedule (``every``: its ``@every`` interval).

    For cron, the smallest gap among consecutive times from a fixed start (a pure answer; a
    cron expression repeats within the sampled times for every practical schedule).
    """
    if every is not None:
        return every
    start = datetime(2025, 1, 1, tzinfo=UTC).astimezone(ZoneInfo(time_zone))
    it = croniter(schedule, start)
    times = [it.get_next(datetime) for _ in range(_CRON_SAMPLES)]
    return min((b - a for a, b in pairwise(times)), default=timedelta.max)


def schedule_problem(
    schedule: str, time_zone: str, every: timedelta | None, limits: Limits
) -> str | None:
    """Why the schedule fires too often for ``limits.min_schedule_seconds`` (None: it does not)."""
    gap = shortest_interval(schedule, time_zone, every)
    if gap.total_seconds() >= limits.min_schedule_seconds:
        return None
    return (
        f"spec.schedule: {schedule!r} runs every {gap.total_seconds():g}s, more often than the "
        f"operator's minimum interval of {limits.min_schedule_seconds}s; schedule runs at "
        f"least {limits.min_schedule_seconds}s apart, or have the platform admin lower "
        f"{setting('min_schedule_seconds')}"
    )


def backoff_millis(millis: int, limits: Limits) -> int:
    """The restart backoff applied: at least ``limits.min_restart_backoff_millis``."""
    return max(millis, limits.min_restart_backoff_millis)


def backoff_note(field: str, millis: int, limits: Limits) -> str:
    """What the restart message says when the backoff was raised ("" when it was not)."""
    if millis >= limits.min_restart_backoff_millis:
        return ""
    return (
        f" (restartConfig.{field} {millis} raised to the operator's minimum "
        f"{limits.min_restart_backoff_millis} ms: {setting('min_restart_backoff_millis')})"
    )


def attempts_cap(wanted: int, limits: Limits) -> int:
    """A restart cap as applied: at most ``limits.max_restart_attempts``."""
    return min(wanted, limits.max_restart_attempts)


def attempts_note(field: str, wanted: int, limits: Limits) -> str:
    """What the release message says when the operator's cap stopped the restarts."""
    return (
        f"no restart: restartConfig.{field} {wanted} is above the operator's limit of "
        f"{limits.max_restart_attempts} restarts ({setting('max_restart_attempts')}), "
        "which is reached"
    )
