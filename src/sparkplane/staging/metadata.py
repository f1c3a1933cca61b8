"""Bundle metadata in an embedded SQLite database, so the server's state survives restarts.

One row per committed bundle: id, hashed secret, owner description, size, creation time and
first download time (NULL while unused). Called by the server (insert on upload, lookup and mark
on download) and the clean-up loop (list, delete). Blocking and thread-safe (one connection
behind a lock); callers on an event loop keep these calls short. Never stores a plain secret.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sparkplane.staging.owner import OwnerType, ResourceOwner

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    resource_id         TEXT PRIMARY KEY,
    secret_hash         TEXT NOT NULL,
    owner_namespace     TEXT NOT NULL,
    owner_labels        TEXT NOT NULL,
    owner_type          TEXT NOT NULL,
    size                INTEGER NOT NULL,
    created_at          REAL NOT NULL,
    first_downloaded_at REAL
)
"""
_COLUMNS = (
    "resource_id, secret_hash, owner_namespace, owner_labels, owner_type, size, created_at, "
    "first_downloaded_at"
)


@dataclass(frozen=True)
class ResourceRecord:
    """What the server knows about one stored bundle (times are Unix seconds)."""

    resource_id: str
    secret_hash: str
    owner: ResourceOwner
    size: int
    created_at: float
    first_downloaded_at: float | None = None


def _row_to_record(row: tuple[str, str, str, str, str, int, float, float | None]) -> ResourceRecord:
    rid, secret_hash, namespace, labels, owner_type, size, created, downloaded = row
    owner = ResourceOwner(namespace, json.loads(labels), OwnerType(owner_type))
    return ResourceRecord(rid, secret_hash, owner, size, created, downloaded)


class Metadata(Protocol):
    """Where the records live: :class:`MetadataDB` (SQLite on the server's disk) or
    :class:`sparkplane.staging.s3.S3Metadata` (the bucket, shared by replicas)."""

    def close(self) -> None: ...
    def insert(self, record: ResourceRecord) -> None: ...
    def get(self, resource_id: str) -> ResourceRecord | None: ...
    def mark_downloaded(self, resource_id: str, now: float) -> None: ...
    def delete(self, resource_id: str) -> bool: ...
    def usage(self, namespace: str) -> tuple[int, int]: ...
    def all(self) -> list[ResourceRecord]: ...


class MetadataDB:
    """The resource table in the SQLite file at ``path`` (``":memory:"`` for tests)."""

    def __init__(self, path: Path | str) -> None:
        if isinstance(path, Path):
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def insert(self, record: ResourceRecord) -> None:
        owner = record.owner
        values = (
            record.resource_id,
            record.secret_hash,
            owner.namespace,
            json.dumps(dict(owner.labels), sort_keys=True),
            owner.owner_type.value,
            record.size,
            record.created_at,
            record.first_downloaded_at,
        )
        with self._lock:
            self._conn.execute(
                f"INSERT INTO resources ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)", values
            )

    def get(self, resource_id: str) -> ResourceRecord | None:
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM resources WHERE resource_id = ?", (resource_id,)
            ).fetchone()
        return None if row is None else _row_to_record(row)

    def mark_downloaded(self, resource_id: str, now: float) -> None:
        """Record the first download; later downloads keep the first time."""
        with self._lock:
            self._conn.execute(
                "UPDATE resources SET first_downloaded_at = ? "
                "WHERE resource_id = ? AND first_downloaded_at IS NULL",
                (now, resource_id),
            )

    def delete(self, resource_id: str) -> bool:
        with self._lock:
            cursor = self._conn.execute(
                "DELETE FROM resources WHERE resource_id = ?", (resource_id,)
            )
        return cursor.rowcount > 0

    def usage(self, namespace: str) -> tuple[int, int]:
        """Stored bytes: (all bundles, the bundles owned in ``namespace``)."""
        with self._lock:
            total, in_namespace = self._conn.execute(
                "SELECT COALESCE(SUM(size), 0), "
                "COALESCE(SUM(CASE WHEN owner_namespace = ? THEN size END), 0) FROM resources",
                (namespace,),
            ).fetchone()
        return int(total), int(in_namespace)

    def all(self) -> list[ResourceRecord]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM resources ORDER BY created_at"
            ).fetchall()
        return [_row_to_record(row) for row in rows]
