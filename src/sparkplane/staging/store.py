"""Where bundle bytes live: the storage backend protocol and the local-disk backend.

The staging server is the only caller. A backend stores opaque byte streams by resource id and
must make writes atomic: a reader never sees a partial bundle, and an interrupted write leaves
nothing behind (``sweep`` removes leftovers of writes cut off by a crash). Backends do blocking
I/O; the server calls them from worker threads. The object-store backend (:mod:`.s3`) implements the
same protocol. Nothing here knows about HTTP, secrets or owners.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol, Self, runtime_checkable

from sparkplane.staging.errors import StagingError

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_SUFFIX = ".bundle"
_IOV_MAX = 1024
_PIPE_BYTES = 1024 * 1024


class BundleWriter(Protocol):
    """An in-progress write. Nothing is visible until :meth:`commit`; leaving the ``with``
    block without committing (or with an exception) aborts."""

    def write(self, *chunks: bytes) -> None: ...
    def commit(self) -> int: ...
    def abort(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class SpliceTarget(Protocol):
    """A writer that can take bytes straight from a descriptor (the local disk store): the
    server then moves an upload from the socket to the file without copying it through Python.
    """

    def splice_from(self, source: int, count: int, wait: Callable[[], None]) -> None: ...


class Store(Protocol):
    """A pluggable bundle store keyed by resource id."""

    def open_writer(self, resource_id: str) -> BundleWriter: ...
    def open_reader(self, resource_id: str) -> BinaryIO: ...
    def delete(self, resource_id: str) -> bool: ...
    def exists(self, resource_id: str) -> bool: ...
    def list_ids(self) -> Iterator[str]: ...
    def sweep(self) -> int: ...
    def local_path(self, resource_id: str) -> Path | None:
        """A file the server may send with zero-copy ``sendfile``, or None (remote backends)."""
        ...


class BundleNotStoredError(StagingError):
    """The store has no bundle under that id (never written, or already deleted)."""


def check_id(resource_id: str) -> str:
    """``resource_id`` if it is a safe store key (letters, digits, ``_``, ``-``), else an error."""
    if not _SAFE_ID.match(resource_id):
        raise StagingError(f"invalid resource id {resource_id!r} for the store")
    return resource_id


class _LocalWriter:
    """Writes to ``<root>/.tmp/<id>.<random>.part`` then renames onto the final path."""

    def __init__(self, final: Path, temp: Path, *, fsync: bool) -> None:
        self._final = final
        self._temp = temp
        self._fsync = fsync
        self._size = 0
        self._done = False
        self._file: BinaryIO | None = open(temp, "xb", buffering=0)  # noqa: SIM115

    def write(self, *chunks: bytes) -> None:
        """Append ``chunks`` in order with ``writev`` (no joining copy)."""
        if self._file is None:
            raise StagingError("write after commit or abort")
        fd = self._file.fileno()
        pending = [memoryview(c) for c in chunks if c]
        while pending:
            batch = pending[:_IOV_MAX]
            written = os.writev(fd, batch)
            self._size += written
            while written and batch:
                head = batch.pop(0)
                pending.pop(0)
                if written < len(head):
                    pending.insert(0, head[written:])
                    written = 0
                else:
                    written -= len(head)

    def splice_from(self, source: int, count: int, wait: Callable[[], None]) -> None:
        """Append exactly ``count`` bytes read from the descriptor ``source`` (a socket) inside
        the kernel: ``splice`` through a pipe, so the bytes never enter the process. ``wait``
        blocks until ``source`` is readable; a source ending early raises :class:`EOFError`."""
        if self._file is None:
            raise StagingError("write after commit or abort")
        fd = self._file.fileno()
        pipe_out, pipe_in = os.pipe()
        try:
            with contextlib.suppress(OSError):  # a larger pipe means fewer system calls
                fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
            while count:
                try:
                    moved = os.splice(source, pipe_in, min(count, _PIPE_BYTES))
                except BlockingIOError:
                    wait()
                    continue
                if not moved:
                    raise EOFError(f"source ended {count} bytes early")
                count -= moved
                self._size += moved
                while moved:
                    try:
                        moved -= os.splice(pipe_out, fd, moved)
                    except OSError as exc:  # a file system without splice: copy this piece
                        if exc.errno != errno.EINVAL:
                            raise
                        data = memoryview(os.read(pipe_out, moved))
                        moved -= len(data)
                        while data:
                            data = data[os.write(fd, data) :]
        finally:
            os.close(pipe_out)
            os.close(pipe_in)

    def commit(self) -> int:
        if self._file is None:
            raise StagingError("commit after commit or abort")
        try:
            if self._fsync:
                os.fsync(self._file.fileno())
            self._file.close()
            self._file = None
            os.replace(self._temp, self._final)
        except BaseException:
            self.abort()
            raise
        self._done = True
        return self._size

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if not self._done:
            with contextlib.suppress(FileNotFoundError):
                self._temp.unlink()
            self._done = True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.abort()


class LocalDiskStore:
    """Bundles as files under ``root`` (``<id>.bundle``), staged through ``root/.tmp``.

    ``fsync`` makes a committed bundle survive a power loss; turn it off only for tests.
    """

    def __init__(self, root: Path, *, fsync: bool = True) -> None:
        self.root = root
        self.fsync = fsync
        self._tmp = root / ".tmp"
        self._tmp.mkdir(parents=True, exist_ok=True)

    def _path(self, resource_id: str) -> Path:
        return self.root / f"{check_id(resource_id)}{_SUFFIX}"

    def open_writer(self, resource_id: str) -> BundleWriter:
        final = self._path(resource_id)
        temp = self._tmp / f"{resource_id}.{secrets.token_hex(4)}.part"
        return _LocalWriter(final, temp, fsync=self.fsync)

    def open_reader(self, resource_id: str) -> BinaryIO:
        try:
            return open(self._path(resource_id), "rb", buffering=0)
        except FileNotFoundError as exc:
            raise BundleNotStoredError(f"no stored bundle {resource_id}") from exc

    def delete(self, resource_id: str) -> bool:
        try:
            self._path(resource_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def exists(self, resource_id: str) -> bool:
        return self._path(resource_id).is_file()

    def list_ids(self) -> Iterator[str]:
        for entry in self.root.iterdir():
            if entry.is_file() and entry.name.endswith(_SUFFIX):
                yield entry.name[: -len(_SUFFIX)]

    def local_path(self, resource_id: str) -> Path | None:
        path = self._path(resource_id)
        return path if path.is_file() else None

    def sweep(self) -> int:
        """Delete temp files left by writes that never committed; returns how many."""
        count = 0
        for entry in self._tmp.iterdir():
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                count += 1
        return count
