"""Spark Connect sessions, pure: when a session last did something, and whether it is to end.

The idle clock lives in the Spark driver itself, not in a proxy: the last activity is the
newest of the session's start, its jobs' submission and completion times and its SQL
executions' submission and end times, as the driver's own REST API reports them
(``/api/v1/applications/<id>/jobs`` and ``/sql``); a running job or query is activity *now*.
Every query a Spark Connect client runs is a SQL execution there, so this counts what a
client does wherever it connects from (port-forward, Service, another notebook), and needs no
component in the data path. What it does not count: metadata-only calls (a schema, a config
read) run no execution, so a client that only asks for schemas is idle.

The maximum lifetime is counted from the driver pod's creation. Both limits are annotations on
the driver pod (``vocab.IDLE_TIMEOUT_KEY``, ``vocab.MAX_LIFETIME_KEY``), read by ``gc``.

The cap on a namespace's concurrent sessions is a ResourceQuota entry
(``vocab.SESSION_QUOTA_KEY``, :func:`session_limit`): ``session create`` refuses past it, and
``gc`` ends the newest sessions beyond it (:func:`beyond_limit`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sparkplane.vocab import (
    IDLE_TIMEOUT_KEY,
    MAX_LIFETIME_KEY,
    SESSION_LABEL,
    SESSION_QUOTA_KEY,
    parse_time,
)

Obj = dict[str, Any]
_SPARK_TIME = "%Y-%m-%dT%H:%M:%S.%f%Z"  # the REST API's "2026-11-27T23:40:01.123GMT"


def spark_time(text: str | None) -> datetime | None:
    """A time of Spark's REST API (``...GMT``), or None."""
    if not text:
        return None
    try:
        return datetime.strptime(text, _SPARK_TIME).replace(tzinfo=UTC)
    except ValueError:
        return None


def last_activity(
    started: datetime, jobs: Iterable[Obj], executions: Iterable[Obj], now: datetime
) -> datetime:
    """The newest activity among ``jobs`` and SQL ``executions`` (the REST API's objects), at
    least ``started``; ``now`` when one is running."""
    times = [started]
    for job in jobs:
        if job.get("status") == "RUNNING":
            return now
        times += [t for k in ("submissionTime", "completionTime") if (t := spark_time(job.get(k)))]
    for ex in executions:
        if ex.get("status") == "RUNNING":
            return now
        submitted = spark_time(ex.get("submissionTime"))
        if submitted is not None:
            times.append(submitted + timedelta(milliseconds=int(ex.get("duration") or 0)))
    return max(times)


def limit(pod: Obj, key: str) -> timedelta | None:
    """A limit annotation (seconds) of a session's driver pod; None when unset or not > 0."""
    raw = (pod.get("metadata", {}).get("annotations") or {}).get(key)
    try:
        seconds = float(raw) if raw is not None else 0.0
    except ValueError:
        return None
    return timedelta(seconds=seconds) if seconds > 0 else None


@dataclass(frozen=True)
class Expiry:
    """Whether a session is past one of its limits, and which."""

    expired: bool
    reason: str


def created_at(pod: Obj) -> datetime:
    """The driver pod's creation time."""
    return parse_time(pod["metadata"].get("creationTimestamp")) or datetime.now(UTC)


def expiry(pod: Obj, now: datetime, idle: timedelta | None) -> Expiry:
    """Whether the session of driver ``pod`` is to end: past its maximum lifetime, or idle
    (``idle``: how long since its last activity, None when unknown) past its idle timeout."""
    lifetime = limit(pod, MAX_LIFETIME_KEY)
    age = now - created_at(pod)
    if lifetime is not None and age >= lifetime:
        return Expiry(True, f"session past its max lifetime ({short(age)} >= {short(lifetime)})")
    timeout = limit(pod, IDLE_TIMEOUT_KEY)
    if timeout is not None and idle is not None and idle >= timeout:
        return Expiry(True, f"session idle {short(idle)} >= idle timeout {short(timeout)}")
    return Expiry(False, "session within its limits")


def short(delta: timedelta) -> str:
    """``42s``, ``3m07s``, ``2h05m``: a duration as a notebook shows it."""
    seconds = max(0, int(delta.total_seconds()))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


@dataclass(frozen=True)
class SessionLimit:
    """A namespace's cap on concurrent sessions and the ResourceQuota that declares it."""

    sessions: int
    quota: str


def session_limit(quotas: list[Obj]) -> SessionLimit | None:
    """The tightest :data:`SESSION_QUOTA_KEY` among a namespace's ResourceQuotas (None: no cap).

    An admin declares it like any object count; tenants may read quotas but never write them,
    so a session cannot raise its own namespace's cap. A value that is not a whole number is
    ignored (the API server accepts quantities such as ``1k``; object counts never need one)."""
    found: list[SessionLimit] = []
    for quota in quotas:
        raw = str(((quota.get("spec") or {}).get("hard") or {}).get(SESSION_QUOTA_KEY, ""))
        if raw.isdigit():
            found.append(SessionLimit(int(raw), quota["metadata"]["name"]))
    return min(found, key=lambda f: f.sessions) if found else None


def live(pod: Obj) -> bool:
    """A session's driver pod that counts against the cap: not ended, not being deleted."""
    return not pod["metadata"].get("deletionTimestamp") and pod.get("status", {}).get(
        "phase", "Pending"
    ) in ("Pending", "Running")


def beyond_limit(drivers: list[Obj], cap: SessionLimit) -> list[Obj]:
    """The live session drivers past ``cap``: the newest ones (by creation, then name), which
    sessions created in a race past the client's check, or by a client that did not check."""
    alive = sorted(
        (p for p in drivers if SESSION_LABEL in (p["metadata"].get("labels") or {}) and live(p)),
        key=lambda p: (created_at(p), p["metadata"]["name"]),
    )
    return alive[cap.sessions :]
