"""A full disk (issue 26, finding 8): the real server over HTTP on 127.0.0.1, with its store
filling up at the write boundary (a test-side wrapper around the local disk store raising
``OSError(ENOSPC)``, as a full file system does) or its metadata database full. The answer is
``507 insufficient_storage`` in the JSON of every other error, one log line and no traceback,
no partial or orphan bundle left, and the client says it in one message."""

from __future__ import annotations

import errno
import http.client
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from sparkplane.staging.client import upload_bundle
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.server import DB, create_app
from sparkplane.staging.settings import StagingSettings
from sparkplane.staging.store import BundleWriter, LocalDiskStore
from tests.staging_server import served

from .conftest import AUTH, TOKEN

OWNER = ResourceOwner("spark-jobs", {"spark-app-selector": "spark-1"})
RESOURCES = "/api/v0/resources"
ROOM = 1_000_000  # bytes the disk takes before it is full


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class _FillingWriter:
    """Writes until the disk has no room left, then fails as the file system does."""

    def __init__(self, inner: BundleWriter, room: int) -> None:
        self.inner, self.room = inner, room

    def write(self, *chunks: bytes) -> None:
        data = b"".join(chunks)
        self.inner.write(data[: self.room])
        self.room -= min(len(data), self.room)
        if self.room == 0:
            raise _enospc()

    def commit(self) -> int:
        return self.inner.commit()

    def abort(self) -> None:
        self.inner.abort()

    def __enter__(self) -> _FillingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.abort()


class _FillingSplicer(_FillingWriter):
    """The same for the zero-copy path: the kernel moves bytes until the disk is full."""

    def splice_from(self, source: int, count: int, wait: Callable[[], None]) -> None:
        self.inner.splice_from(source, min(count, self.room), wait)  # type: ignore[attr-defined]
        if count > self.room:
            raise _enospc()


class FullDiskStore:
    """The local disk store with a disk of ``ROOM`` bytes; everything else is the real store."""

    def __init__(self, root: Path, writer: type[_FillingWriter]) -> None:
        self.inner = LocalDiskStore(root, fsync=False)
        self.writer = writer

    def open_writer(self, resource_id: str) -> BundleWriter:
        return self.writer(self.inner.open_writer(resource_id), ROOM)  # type: ignore[return-value]

    def open_reader(self, resource_id: str) -> BinaryIO:
        return self.inner.open_reader(resource_id)

    def delete(self, resource_id: str) -> bool:
        return self.inner.delete(resource_id)

    def exists(self, resource_id: str) -> bool:
        return self.inner.exists(resource_id)

    def list_ids(self) -> Iterator[str]:
        return self.inner.list_ids()

    def sweep(self) -> int:
        return self.inner.sweep()

    def local_path(self, resource_id: str) -> Path | None:
        return self.inner.local_path(resource_id)


def left_on_disk(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def no_traceback(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings and errors logged, none with a traceback."""
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert all(r.exc_info is None and r.exc_text is None for r in records), caplog.text
    assert "Traceback" not in caplog.text
    return [r.getMessage() for r in records]


@pytest.mark.parametrize("writer", [_FillingSplicer, _FillingWriter], ids=["spliced", "streamed"])
def test_a_full_disk_is_507_in_json_and_leaves_nothing(
    settings: StagingSettings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    writer: type[_FillingWriter],
) -> None:
    root = settings.storage_dir
    app = create_app(settings, store=FullDiskStore(root, writer))  # type: ignore[arg-type]
    bundle = tmp_path / "bundle.tgz"
    bundle.write_bytes(os.urandom(3 * ROOM))
    caplog.set_level(logging.INFO)

    with served(app) as url:
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {**OWNER.to_headers(), **AUTH, "Content-Length": str(3 * ROOM)}
        try:
            conn.request("POST", RESOURCES, body=bundle.read_bytes(), headers=headers)
            answer = conn.getresponse()
            assert answer.status == 507
            assert answer.getheader("Content-Type", "").startswith("application/json")
            body = json.loads(answer.read())
        finally:
            conn.close()
        assert body["error"] == "insufficient_storage"
        assert "disk is full (No space left on device)" in body["message"]
        assert left_on_disk(root) == [] and app[DB].all() == []
        # the client (the submitter's upload) says it in one message, exit code 10
        with pytest.raises(StagingClientError) as info:
            upload_bundle(url, bundle, OWNER, token=TOKEN)
        assert info.value.status == 507 and info.value.exit_code == 10
        assert "HTTP 507 insufficient_storage: the staging server's disk is full" in str(info.value)
        assert left_on_disk(root) == [] and app[DB].all() == []

    warnings = no_traceback(caplog)
    assert len(warnings) == 2, warnings  # one line per refused upload
    assert all("507, the disk is full" in w for w in warnings)


def test_a_full_metadata_database_leaves_no_orphan_bundle(
    settings: StagingSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The bundle was stored whole, then its record could not be: the bundle goes too."""
    app = create_app(settings)
    db = app[DB]

    def full(record: Any) -> None:
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
        raise exc

    db.insert = full  # type: ignore[method-assign]
    bundle = tmp_path / "bundle.tgz"
    bundle.write_bytes(os.urandom(100_000))

    with served(app) as url, pytest.raises(StagingClientError, match="HTTP 507 insufficient_st"):
        upload_bundle(url, bundle, OWNER, token=TOKEN)
    assert left_on_disk(settings.storage_dir) == []
    (warning,) = no_traceback(caplog)
    assert "507, the disk is full (database or disk is full)" in warning
