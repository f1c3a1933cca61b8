"""Bundles: pack local dependencies into a tar.gz, and unpack untrusted bundles safely.

Packing is used by the submitter before an upload; unpacking by ``sparkplane fetch`` inside the
init-container. Both stream (tarfile stream mode, fixed-size copies), so a bundle is never held in
memory. Unpacking trusts nothing in the archive: members that are absolute, contain ``..``, would
be written through or create a link resolving outside the target, or are devices/FIFOs are
refused with :class:`UnsafeArchiveError` naming the member. Modes are reduced to rwx for the
owner and r-x for others (no setuid, no group/world write). No network here.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from sparkplane.staging.errors import StagingError, UnsafeArchiveError

COPY_CHUNK = 1024 * 1024


def _clean_name(name: str, member: str) -> str:
    """The member name as a normalised relative POSIX path, or an error naming ``member``."""
    if not name or name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(member, "absolute or non-POSIX path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(member, "path contains '..'")
    if not parts:
        raise UnsafeArchiveError(member, "empty path")
    return "/".join(parts)


def _tar_filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def pack_bundle(
    entries: Mapping[str, Path] | Iterable[tuple[str, Path]], dest: Path, *, compresslevel: int = 1
) -> int:
    """Write ``entries`` (name in the bundle -> local file or directory) to ``dest`` as tar.gz.

    Local symlinks are followed (the bundle holds contents). Returns the bundle size in bytes.
    Level 1 gzip by default: jars are already compressed, so more effort buys little.
    """
    return pack_bundle_measured(entries, dest, compresslevel=compresslevel)[0]


def pack_bundle_measured(
    entries: Mapping[str, Path] | Iterable[tuple[str, Path]], dest: Path, *, compresslevel: int = 1
) -> tuple[int, int]:
    """:func:`pack_bundle`, returning (bundle bytes, unpacked bytes): the sizes of the regular
    files as written into the archive, the bound ``sparkplane fetch --max-bytes`` enforces."""
    unpacked = 0

    def measured(info: tarfile.TarInfo) -> tarfile.TarInfo:
        nonlocal unpacked
        if info.isreg():
            unpacked += info.size
        return _tar_filter(info)

    items = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
    seen: set[str] = set()
    for arcname, path in items:
        clean = _clean_name(arcname, arcname)
        if clean in seen:
            raise StagingError(f"two bundle entries are named {clean!r}; names must be unique")
        seen.add(clean)
        if not path.exists():
            raise StagingError(f"cannot bundle {path}: no such file or directory")
    with tarfile.open(
        dest, "w:gz", compresslevel=compresslevel, format=tarfile.PAX_FORMAT, dereference=True
    ) as tar:
        for arcname, path in items:
            tar.add(path, arcname=_clean_name(arcname, arcname), filter=measured)
    return dest.stat().st_size, unpacked


class _Unpacker:
    def __init__(self, dest_dir: Path, max_bytes: int | None, max_members: int) -> None:
        self.root = os.path.realpath(dest_dir)
        self.max_bytes = max_bytes
        self.max_members = max_members
        self.total = 0
        self.names: list[str] = []
        self.links: list[tuple[str, str]] = []

    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def checked_parent(self, target: str, member: str) -> str:
        parent = os.path.dirname(target)
        if not self.inside(os.path.realpath(parent)):
            raise UnsafeArchiveError(member, "its directory is a link leading outside the target")
        os.makedirs(parent, exist_ok=True)
        return parent

    def replace_link(self, target: str, member: str) -> None:
        if os.path.islink(target):
            os.unlink(target)
        elif os.path.isdir(target):
            raise UnsafeArchiveError(member, "would replace a directory")

    def extract(self, tar: tarfile.TarFile, info: tarfile.TarInfo) -> None:
        member = info.name
        if len(self.names) >= self.max_members:
            raise UnsafeArchiveError(member, f"more than {self.max_members} members")
        name = _clean_name(info.name, member)
        target = os.path.join(self.root, name)
        mode = (info.mode & 0o755) | 0o600
        if info.isdir():
            self.checked_parent(target, member)
            if os.path.islink(target) or not self.inside(os.path.realpath(target)):
                raise UnsafeArchiveError(member, "directory path is a link")
            os.makedirs(target, exist_ok=True)
            os.chmod(target, mode | 0o700)
        elif info.isreg():
            self.total += info.size
            if self.max_bytes is not None and self.total > self.max_bytes:
                raise UnsafeArchiveError(member, f"bundle unpacks to more than {self.max_bytes} B")
            self.checked_parent(target, member)
            self.replace_link(target, member)
            source = tar.extractfile(info)
            if source is None:
                raise UnsafeArchiveError(member, "unreadable regular file")
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            with source, os.fdopen(os.open(target, flags, mode), "wb") as out:
                shutil.copyfileobj(source, out, COPY_CHUNK)
            os.chmod(target, mode)
        elif info.issym():
            link = info.linkname
            if not link or os.path.isabs(link) or "\\" in link:
                raise UnsafeArchiveError(member, f"symlink to absolute path {link!r}")
            lexical = posixpath.normpath(posixpath.join(posixpath.dirname(name), link))
            parent = self.checked_parent(target, member)
            resolved = os.path.realpath(os.path.join(parent, link))
            if lexical.startswith("..") or not self.inside(resolved):
                raise UnsafeArchiveError(member, f"symlink to {link!r} leads outside the target")
            self.replace_link(target, member)
            if os.path.lexists(target):
                os.unlink(target)
            os.symlink(link, target)
            self.links.append((member, target))
        elif info.islnk():
            source_name = _clean_name(info.linkname, member)
            source_path = os.path.realpath(os.path.join(self.root, source_name))
            if not self.inside(source_path) or not os.path.isfile(source_path):
                raise UnsafeArchiveError(member, f"hard link to {info.linkname!r} outside bundle")
            self.total += os.path.getsize(source_path)  # a copy: it takes space again
            if self.max_bytes is not None and self.total > self.max_bytes:
                raise UnsafeArchiveError(member, f"bundle unpacks to more than {self.max_bytes} B")
            self.checked_parent(target, member)
            self.replace_link(target, member)
            shutil.copyfile(source_path, target)  # a copy, never a shared inode
            os.chmod(target, mode)
        else:
            kind = "FIFO" if info.isfifo() else "device file" if info.isdev() else "special file"
            raise UnsafeArchiveError(member, f"{kind} members are not allowed")
        self.names.append(name)

    def verify_links(self) -> None:
        """Links checked one by one can still combine to escape; re-check them all at the end."""
        for member, path in self.links:
            if not self.inside(os.path.realpath(path)):
                os.unlink(path)
                raise UnsafeArchiveError(member, "symlink leads outside the target via other links")


def unpack_bundle(
    source: Path | BinaryIO,
    dest_dir: Path,
    *,
    max_bytes: int | None = None,
    max_members: int = 100_000,
) -> list[str]:
    """Unpack a tar.gz (path or readable stream) into ``dest_dir``; returns member names.

    On :class:`UnsafeArchiveError` some earlier members may already be written: callers treat
    ``dest_dir`` as failed (the init-container exits non-zero and the pod never starts).
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    unpacker = _Unpacker(dest_dir, max_bytes, max_members)
    try:
        path, stream = (source, None) if isinstance(source, Path) else (None, source)
        with tarfile.open(name=path, fileobj=stream, mode="r|*") as tar:
            for info in tar:
                unpacker.extract(tar, info)
    except (tarfile.TarError, EOFError) as exc:
        raise StagingError(f"bundle is not a readable tar archive: {exc}") from exc
    unpacker.verify_links()
    return unpacker.names
