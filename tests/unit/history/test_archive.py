"""The log archive's pure parts and its filesystem store: layout, caps, retention, read-back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparkplane.errors import AppNotFoundError
from sparkplane.history import archive as layout
from sparkplane.history.archive import ArchiveMeta
from sparkplane.history.logs import archived_session, live_or_archived, prune, read_archived
from sparkplane.history.stores import FsStore, open_store
from sparkplane.settings import Settings

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def _meta(app: str = "pi", *, ago: timedelta = timedelta(0), retain: int = 60) -> ArchiveMeta:
    return ArchiveMeta(
        namespace="jobs",
        app=app,
        driver_pod=f"{app}-driver",
        archived_at=(NOW - ago).isoformat(),
        reason="killed",
        retain_seconds=retain,
        app_id="spark-123",
        executors=(1,),
    )


def test_keys_are_per_app_and_refuse_path_tricks() -> None:
    assert layout.log_key("jobs", "pi") == "jobs/pi/driver.log"
    assert layout.log_key("jobs", "pi", 3) == "jobs/pi/executor-3.log"
    assert layout.meta_key("jobs", "pi") == "jobs/pi/meta.json"
    for bad in ("..", "a/b", "", "UP"):
        with pytest.raises(ValueError, match="not a Kubernetes name"):
            layout.app_prefix("jobs", bad)


def test_cap_keeps_small_logs_whole_and_head_and_tail_of_big_ones() -> None:
    text, cut = layout.cap_text(["a", "b"], 100)
    assert (text, cut) == ("a\nb\n", False)
    lines = [f"line {i:04d}" for i in range(1000)]
    text, cut = layout.cap_text(lines, 200)
    assert cut and len(text.encode()) < 300
    assert text.startswith("line 0000\n") and text.endswith("line 0999\n")
    assert "lines dropped here, over the 200-byte cap" in text


def test_retention_from_the_app_or_the_default() -> None:
    assert layout.retention_of({layout.RETENTION_KEY: "90"}, timedelta(days=7)) == timedelta(
        seconds=90
    )
    assert layout.retention_of({layout.RETENTION_KEY: "soon"}, timedelta(days=1)) == timedelta(
        days=1
    )
    assert layout.retention_of(None, timedelta(days=2)) == timedelta(days=2)
    assert layout.expired(_meta(ago=timedelta(seconds=61)), NOW)
    assert not layout.expired(_meta(ago=timedelta(seconds=59)), NOW)


def test_meta_round_trips_and_notice_names_the_deletion() -> None:
    meta = _meta()
    assert ArchiveMeta.from_json(meta.to_json()) == meta
    assert "executor 1 log from the archive, pod deleted at 2026-11-23T12:00:00+00:00 (killed)" in (
        layout.deleted_notice(meta, 1)
    )


def test_fs_store_put_get_keys_delete(tmp_path: Path) -> None:
    store = FsStore(tmp_path)
    store.put("jobs/pi/driver.log", b"hello\n")
    store.put("jobs/pi/meta.json", b"{}")
    assert store.get("jobs/pi/driver.log") == b"hello\n"
    assert store.get("jobs/other/driver.log") is None
    assert store.keys("jobs/") == ["jobs/pi/driver.log", "jobs/pi/meta.json"]
    with pytest.raises(ValueError, match="bad archive key"):
        store.put("../escape", b"x")
    assert store.delete_prefix("jobs/pi/") == 2
    assert not (tmp_path / "jobs").exists()  # the emptied namespace folder goes too


def test_open_store_location_and_off(tmp_path: Path) -> None:
    assert open_store(Settings.load({"SPARKPLANE_LOG_ARCHIVE": "off"})) is None
    store = open_store(Settings.load({"SPARKPLANE_LOG_ARCHIVE": str(tmp_path)}))
    assert isinstance(store, FsStore) and store.root == tmp_path
    cached = open_store(Settings.load({"SPARKPLANE_CACHE_DIR": str(tmp_path / "c")}))
    assert isinstance(cached, FsStore) and cached.root == tmp_path / "c" / "log-archive"


def _archived(store: FsStore, meta: ArchiveMeta, text: str) -> None:
    store.put(layout.log_key(meta.namespace, meta.app), text.encode())
    store.put(layout.meta_key(meta.namespace, meta.app), meta.to_json())


def test_reading_back_falls_to_the_archive_only_when_the_pod_is_gone(tmp_path: Path) -> None:
    settings = Settings(log_archive=str(tmp_path))
    store = FsStore(tmp_path)
    _archived(store, _meta(), "one\ntwo\nPi is roughly 3.14\n")
    found = read_archived("jobs", "pi", tail=1, settings=Settings(), store=store)
    assert found is not None and found[1] == ["Pi is roughly 3.14"]

    def gone() -> list[str]:
        raise AppNotFoundError("the driver pod is gone")

    notices: list[str] = []
    lines = list(
        live_or_archived(gone, "jobs", "pi", None, notice=notices.append, settings=settings)
    )
    assert lines[-1] == "Pi is roughly 3.14" and "from the archive" in notices[0]
    live = live_or_archived(lambda: iter(["live"]), "jobs", "pi", None, settings=settings)
    assert list(live) == ["live"]
    with pytest.raises(AppNotFoundError, match="gone"):
        list(live_or_archived(gone, "jobs", "other", None, settings=settings))


def test_an_ended_sessions_newest_run_is_found_by_its_name(tmp_path: Path) -> None:
    """``session logs NAME`` after the end: the newest archived run whose driver served
    session NAME, whichever its app is named (``NAME-<id>``, or ``spark-<id>`` when long)."""
    settings = Settings(log_archive=str(tmp_path))
    store = FsStore(tmp_path)
    runs = [
        ("nb-1a", "nb", timedelta(hours=2)),
        ("spark-2b", "nb", timedelta(hours=1)),  # newer run of nb, its name too long for a prefix
        ("nb-other-3c", "nb-other", timedelta(0)),  # another session whose name starts alike
        ("nb-4d", None, timedelta(0)),  # a batch app named like it, not a session
    ]
    for app, session, ago in runs:
        meta = ArchiveMeta(**{**_meta(app, ago=ago).__dict__, "session": session})
        _archived(store, meta, f"log of {app}\n")
    found = archived_session("jobs", "nb", settings=settings)
    assert found is not None and found.app == "spark-2b"
    assert archived_session("jobs", "nb-other", settings=settings).app == "nb-other-3c"  # type: ignore[union-attr]
    assert archived_session("jobs", "missing", settings=settings) is None
    assert archived_session("elsewhere", "nb", settings=settings) is None
    # a record written before the field existed (or by a newer writer) still reads
    old = ArchiveMeta.from_json(
        b'{"namespace": "jobs", "app": "a", "driver_pod": "a-driver", '
        b'"archived_at": "2026-11-23T12:00:00+00:00", "reason": "r", '
        b'"retain_seconds": 1, "future": 1}'
    )
    assert old.session is None


def test_prune_drops_only_expired_apps(tmp_path: Path) -> None:
    store = FsStore(tmp_path)
    _archived(store, _meta("old", ago=timedelta(hours=2)), "x\n")
    _archived(store, _meta("new", ago=timedelta(seconds=1)), "y\n")
    store.put("jobs/broken/meta.json", b"not json")
    dropped = prune(NOW, settings=Settings(), store=store, event_log_root=None)
    assert [m.app for m in dropped] == ["old"]
    assert store.get("jobs/new/driver.log") == b"y\n"
    assert store.get("jobs/broken/meta.json") == b"not json"  # never delete on a guess
