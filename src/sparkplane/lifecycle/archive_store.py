"""The log archive on a filesystem: a local directory, or a volume mounted into an in-cluster
component (the operator, the gc CronJob). Implements :class:`~.archive.ArchiveStore`.

Where it lives: ``SPARKPLANE_LOG_ARCHIVE`` (a directory; ``off`` turns archiving off), else
``<cache>/log-archive`` (``SPARKPLANE_CACHE_DIR`` or ``~/.cache/sparkplane``). Writes are atomic
(temporary file + rename) so a reader never sees half a log. Called by
:mod:`sparkplane.lifecycle.archive_logs`; knows nothing of Kubernetes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sparkplane.lifecycle.archive import ArchiveStore

ENV = "SPARKPLANE_LOG_ARCHIVE"
OFF = ("off", "none", "false", "0")


class FsStore:
    """Keys are relative paths under ``root`` (made by :mod:`.archive`, checked again here)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"FsStore({str(self.root)!r})"

    def _path(self, key: str) -> Path:
        parts = key.strip("/").split("/")
        if not key or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"bad archive key {key!r}")
        return self.root.joinpath(*parts)

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def keys(self, prefix: str) -> list[str]:
        base = self._path(prefix) if prefix.strip("/") else self.root
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(self.root).as_posix()
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    def delete_prefix(self, prefix: str) -> int:
        base = self._path(prefix)
        if not base.exists():
            return 0
        count = sum(1 for p in base.rglob("*") if p.is_file())
        shutil.rmtree(base, ignore_errors=True)
        for parent in base.parents:  # drop the namespace folder once empty
            if parent == self.root or not parent.is_relative_to(self.root):
                break
            try:
                parent.rmdir()
            except OSError:
                break
        return count


def default_root() -> Path:
    cache = os.environ.get("SPARKPLANE_CACHE_DIR") or Path.home() / ".cache" / "sparkplane"
    return Path(cache) / "log-archive"


def open_store(location: str | os.PathLike[str] | None = None) -> ArchiveStore | None:
    """The archive at ``location`` (else ``$SPARKPLANE_LOG_ARCHIVE``, else the cache); None
    when archiving is turned off."""
    where = str(location) if location is not None else os.environ.get(ENV, "")
    if where.strip().lower() in OFF and where.strip():
        return None
    return FsStore(Path(where).expanduser() if where.strip() else default_root())
