"""The local-disk store (atomic writes, sweep) and the SQLite metadata (persistence)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.staging.errors import StagingError
from sparkplane.staging.metadata import MetadataDB, ResourceRecord
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.store import BundleNotStoredError, LocalDiskStore

OWNER = ResourceOwner("ns", {"app": "x"})


def test_committed_write_is_readable(tmp_path: Path) -> None:
    store = LocalDiskStore(tmp_path)
    with store.open_writer("r1") as writer:
        writer.write(b"hello ")
        writer.write(b"world")
        assert not store.exists("r1")  # invisible until commit
        assert writer.commit() == 11
    assert store.exists("r1")
    with store.open_reader("r1") as reader:
        assert reader.read() == b"hello world"
    assert list(store.list_ids()) == ["r1"]


def test_uncommitted_or_failed_write_leaves_nothing(tmp_path: Path) -> None:
    store = LocalDiskStore(tmp_path)
    with store.open_writer("r1") as writer:
        writer.write(b"partial")

    def interrupted() -> None:
        with store.open_writer("r2") as writer:
            writer.write(b"partial")
            raise RuntimeError("client went away")

    with pytest.raises(RuntimeError):
        interrupted()
    assert not store.exists("r1")
    assert not store.exists("r2")
    assert list((tmp_path / ".tmp").iterdir()) == []


def test_sweep_removes_leftovers_of_a_crash(tmp_path: Path) -> None:
    store = LocalDiskStore(tmp_path)
    writer = store.open_writer("r1")
    writer.write(b"x" * 100)  # process "dies" here: no commit, no abort
    assert LocalDiskStore(tmp_path).sweep() == 1
    assert list((tmp_path / ".tmp").iterdir()) == []
    assert list(store.list_ids()) == []


def test_delete_and_missing_reads(tmp_path: Path) -> None:
    store = LocalDiskStore(tmp_path)
    with store.open_writer("r1") as writer:
        writer.commit()
    assert store.delete("r1")
    assert not store.delete("r1")
    with pytest.raises(BundleNotStoredError):
        store.open_reader("r1")


@pytest.mark.parametrize("bad", ["../x", "a/b", "", "x" * 200])
def test_store_refuses_unsafe_ids(tmp_path: Path, bad: str) -> None:
    with pytest.raises(StagingError):
        LocalDiskStore(tmp_path).open_writer(bad)


def test_metadata_survives_reopen_and_keeps_first_download(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    db = MetadataDB(path)
    db.insert(ResourceRecord("r1", "hash", OWNER, 42, 100.0))
    db.mark_downloaded("r1", 200.0)
    db.mark_downloaded("r1", 300.0)
    db.close()
    reopened = MetadataDB(path)
    record = reopened.get("r1")
    assert record == ResourceRecord("r1", "hash", OWNER, 42, 100.0, 200.0)
    assert reopened.get("nope") is None
    assert reopened.delete("r1")
    assert not reopened.delete("r1")
    assert reopened.all() == []
