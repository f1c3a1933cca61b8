"""The log archive on a filesystem, and which store to use.

:class:`FsStore`: a local directory, or a volume mounted into an in-cluster component.
Implements :class:`~.archive.ArchiveStore`; writes are atomic (temporary file + rename) so a
reader never sees half a log. :func:`open_store` picks the writer's store from the process's
:class:`~sparkplane.settings.Settings` (``log_archive``: a directory; ``kube`` for the in-cluster
store, :mod:`.kube_store`, ConfigMaps; ``s3://bucket/prefix`` for object storage,
:mod:`.s3_store`; ``off`` for none; empty for ``<cache>/log-archive``).
:func:`reading_stores` lists where ``logs`` looks. Called by :mod:`sparkplane.history.logs`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from sparkplane.history.archive import META, ArchiveStore
from sparkplane.history.kube_store import KubeStore
from sparkplane.history.s3_store import S3Store, is_s3, parse_location
from sparkplane.kube import Kube
from sparkplane.settings import Settings

OFF = ("off", "none", "false", "0")
KUBE = "kube"  # the in-cluster store: ConfigMaps in the app's namespace (archive_kube)


class FsStore:
    """Keys are relative paths under ``root`` (made by :mod:`.archive`, checked again here).

    Nothing is written or deleted outside ``root``: a key whose path crosses a symbolic link
    (or resolves elsewhere) is refused with ValueError."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"FsStore({str(self.root)!r})"

    def _path(self, key: str) -> Path:
        parts = key.strip("/").split("/")
        if not key or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"bad archive key {key!r}")
        return self.root.joinpath(*parts)

    def _inside(self, key: str) -> Path:
        """The path of ``key``, refused if any part below the root is a symbolic link or it
        resolves outside the root."""
        path = self._path(key)
        step = self.root
        for part in path.relative_to(self.root).parts:
            step = step / part
            if step.is_symlink():
                raise ValueError(f"archive key {key!r} crosses a symbolic link ({step})")
        if self.root.exists() and not path.resolve().is_relative_to(self.root.resolve()):
            raise ValueError(f"archive key {key!r} resolves outside {self.root}")
        return path

    def put(self, key: str, data: bytes) -> None:
        path = self._inside(key)
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
        base = self._inside(prefix)
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

    def replace(self, prefix: str, files: dict[str, bytes]) -> None:
        """Drop what ``prefix`` held, then write ``files`` (``meta.json`` last: a reader sees a
        complete app or none)."""
        self.delete_prefix(prefix)
        for name in sorted(files, key=lambda n: n == META):
            self.put(prefix + name, files[name])


def _fs_store(settings: Settings) -> FsStore:
    where = settings.log_archive
    return FsStore(Path(where).expanduser() if where else settings.archive_dir)


def open_store(
    settings: Settings,
    *,
    kube: Kube | None = None,
    namespaces: Sequence[str] | None = None,
) -> ArchiveStore | None:
    """Where to archive, as ``settings.log_archive`` says; ``kube`` is the in-cluster store
    (ConfigMaps, listed in ``namespaces``; needs ``kube``), ``s3://`` object storage (listed
    under ``namespaces``' prefixes). None when archiving is turned off. A malformed ``s3://``
    value: ConfigError."""
    where = settings.log_archive
    if where.lower() in OFF and where:
        return None
    if is_s3(where):
        return S3Store(parse_location(where), namespaces)
    if where.lower() == KUBE:
        return KubeStore(kube, namespaces) if kube is not None else None
    return _fs_store(settings)


def reading_stores(settings: Settings, kube: Kube | None, namespace: str) -> list[ArchiveStore]:
    """Where ``logs`` looks: the configured S3 location (``namespace``'s prefix) or this
    machine's directory (unless the setting says ``off`` or ``kube``) and, given ``kube``, the
    in-cluster archive of ``namespace``."""
    out: list[ArchiveStore] = []
    where = settings.log_archive
    if is_s3(where):
        out.append(S3Store(parse_location(where), [namespace]))
    elif where.lower() not in (*OFF, KUBE) or not where:
        out.append(_fs_store(settings))
    if kube is not None:
        out.append(KubeStore(kube, [namespace]))
    return out
