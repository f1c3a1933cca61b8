"""Bundles: pack local dependencies into a tar.gz, and unpack untrusted bundles safely.

Packing is used by the submitter before an upload; unpacking by ``sparkplane fetch`` inside the
init-container. Both stream (tarfile stream mode), so a bundle is never held in memory.
Unpacking trusts nothing in the archive: each member goes through ``tarfile``'s ``data``
extraction filter (nothing written or linked outside the target, no devices/FIFOs, no setuid
or group/world-writable modes, no owners) and the few rules it does not cover
(:meth:`_Unpacker.checked`: member count, unpacked size, strict names, hard links); a refused
member raises :class:`UnsafeArchiveError` naming it. No network here.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO

from sparkplane.staging.errors import StagingError, UnsafeArchiveError


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
    """Extracts one member at a time through ``tarfile``'s ``data`` filter, which does the
    confinement: no path or link leading outside the target (through links already there
    too), no absolute link, no device or FIFO, modes without setuid or group/world write, no
    owners. The rules checked here by hand are those the filter does not cover:

    * the member count and the unpacked size (``--max-bytes``), from the headers, before a
      byte is written: the filter limits where a member goes, not how much there is;
    * a member name must be a normalised relative POSIX path (no ``/`` at the start, no
      ``..``): the filter strips a leading ``/`` and accepts ``a/../b`` when it stays inside;
      a bundle we pack never has either, so one is refused, not rewritten;
    * a symlink's target may not go down into a name and then up (``y/..``): the filter
      resolves it against the tree as it is now, and a later member (``y`` -> ``.``) can turn
      it outward (newer Python releases rewrite such a target, older ones keep it); and every
      link is resolved once more when all members are written (:meth:`verify_links`);
    * a hard link must name a regular file met earlier in the bundle, and counts at its full
      size: the filter checks where it points, not what it points to;
    * a member's directory must resolve inside the target: the filter resolves the whole path,
      and a link at its end could lead back inside from a directory outside, which ``tarfile``
      would then write in;
    * a member replaces a file or link already at its path instead of writing through it
      (``tarfile`` opens the path as it is: through a link, or into a hard-linked copy).
    """

    def __init__(self, dest_dir: Path, max_bytes: int | None, max_members: int) -> None:
        self.root = os.path.realpath(dest_dir)
        self.max_bytes = max_bytes
        self.max_members = max_members
        self.total = 0
        self.names: list[str] = []
        self.files: dict[str, int] = {}  # regular file members so far -> size
        self.links: list[tuple[str, str]] = []

    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def add_bytes(self, size: int, member: str) -> None:
        self.total += size
        if self.max_bytes is not None and self.total > self.max_bytes:
            raise UnsafeArchiveError(member, f"bundle unpacks to more than {self.max_bytes} B")

    def checked(self, info: tarfile.TarInfo) -> tarfile.TarInfo:
        """``info`` with its name (and a hard link's target) normalised, once the count, size,
        name and link rules hold (see the class); else :class:`UnsafeArchiveError`."""
        member = info.name
        if len(self.names) >= self.max_members:
            raise UnsafeArchiveError(member, f"more than {self.max_members} members")
        name = _clean_name(member, member)
        linkname = info.linkname
        if info.isreg():
            self.add_bytes(info.size, member)
        elif info.issym():
            parts = info.linkname.split("/")
            down = next((i for i, part in enumerate(parts) if part != ".."), len(parts))
            if ".." in parts[down:]:
                raise UnsafeArchiveError(
                    member,
                    f"symlink to {info.linkname!r} goes up after a name: "
                    "it could lead outside the target via other links",
                )
        elif info.islnk():
            linkname = source = _clean_name(info.linkname, member)
            if source not in self.files or source == name:
                raise UnsafeArchiveError(
                    member, f"hard link to {info.linkname!r}, not a file earlier in the bundle"
                )
            self.add_bytes(self.files[source], member)  # counted as a copy would be
        return info.replace(name=name, linkname=linkname, deep=False)

    def extract(self, tar: tarfile.TarFile, info: tarfile.TarInfo) -> None:
        """Check ``info`` (:meth:`checked`), then extract it through the ``data`` filter."""
        member = info.name
        safe = self.checked(info)
        target = os.path.join(self.root, safe.name)
        if not self.inside(os.path.realpath(os.path.dirname(target))):
            raise UnsafeArchiveError(member, "its directory is a link leading outside the target")
        if not info.isdir() and os.path.lexists(target):
            if os.path.isdir(target) and not os.path.islink(target):
                raise UnsafeArchiveError(member, "would replace a directory")
            os.unlink(target)
        try:
            tar.extract(safe, self.root, filter="data")
        except tarfile.FilterError as exc:
            raise UnsafeArchiveError(member, _reason(exc)) from exc
        if info.isreg():
            self.files[safe.name] = info.size
        elif info.islnk():
            self.files[safe.name] = self.files[safe.linkname]
        else:
            self.files.pop(safe.name, None)
        if info.issym():
            self.links.append((member, target))
        self.names.append(safe.name)

    def verify_links(self) -> None:
        """Every link again, once all members are written.

        The filter judges a link against the tree when the link is made; a later member can
        still change what it resolves through, so the finished tree is checked once more."""
        for member, path in self.links:
            if not self.inside(os.path.realpath(path)):
                os.unlink(path)
                raise UnsafeArchiveError(member, "symlink leads outside the target via other links")


def _reason(exc: tarfile.FilterError) -> str:
    """A short reason for one of ``tarfile``'s filter errors (the member is named apart)."""
    info = exc.tarinfo
    if isinstance(exc, tarfile.SpecialFileError):
        kind = "FIFO" if info.isfifo() else "device file" if info.isdev() else "special file"
        return f"{kind} members are not allowed"
    if isinstance(exc, tarfile.AbsoluteLinkError):
        return f"link to absolute path {info.linkname!r}"
    if isinstance(exc, tarfile.LinkOutsideDestinationError):
        return f"link to {info.linkname!r} leads outside the target"
    if isinstance(exc, tarfile.OutsideDestinationError):
        return "it would be written outside the target (through a link)"
    return "absolute or non-POSIX path"


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
