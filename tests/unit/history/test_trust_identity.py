"""Issue 26, findings 3 and 7 (pure and filesystem parts): the pruner trusts where an archive
is, never what it says; event logs are deleted only under the pruner's own configured root;
namespaces get their own event-log store and shared ones are found."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparkplane.history import archive as layout
from sparkplane.history import server as history
from sparkplane.history import server_files as history_files
from sparkplane.history.archive import ArchiveMeta
from sparkplane.history.logs import prune
from sparkplane.history.server import EventLogStore
from sparkplane.history.stores import FsStore
from sparkplane.settings import Settings

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _meta(namespace: str, app: str, app_id: str = "spark-1") -> ArchiveMeta:
    return ArchiveMeta(
        namespace=namespace,
        app=app,
        driver_pod=f"{app}-driver",
        archived_at=(NOW - timedelta(hours=2)).isoformat(),
        reason="killed",
        retain_seconds=60,
        app_id=app_id,
    )


def _put(store: FsStore, where: tuple[str, str], meta: ArchiveMeta) -> None:
    store.put(layout.log_key(*where), b"log\n")
    store.put(layout.meta_key(*where), meta.to_json())


def test_a_meta_json_naming_another_namespace_is_skipped(tmp_path: Path) -> None:
    """The attack: a tenant's archive whose meta.json names the victim's namespace and app."""
    store = FsStore(tmp_path / "archive")
    _put(store, ("victim", "pi"), _meta("victim", "pi"))
    _put(store, ("tenant", "forged"), _meta("victim", "pi"))  # forged: names the victim
    _put(store, ("tenant", "own"), _meta("tenant", "own"))
    dropped = prune(NOW, settings=Settings(), store=store, event_log_root=None)
    # the victim's own expired archive goes (it is its own), the forged one is skipped
    assert sorted((m.namespace, m.app) for m in dropped) == [("tenant", "own"), ("victim", "pi")]
    assert store.get("tenant/forged/meta.json") is not None


def test_forged_archive_alone_never_deletes_the_victims(tmp_path: Path) -> None:
    store = FsStore(tmp_path / "archive")
    fresh = ArchiveMeta(
        namespace="victim",
        app="pi",
        driver_pod="pi-driver",
        archived_at=NOW.isoformat(),
        reason="killed",
        retain_seconds=3600,
    )
    _put(store, ("victim", "pi"), fresh)  # not expired
    _put(store, ("tenant", "x"), _meta("victim", "pi"))  # expired, names the victim
    assert prune(NOW, settings=Settings(), store=store, event_log_root=None) == []
    assert store.get("victim/pi/driver.log") == b"log\n"


def test_fs_store_refuses_symlinks_out_of_its_root(tmp_path: Path) -> None:
    outside = tmp_path / "precious"
    (outside / "pi").mkdir(parents=True)
    (outside / "pi" / "keep.txt").write_text("keep")
    root = tmp_path / "archive"
    root.mkdir()
    (root / "jobs").symlink_to(outside)
    store = FsStore(root)
    with pytest.raises(ValueError, match="symbolic link"):
        store.delete_prefix("jobs/pi/")
    with pytest.raises(ValueError, match="symbolic link"):
        store.put("jobs/pi/driver.log", b"x")
    assert (outside / "pi" / "keep.txt").read_text() == "keep"


def test_event_logs_are_removed_only_in_the_namespaces_directory(tmp_path: Path) -> None:
    root = tmp_path / "events"
    mine, other = root / "jobs", root / "other"
    for where in (mine, other):
        (where / "eventlog_v2_spark-1").mkdir(parents=True)
        (where / "spark-1.inprogress").write_text("x")
    (mine / "spark-2").write_text("y")
    removed = history_files.remove_event_logs(root, "jobs", ["spark-1"])
    assert sorted(removed) == ["eventlog_v2_spark-1", "spark-1.inprogress"]
    assert sorted(p.name for p in mine.iterdir()) == ["spark-2"]
    assert len(list(other.iterdir())) == 2  # another namespace's logs: untouched
    # names that would climb out, and namespaces that are not names, remove nothing
    assert history_files.remove_event_logs(root, "jobs", ["..", "../other", ".x", "a/b"]) == []
    assert history_files.remove_event_logs(root, "..", ["spark-1"]) == []
    assert history_files.remove_event_logs(None, "other", ["spark-1"]) == []


def test_event_log_removal_never_follows_a_symlink(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    (precious / "data").mkdir(parents=True)
    root = tmp_path / "events"
    root.mkdir()
    (root / "jobs").symlink_to(precious)  # the namespace directory itself is a link
    assert history_files.remove_event_logs(root, "jobs", ["data"]) == []
    os.unlink(root / "jobs")
    (root / "jobs").mkdir()
    (root / "jobs" / "spark-9").symlink_to(precious / "data")  # a driver planted a link
    assert history_files.remove_event_logs(root, "jobs", ["spark-9"]) == []
    assert (precious / "data").is_dir() and (root / "jobs" / "spark-9").is_symlink()


def test_prune_removes_event_logs_under_the_configured_root_and_the_archives_namespace(
    tmp_path: Path,
) -> None:
    root = tmp_path / "events"
    for ns in ("tenant", "victim"):
        (root / ns).mkdir(parents=True)
        (root / ns / "spark-7").write_text("log")
    store = FsStore(tmp_path / "archive")
    _put(store, ("tenant", "app"), _meta("tenant", "app", app_id="spark-7"))
    prune(NOW, settings=Settings(), store=store, event_log_root=root)
    assert not (root / "tenant" / "spark-7").exists()
    assert (root / "victim" / "spark-7").exists()


def test_configured_root() -> None:
    def root(env: dict[str, str]) -> Path | None:
        return history_files.configured_root(Settings.load(env).event_log_root)

    assert root({}) == Path(history.DEFAULT_ROOT)
    assert root({"SPARKPLANE_EVENT_LOG_ROOT": "off"}) is None
    assert root({"SPARKPLANE_EVENT_LOG_ROOT": "relative/dir"}) is None
    assert root({"SPARKPLANE_EVENT_LOG_ROOT": "/srv/events"}) == Path("/srv/events")


def test_each_namespace_has_its_own_store_by_default() -> None:
    assert history.default_host_path("a") != history.default_host_path("b")
    assert history.default_host_path("a") == f"{history.DEFAULT_ROOT}/a"


def test_shared_stores_are_found() -> None:
    stores = [
        ("a", EventLogStore(host_path="/var/lib/sparkplane/spark-events")),
        ("b", EventLogStore(host_path="/var/lib/sparkplane/spark-events/")),
        ("c", EventLogStore(host_path="/var/lib/sparkplane/spark-events/c")),  # nested in a's
        ("d", EventLogStore(host_path="/var/lib/sparkplane/spark-events-d")),
        ("e", EventLogStore(log_dir="s3a://bucket/events")),
        ("f", EventLogStore(log_dir="s3a://bucket/events/")),
        ("g", EventLogStore(claim="events")),  # a claim is per namespace
        ("h", EventLogStore(claim="events")),
        ("i", EventLogStore(host_path=history.default_host_path("i"))),
    ]
    shared = history.shared_stores(stores)
    assert shared == [
        ("hostPath /var/lib/sparkplane/spark-events", ["a", "b", "c", "i"]),
        ("logDir s3a://bucket/events", ["e", "f"]),
    ]
    own = [(ns, EventLogStore(host_path=history.default_host_path(ns))) for ns in "xyz"]
    assert history.shared_stores(own) == []
