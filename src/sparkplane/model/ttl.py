"""TTL clean-up policy for finished native drivers, and the duration syntax of ``--older-than``.

Owns the decision of which finished driver pods to delete (``sparkplane gc`` and its CronJob):
:func:`plan_cleanup` and :func:`parse_duration`. The gc command lists the driver pods, calls
:func:`plan_cleanup`, then deletes the chosen drivers with Background propagation (their
ConfigMaps, Services, Ingresses and executors follow by ownerReference). Pure: no listing or
deleting here.

Per-app TTL: the label or annotation ``sparkplane.io/ttl-seconds-after-finished`` on the driver
pod, a whole number of seconds (``0`` = delete as soon as finished), set at submit. The
annotation wins over the label. Without it the default TTL applies (``--older-than``); with no
default either the pod is kept. An unreadable value keeps the pod: never delete on a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sparkplane.errors import Problem, ValidationError
from sparkplane.model.pods import Obj, finished_at, meta, status
from sparkplane.vocab import POD_ENDED, TTL_KEY

_DURATION = re.compile(r"^(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?$")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
#: The longest duration accepted: an expiry computed from it stays a valid date (a timedelta of
#: 99999999999 days overflows, as does a finish time plus 999999999 days).
MAX_DURATION = timedelta(days=36500)
_DURATION_HINT = "use whole numbers with units d, h, m, s in that order, e.g. 90s, 15m, 2h, 1h30m"


@dataclass(frozen=True)
class TtlDecision:
    """Whether to delete one driver pod, and why (shown by ``gc --dry-run``)."""

    namespace: str
    name: str
    delete: bool
    reason: str
    finished_at: datetime | None = None
    ttl: timedelta | None = None

    @property
    def expires_at(self) -> datetime | None:
        if self.finished_at is None or self.ttl is None:
            return None
        return self.finished_at + self.ttl


def parse_duration(text: str, *, field: str = "--older-than") -> timedelta:
    """``"90s"``, ``"15m"``, ``"2h"``, ``"1d"``, ``"1h30m"`` as a timedelta.

    Raises :class:`ValidationError` naming ``field`` for anything else (bare numbers included:
    the unit is never guessed) and for a duration over :data:`MAX_DURATION`.
    """
    value = text.strip()
    match = _DURATION.match(value)
    if not value or not match or not any(match.groupdict().values()):
        why = "a unit is missing" if value.isdigit() else f"{_shown(text)} is not a duration"
        raise ValidationError([Problem(field, why, _DURATION_HINT)], subject="duration")
    found = {k: v.lstrip("0") or "0" for k, v in match.groupdict().items() if v}
    seconds = sum(int(v) * _UNIT_SECONDS[k] for k, v in found.items() if len(v) <= 12)
    if any(len(v) > 12 for v in found.values()) or seconds > MAX_DURATION.total_seconds():
        problem = Problem(
            field,
            f"{_shown(text)} is longer than {format_duration(MAX_DURATION)} (100 years)",
            f"at most {format_duration(MAX_DURATION)}, e.g. 30d or 1h30m",
        )
        raise ValidationError([problem], subject="duration")
    return timedelta(seconds=seconds)


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 24 else f"'{text[:12]}...' ({len(text)} characters)"


def format_duration(value: timedelta) -> str:
    """The inverse of :func:`parse_duration` (``timedelta(hours=1, minutes=30)`` -> ``1h30m``)."""
    seconds = int(value.total_seconds())
    if seconds <= 0:
        return "0s"
    text = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        text += f"{count}{unit}" if count else ""
    return text


def app_ttl(pod: Obj, *, key: str = TTL_KEY) -> timedelta | None:
    """The per-app TTL set on the pod, None when there is none.

    Raises :class:`ValidationError` when the value is not a whole number of seconds.
    """
    md = meta(pod)
    for where in ("annotations", "labels"):
        raw = (md.get(where) or {}).get(key)
        if raw is None:
            continue
        text = str(raw).strip()
        whole = text.isascii() and text.isdigit() and len(text.lstrip("0")) <= 12
        if not whole or int(text.lstrip("0") or "0") > MAX_DURATION.total_seconds():
            problem = Problem(
                f"metadata.{where}.{key}",
                f"{_shown(str(raw))} is not a whole number of seconds up to "
                f"{int(MAX_DURATION.total_seconds())} (100 years)",
                "e.g. 3600",
            )
            raise ValidationError([problem], subject=f"TTL of pod {md.get('name')}")
        return timedelta(seconds=int(text.lstrip("0") or "0"))
    return None


def plan_cleanup(
    pods: Iterable[Obj],
    now: datetime,
    default_ttl: timedelta | None,
    *,
    key: str = TTL_KEY,
) -> list[TtlDecision]:
    """One decision per pod: delete the finished drivers whose TTL has run out.

    A pod is kept when it has not finished (phase not Succeeded/Failed), is already being
    deleted, has no TTL (per app or default), has an unreadable TTL, or has no known finish time.
    """
    return [_decide(pod, now, default_ttl, key) for pod in pods]


def _decide(pod: Obj, now: datetime, default_ttl: timedelta | None, key: str) -> TtlDecision:
    md = meta(pod)
    ns, name = str(md.get("namespace") or ""), str(md.get("name") or "")

    def keep(
        reason: str, done: datetime | None = None, ttl: timedelta | None = None
    ) -> TtlDecision:
        return TtlDecision(ns, name, False, reason, done, ttl)

    phase = status(pod).get("phase")
    if phase not in POD_ENDED:
        return keep(f"not finished (phase {phase or 'unknown'})")
    if md.get("deletionTimestamp"):
        return keep("already being deleted")
    try:
        ttl, source = app_ttl(pod, key=key), "per-app"
    except ValidationError as err:
        return keep(f"unreadable TTL: {err.problems[0]}")
    if ttl is None:
        ttl, source = default_ttl, "default"
    if ttl is None:
        return keep("no TTL (none set on the app and no default)")
    done = finished_at(pod)
    if done is None:
        return keep("finish time unknown", None, ttl)
    age = now - done
    if age >= ttl:
        reason = (
            f"finished {format_duration(age)} ago, past its {source} TTL {format_duration(ttl)}"
        )
        return TtlDecision(ns, name, True, reason, done, ttl)
    left = format_duration(ttl - age)
    return keep(f"{source} TTL {format_duration(ttl)} not reached ({left} left)", done, ttl)
