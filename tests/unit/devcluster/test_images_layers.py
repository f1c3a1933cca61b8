"""Layer tars: deterministic bytes, explicit owners and modes, links kept, digests that match."""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
from pathlib import Path

from sparkplane_devcluster.images.layers import (
    MTIME,
    Entry,
    data_file,
    directory,
    parents,
    symlink,
    tree,
    write_layer,
)


def _sample_tree(root: Path) -> Path:
    src = root / "dist"
    (src / "bin").mkdir(parents=True)
    (src / "jars").mkdir()
    (src / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    (src / "bin" / "spark-submit").chmod(0o700)  # a host umask must not leak into the layer
    (src / "jars" / "a.jar").write_bytes(b"jar")
    (src / "jars" / "a.jar").chmod(0o600)
    os.link(src / "jars" / "a.jar", src / "jars" / "0-same.jar")
    (src / "current").symlink_to("jars/a.jar")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "x.pyc").write_bytes(b"junk")
    return src


def _members(path: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_tree_keeps_modes_owner_symlinks_and_hard_links(tmp_path: Path):
    src = _sample_tree(tmp_path)
    entries = tree(src, "opt/spark", 185, 185, skip=lambda rel: rel.endswith("__pycache__"))
    blob = write_layer(entries, tmp_path / "layer.tar", gzip_level=None)
    members = _members(blob.path)

    assert "opt/spark/__pycache__" not in members
    assert "opt/spark/__pycache__/x.pyc" not in members
    submit = members["opt/spark/bin/spark-submit"]
    assert (submit.mode, submit.uid, submit.gid) == (0o755, 185, 185)
    assert members["opt/spark/jars/a.jar"].mode == 0o644
    assert members["opt/spark"].isdir() and members["opt/spark"].uid == 185
    link = members["opt/spark/current"]
    assert link.issym() and link.linkname == "jars/a.jar"
    # hard links: the first path in sorted order holds the data, the other links to it
    assert members["opt/spark/jars/0-same.jar"].isreg()
    hard = members["opt/spark/jars/a.jar"]
    assert hard.islnk() and hard.linkname == "opt/spark/jars/0-same.jar"
    assert {m.mtime for m in members.values()} == {MTIME}
    assert {(m.uname, m.gname) for m in members.values()} == {("", "")}
    with tarfile.open(blob.path) as tar:
        names = tar.getnames()
    assert names == sorted(names)


def test_same_entries_give_the_same_bytes_in_any_order(tmp_path: Path):
    entries = [
        directory("etc"),
        data_file("etc/passwd", b"root:x:0:0::/root:/bin/sh\n"),
        symlink("bin", "usr/bin"),
        *parents("usr/bin/tool"),
        data_file("usr/bin/tool", b"\x7fELF", 0o755),
    ]
    one = write_layer(entries, tmp_path / "one.tar.gz")
    two = write_layer(list(reversed(entries)), tmp_path / "two.tar.gz")
    assert one.path.read_bytes() == two.path.read_bytes()
    assert (one.digest, one.diff_id, one.size) == (two.digest, two.diff_id, two.size)


def test_digest_hashes_the_stored_bytes_and_diff_id_the_plain_tar(tmp_path: Path):
    entries = [data_file("hello", b"hello\n" * 1000)]
    zipped = write_layer(entries, tmp_path / "l.tar.gz", gzip_level=6)
    plain = write_layer(entries, tmp_path / "l.tar", gzip_level=None)

    stored = zipped.path.read_bytes()
    assert zipped.digest == "sha256:" + hashlib.sha256(stored).hexdigest()
    assert zipped.size == len(stored)
    assert zipped.media_type == "application/vnd.oci.image.layer.v1.tar+gzip"
    unpacked = gzip.decompress(stored)
    assert zipped.diff_id == "sha256:" + hashlib.sha256(unpacked).hexdigest()
    assert unpacked == plain.path.read_bytes()
    assert plain.digest == plain.diff_id
    assert plain.media_type == "application/vnd.oci.image.layer.v1.tar"
    assert stored[4:8] == b"\0\0\0\0", "the gzip header carries no timestamp"


def test_hard_link_listed_before_its_target_still_points_backwards(tmp_path: Path):
    content = data_file("usr/bin/perl", b"perl")
    entries = [
        Entry("usr/bin/perl", "file", 0o755, size=4, opener=content.opener, inode="perl"),
        Entry("usr/bin/a-perl", "file", 0o755, size=4, opener=content.opener, inode="perl"),
    ]
    members = _members(write_layer(entries, tmp_path / "l.tar", gzip_level=None).path)
    assert members["usr/bin/a-perl"].isreg() and members["usr/bin/a-perl"].size == 4
    assert members["usr/bin/perl"].islnk() and members["usr/bin/perl"].linkname == "usr/bin/a-perl"


def test_parents_lists_every_ancestor_directory():
    assert [e.path for e in parents("a/b/c.txt", uid=185)] == ["a", "a/b"]
    assert all(e.kind == "dir" and e.uid == 185 for e in parents("a/b/c.txt", uid=185))
