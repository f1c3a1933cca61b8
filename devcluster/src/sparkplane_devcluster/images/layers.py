"""Deterministic layer tars: the same entries always give the same bytes and digests.

An image layer is a list of :class:`Entry` values (files, directories, symlinks, hard links)
with explicit owner and mode; :func:`write_layer` sorts them by path, stamps every one with
:data:`MTIME`, clears user and group names, and writes a tar (optionally gzip with a zero gzip
timestamp) while hashing both the compressed bytes (the blob digest) and the uncompressed tar (the
``diff_id``). Files sharing an inode key become one regular file plus hard links to it, whatever
order they came in. :func:`tree` turns a host directory into entries; the recipe modules
(``debian``, ``spark``, ``project``, ``pause``) build their entries with it and the helpers
below. No image or cache logic lives here.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, Literal

MTIME = 1_700_000_000
"""The modification time of every entry (2023-11-14): fixed so the bytes never depend on when."""

Kind = Literal["file", "dir", "symlink"]
Opener = Callable[[], IO[bytes]]


@dataclass(frozen=True)
class Entry:
    """One path in a layer: ``path`` is relative to the root (``opt/spark/bin``)."""

    path: str
    kind: Kind
    mode: int
    uid: int = 0
    gid: int = 0
    size: int = 0
    opener: Opener | None = None
    target: str = ""
    inode: Hashable | None = None
    """Files with the same (non-None) inode key are hard links of each other."""


@dataclass(frozen=True)
class LayerBlob:
    """A written layer: ``digest`` hashes the stored bytes, ``diff_id`` the uncompressed tar."""

    path: Path
    digest: str
    diff_id: str
    size: int
    media_type: str


def data_file(path: str, data: bytes, mode: int = 0o644, uid: int = 0, gid: int = 0) -> Entry:
    """A file whose content is in memory."""
    return Entry(path, "file", mode, uid, gid, len(data), lambda: io.BytesIO(data))


def host_file(path: str, host: Path, uid: int = 0, gid: int = 0) -> Entry:
    """The host file ``host`` at ``path``: 0755 if it is executable, else 0644."""
    st = host.stat()
    mode = 0o755 if st.st_mode & 0o111 else 0o644
    return Entry(path, "file", mode, uid, gid, st.st_size, _file_opener(host))


def directory(path: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> Entry:
    return Entry(path, "dir", mode, uid, gid)


def symlink(path: str, target: str, uid: int = 0, gid: int = 0) -> Entry:
    return Entry(path, "symlink", 0o777, uid, gid, target=target)


def parents(path: str, uid: int = 0, gid: int = 0, mode: int = 0o755) -> list[Entry]:
    """Directory entries for every ancestor of ``path`` (``a/b/c`` -> ``a``, ``a/b``)."""
    parts = path.strip("/").split("/")[:-1]
    return [directory("/".join(parts[: i + 1]), mode, uid, gid) for i in range(len(parts))]


def tree(
    src: Path,
    dest: str,
    uid: int = 0,
    gid: int = 0,
    skip: Callable[[str], bool] = lambda _: False,
) -> list[Entry]:
    """Entries for the directory ``src`` placed at ``dest`` (itself included).

    Modes are normalised (0755 for directories and executables, 0644 otherwise) so a host's umask
    never changes the bytes; symlinks are kept as symlinks, hard links as hard links. ``skip`` gets
    each path relative to ``src`` and drops it (and, for a directory, all below it).
    """
    dest = dest.strip("/")
    out = [directory(dest, 0o755, uid, gid)]
    for root, dirs, files in os.walk(src):
        rel_root = os.path.relpath(root, src)
        rel_root = "" if rel_root == "." else rel_root + "/"
        dirs[:] = [d for d in dirs if not skip(rel_root + d)]
        for name in [*dirs, *files]:
            rel = rel_root + name
            if skip(rel):
                continue
            host = Path(root, name)
            st = host.lstat()
            path = f"{dest}/{rel}"
            if stat.S_ISLNK(st.st_mode):
                out.append(symlink(path, os.readlink(host), uid, gid))
            elif stat.S_ISDIR(st.st_mode):
                out.append(directory(path, 0o755, uid, gid))
            elif stat.S_ISREG(st.st_mode):
                mode = 0o755 if st.st_mode & 0o111 else 0o644
                key = (st.st_dev, st.st_ino) if st.st_nlink > 1 else None
                out.append(
                    Entry(path, "file", mode, uid, gid, st.st_size, _file_opener(host), inode=key)
                )
    return out


def _file_opener(host: Path) -> Opener:
    return lambda: host.open("rb")


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to ``sink``."""

    def __init__(self, sink: BinaryIO | None) -> None:
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self.sha.update(b)
        self.size += len(b)
        if self.sink is not None:
            self.sink.write(b)
        return len(b)


def write_layer(entries: Iterable[Entry], out: Path, gzip_level: int | None = 6) -> LayerBlob:
    """Write ``entries`` as a layer tar at ``out``; the same entries give the same bytes.

    ``gzip_level`` None stores the tar plain (faster to write and import; bigger).
    """
    by_path = {e.path.strip("/"): e for e in entries if e.path.strip("/")}
    with out.open("wb") as raw:
        stored = _Hashing(raw)
        zipped = (
            gzip.GzipFile(filename="", mode="wb", fileobj=stored, mtime=0, compresslevel=gzip_level)
            if gzip_level is not None
            else None
        )
        plain = _Hashing(zipped if zipped is not None else stored)  # type: ignore[arg-type]
        with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            first_of: dict[Hashable, str] = {}
            for path in sorted(by_path):
                _add(tar, path, by_path[path], first_of)
        if zipped is not None:
            zipped.close()
    media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if zipped is not None else "")
    return LayerBlob(
        out,
        f"sha256:{stored.sha.hexdigest()}",
        f"sha256:{plain.sha.hexdigest()}",
        stored.size,
        media,
    )


def _add(tar: tarfile.TarFile, path: str, entry: Entry, first_of: dict[Hashable, str]) -> None:
    info = tarfile.TarInfo(path)
    info.mtime, info.uid, info.gid, info.uname, info.gname = MTIME, entry.uid, entry.gid, "", ""
    info.mode = entry.mode & 0o7777
    if entry.kind == "dir":
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    elif entry.kind == "symlink":
        info.type, info.linkname = tarfile.SYMTYPE, entry.target
        tar.addfile(info)
    elif entry.inode is not None and entry.inode in first_of:
        info.type, info.linkname = tarfile.LNKTYPE, first_of[entry.inode]
        tar.addfile(info)
    else:
        if entry.inode is not None:
            first_of[entry.inode] = path
        assert entry.opener is not None, f"file entry {path} has no content"
        info.size = entry.size
        with entry.opener() as content:
            tar.addfile(info, content)
