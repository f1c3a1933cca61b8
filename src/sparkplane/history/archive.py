"""The log archive's pure parts: the store interface, key layout, size caps and retention.

Before sparkplane itself deletes a driver (``kill``, ``gc``, the operator releasing resources) the
I/O layer (:mod:`sparkplane.history.logs`) reads the driver's log and the executors'
tails and stores them under the keys made here, capped as decided here. ``gc`` later asks
:func:`expired` which archived apps to drop. Pure: no files, no Kubernetes.

Layout (one folder per app, the latest run of that name wins)::

    <namespace>/<app>/meta.json         what was kept and when (ArchiveMeta)
    <namespace>/<app>/driver.log        the driver's log, whole up to DRIVER_CAP bytes
    <namespace>/<app>/executor-<N>.log  executor N's last EXECUTOR_TAIL_LINES lines
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta
from typing import Protocol

from sparkplane.vocab import RETENTION_KEY

DRIVER_CAP = 8 * 1024 * 1024
EXECUTOR_CAP = 1024 * 1024
EXECUTOR_TAIL_LINES = 2000
APP_CAP = 32 * 1024 * 1024
DEFAULT_RETENTION = timedelta(days=7)
META = "meta.json"
_SAFE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class ArchiveStore(Protocol):
    """Where archived logs live: a directory, a mounted volume (or any key/value store)."""

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes | None: ...

    def keys(self, prefix: str) -> list[str]: ...

    def delete_prefix(self, prefix: str) -> int: ...

    def replace(self, prefix: str, files: dict[str, bytes]) -> None:
        """Make ``files`` (name → bytes) the whole content under ``prefix`` (one app)."""
        ...


@dataclass(frozen=True)
class ArchiveMeta:
    """What the archive holds for one app (stored as ``meta.json``)."""

    namespace: str
    app: str
    driver_pod: str
    archived_at: str
    reason: str
    retain_seconds: int
    app_id: str | None = None
    executors: tuple[int, ...] = ()
    truncated: bool = False
    pod_uid: str | None = None
    session: str | None = None  # the Spark Connect session the driver served, if any

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ArchiveMeta:
        raw = json.loads(data)
        raw["executors"] = tuple(raw.get("executors") or ())
        known = {f.name for f in fields(cls)}  # a newer writer's extra fields are ignored
        return cls(**{k: v for k, v in raw.items() if k in known})

    @property
    def archived(self) -> datetime:
        return datetime.fromisoformat(self.archived_at)


def app_prefix(namespace: str, app: str) -> str:
    """The folder of one app; both parts are Kubernetes names (checked: no path tricks)."""
    for part in (namespace, app):
        if not _SAFE.match(part) or ".." in part:
            raise ValueError(f"{part!r} is not a Kubernetes name")
    return f"{namespace}/{app}/"


def log_key(namespace: str, app: str, executor: int | None = None) -> str:
    """The key of the driver's log (``executor=None``) or of executor N's."""
    name = "driver.log" if executor is None else f"executor-{int(executor)}.log"
    return app_prefix(namespace, app) + name


def meta_key(namespace: str, app: str) -> str:
    return app_prefix(namespace, app) + META


def cap_text(lines: Iterable[str], max_bytes: int) -> tuple[str, bool]:
    """The lines joined, at most about ``max_bytes``: over the cap the head and the tail are kept
    (a Spark log's start says what ran, its end how it ended) with a marker between. Streams:
    holds at most ``max_bytes`` whatever the log's length."""
    budget = max_bytes // 2
    head: list[str] = []
    tail: deque[str] = deque()
    head_used = tail_used = dropped = 0
    for line in lines:
        chunk = line + "\n"
        size = len(chunk.encode())
        if not tail and head_used + size <= budget:
            head.append(chunk)
            head_used += size
            continue
        tail.append(chunk)
        tail_used += size
        while tail and tail_used > budget:
            tail_used -= len(tail.popleft().encode())
            dropped += 1
    if not dropped:
        return "".join(head) + "".join(tail), False
    marker = f"[sparkplane archive: {dropped} lines dropped here, over the {max_bytes}-byte cap]\n"
    return "".join(head) + marker + "".join(tail), True


def retention_of(annotations: dict[str, str] | None, default: timedelta) -> timedelta:
    """The app's own retention (annotation, whole seconds) or ``default``; unreadable: default."""
    raw = str((annotations or {}).get(RETENTION_KEY, "")).strip()
    return timedelta(seconds=int(raw)) if raw.isdigit() else default


def expired(meta: ArchiveMeta, now: datetime) -> bool:
    """Whether an archived app has outlived its retention (counted from its archiving)."""
    return now - meta.archived >= timedelta(seconds=meta.retain_seconds)


def deleted_notice(meta: ArchiveMeta, executor: int | None) -> str:
    """What ``logs`` prints on stderr when it reads the archive."""
    what = "driver" if executor is None else f"executor {executor}"
    cut = " (capped: the middle was dropped)" if meta.truncated else ""
    return (
        f"{meta.app}: {what} log from the archive, pod deleted at {meta.archived_at} "
        f"({meta.reason}){cut}"
    )
