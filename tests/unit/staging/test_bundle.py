"""Packing bundles and refusing hostile archives when unpacking."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from sparkplane.staging.bundle import pack_bundle, pack_bundle_measured, unpack_bundle
from sparkplane.staging.errors import StagingError, UnsafeArchiveError


def test_pack_and_unpack_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "app.jar").write_bytes(b"PK jar bytes")
    (src / "pkg" / "mod.py").write_text("print('hi')\n")
    (src / "pkg" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "pkg" / "run.sh", 0o4777)  # setuid and world-writable must not survive
    (src / "link.jar").symlink_to(src / "app.jar")  # a local symlink: contents are bundled
    bundle = tmp_path / "b.tgz"
    size = pack_bundle(
        {"jars/app.jar": src / "app.jar", "jars/l.jar": src / "link.jar", "py": src / "pkg"},
        bundle,
    )
    assert size == bundle.stat().st_size > 0
    dest = tmp_path / "dest"
    names = unpack_bundle(bundle, dest)
    assert "jars/app.jar" in names
    assert (dest / "jars" / "app.jar").read_bytes() == b"PK jar bytes"
    assert (dest / "jars" / "l.jar").read_bytes() == b"PK jar bytes"
    assert not (dest / "jars" / "l.jar").is_symlink()
    assert (dest / "py" / "mod.py").read_text() == "print('hi')\n"
    assert (dest / "py" / "run.sh").stat().st_mode & 0o7777 == 0o755


def test_pack_rejects_duplicate_and_missing_entries(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("a")
    with pytest.raises(StagingError, match="unique"):
        pack_bundle([("x", tmp_path / "a"), ("./x", tmp_path / "a")], tmp_path / "b.tgz")
    with pytest.raises(StagingError, match="no such file"):
        pack_bundle({"x": tmp_path / "missing"}, tmp_path / "b.tgz")


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buffer.seek(0)
    return buffer


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _special(name: str, kind: bytes) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info, None


Member = tuple[tarfile.TarInfo, bytes | None]
HOSTILE: dict[str, tuple[list[Member], str, str]] = {
    "traversal": ([_file("ok.txt"), _file("../evil.txt")], "../evil.txt", "'..'"),
    "nested traversal": ([_file("a/../../evil.txt")], "a/../../evil.txt", "'..'"),
    "absolute": ([_file("/tmp/evil.txt")], "/tmp/evil.txt", "absolute"),
    "symlink absolute": ([_link("l", "/etc")], "l", "absolute"),
    "symlink escape": ([_link("d/l", "../../outside")], "d/l", "outside"),
    "hardlink escape": ([_link("h", "../outside", tarfile.LNKTYPE)], "h", "'..'"),
    "hardlink absolute": ([_link("h", "/etc/passwd", tarfile.LNKTYPE)], "h", "absolute"),
    "char device": ([_special("null", tarfile.CHRTYPE)], "null", "device"),
    "block device": ([_special("sda", tarfile.BLKTYPE)], "sda", "device"),
    "fifo": ([_special("pipe", tarfile.FIFOTYPE)], "pipe", "FIFO"),
    "links combining to escape": (
        [_link("x", "y/.."), _link("y", ".")],
        "x",
        "via other links",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_is_refused_naming_the_member(tmp_path: Path, case: str) -> None:
    members, bad_member, reason = HOSTILE[case]
    dest = tmp_path / "dest"
    with pytest.raises(UnsafeArchiveError) as info:
        unpack_bundle(_tar(*members), dest)
    assert info.value.member == bad_member
    assert reason in str(info.value)
    assert not (tmp_path / "evil.txt").exists()
    assert not (tmp_path / "outside").exists()


def test_write_through_symlinked_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "d").symlink_to(outside)  # e.g. left over in the shared volume
    with pytest.raises(UnsafeArchiveError, match="outside the target") as info:
        unpack_bundle(_tar(_file("d/evil.txt")), dest)
    assert info.value.member == "d/evil.txt"
    assert list(outside.iterdir()) == []


def test_internal_links_are_allowed(tmp_path: Path) -> None:
    archive = _tar(
        _file("lib/a.jar", b"A"),
        _link("current.jar", "lib/a.jar"),
        _link("copy.jar", "lib/a.jar", tarfile.LNKTYPE),
    )
    dest = tmp_path / "dest"
    unpack_bundle(archive, dest)
    assert (dest / "current.jar").is_symlink()
    assert (dest / "current.jar").read_bytes() == b"A"
    assert (dest / "copy.jar").read_bytes() == b"A"
    assert not (dest / "copy.jar").is_symlink()


def test_size_and_member_limits(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="more than 10 B"):
        unpack_bundle(_tar(_file("big", b"x" * 11)), tmp_path / "a", max_bytes=10)
    with pytest.raises(UnsafeArchiveError, match="more than 2 members"):
        unpack_bundle(_tar(_file("a"), _file("b"), _file("c")), tmp_path / "b", max_members=2)


def test_a_small_bundle_that_unpacks_huge_is_refused_before_writing_it(tmp_path: Path) -> None:
    """~1 MB of gzip that unpacks to 1 GiB: `--max-bytes` (the submitter's exact unpacked
    size) refuses it from the member header, before a byte of it is written."""
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz", compresslevel=9) as tar:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 1024**3
        tar.addfile(info, _Zeros(info.size))
    assert bomb.stat().st_size < 2 * 1024 * 1024
    dest = tmp_path / "dest"
    with pytest.raises(UnsafeArchiveError, match="more than 1048576 B"):
        unpack_bundle(bomb, dest, max_bytes=1024 * 1024)
    assert not (dest / "zeros.bin").exists()


def test_hard_links_count_toward_the_unpacked_size(tmp_path: Path) -> None:
    members = [_file("data", b"x" * 600)]
    for n in range(3):
        link = tarfile.TarInfo(f"copy{n}")
        link.type, link.linkname = tarfile.LNKTYPE, "data"
        members.append((link, None))
    with pytest.raises(UnsafeArchiveError, match="more than 1000 B"):
        unpack_bundle(_tar(*members), tmp_path / "d", max_bytes=1000)


def test_pack_measures_the_unpacked_size(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a" * 1000)
    (tmp_path / "b").write_bytes(b"b" * 234)
    size, unpacked = pack_bundle_measured(
        {"a": tmp_path / "a", "b": tmp_path / "b"}, tmp_path / "x.tgz"
    )
    assert unpacked == 1234 and size == (tmp_path / "x.tgz").stat().st_size
    assert unpack_bundle(tmp_path / "x.tgz", tmp_path / "out", max_bytes=unpacked) == ["a", "b"]


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_not_a_tar(tmp_path: Path) -> None:
    with pytest.raises(StagingError, match="not a readable tar"):
        unpack_bundle(io.BytesIO(b"definitely not a tarball" * 100), tmp_path)


def _dir(name: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    return info, None


HARD_LINKS: dict[str, tuple[list[Member], str]] = {
    "not yet unpacked": ([_file("a"), _link("h", "later", tarfile.LNKTYPE), _file("later")], "h"),
    "a directory": ([_dir("d"), _link("h", "d", tarfile.LNKTYPE)], "h"),
    "itself": ([_file("h"), _link("h", "h", tarfile.LNKTYPE)], "h"),
    "a symlink": ([_file("a"), _link("s", "a"), _link("h", "s", tarfile.LNKTYPE)], "h"),
}


@pytest.mark.parametrize("case", sorted(HARD_LINKS))
def test_hard_links_name_a_file_earlier_in_the_bundle(tmp_path: Path, case: str) -> None:
    members, bad_member = HARD_LINKS[case]
    with pytest.raises(UnsafeArchiveError, match="not a file earlier in the bundle") as info:
        unpack_bundle(_tar(*members), tmp_path / "d")
    assert info.value.member == bad_member


def test_a_member_replaces_a_link_at_its_path_instead_of_writing_through_it(
    tmp_path: Path,
) -> None:
    archive = _tar(
        _file("lib/a.jar", b"A"),
        _link("current.jar", "lib/a.jar"),
        _file("current.jar", b"C"),
        _link("copy.jar", "lib/a.jar", tarfile.LNKTYPE),
        _file("copy.jar", b"D"),
    )
    dest = tmp_path / "dest"
    unpack_bundle(archive, dest)
    assert (dest / "lib" / "a.jar").read_bytes() == b"A"
    assert not (dest / "current.jar").is_symlink()
    assert (dest / "current.jar").read_bytes() == b"C"
    assert (dest / "copy.jar").read_bytes() == b"D"


def test_modes_and_owners_come_from_the_data_filter(tmp_path: Path) -> None:
    setuid, private = tarfile.TarInfo("run.sh"), tarfile.TarInfo("notes")
    setuid.mode, private.mode = 0o6777, 0o400
    setuid.uid = private.uid = 4242
    dest = tmp_path / "dest"
    unpack_bundle(_tar((setuid, b"#!/bin/sh\n"), (private, b"n")), dest)
    assert (dest / "run.sh").stat().st_mode & 0o7777 == 0o755
    assert (dest / "notes").stat().st_mode & 0o7777 == 0o600
    assert (dest / "run.sh").stat().st_uid == os.getuid()
