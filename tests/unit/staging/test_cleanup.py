"""Clean-up decisions with an injected clock and owner checker, and their application."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.staging.cleanup import (
    CleanupPolicy,
    Deletion,
    Reason,
    Verdict,
    classify,
    decide,
    no_owner_check,
    run_cleanup,
    sweep_orphans,
)
from sparkplane.staging.metadata import MetadataDB, ResourceRecord
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.store import LocalDiskStore

POLICY = CleanupPolicy(unused_expiry=100.0, owner_grace=10.0)
ALIVE = ResourceOwner("ns", {"app": "alive"})
GONE = ResourceOwner("ns", {"app": "gone"})


def rec(
    rid: str, created: float, downloaded: float | None, owner: ResourceOwner = ALIVE
) -> ResourceRecord:
    return ResourceRecord(rid, "h", owner, 1, created, downloaded)


@pytest.mark.parametrize(
    ("created", "downloaded", "now", "verdict"),
    [
        (0.0, None, 99.9, Verdict.KEEP),
        (0.0, None, 100.0, Verdict.EXPIRED),
        (0.0, 50.0, 1000.0, Verdict.CHECK_OWNER),
        (0.0, 995.0, 1000.0, Verdict.KEEP),  # inside the grace after first download
    ],
)
def test_classify(created: float, downloaded: float | None, now: float, verdict: Verdict) -> None:
    assert classify(rec("r", created, downloaded), now, POLICY) is verdict


def test_decide_asks_once_per_owner_and_deletes_only_orphans() -> None:
    calls: list[tuple[str, dict[str, str]]] = []

    def checker(namespace: str, labels: dict[str, str]) -> bool:
        calls.append((namespace, labels))
        return labels["app"] == "alive"

    records = [
        rec("unused-old", 0.0, None),
        rec("unused-young", 950.0, None),
        rec("alive-1", 0.0, 10.0),
        rec("gone-1", 0.0, 10.0, GONE),
        rec("gone-2", 0.0, 20.0, GONE),
    ]
    assert decide(records, 1000.0, POLICY, checker) == [
        Deletion("unused-old", Reason.UNUSED_EXPIRED),
        Deletion("gone-1", Reason.OWNER_GONE),
        Deletion("gone-2", Reason.OWNER_GONE),
    ]
    assert sorted(c[1]["app"] for c in calls) == ["alive", "gone"]


def test_failing_owner_check_keeps_bundles() -> None:
    def broken(namespace: str, labels: dict[str, str]) -> bool:
        raise ConnectionError("API server down")

    assert decide([rec("r", 0.0, 1.0, GONE)], 1000.0, POLICY, broken) == []


def test_unverifiable_owners_expire_at_max_age_with_one_warning_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A namespace the server may not list (Forbidden) or a server without credentials:
    bundles are kept until ``max_age``, then deleted; each round logs one line, no traceback."""
    policy = CleanupPolicy(unused_expiry=100.0, owner_grace=10.0, max_age=5000.0)

    def forbidden(namespace: str, labels: dict[str, str]) -> bool:
        raise PermissionError(f'pods is forbidden in "{namespace}"\nsecond line')

    records = [rec("young", 4000.0, 4001.0, GONE), rec("old", 0.0, 1.0, ALIVE)]
    with caplog.at_level("WARNING", logger="sparkplane.staging.cleanup"):
        assert decide(records, 6000.0, policy, forbidden) == [Deletion("old", Reason.MAX_AGE)]
    [line] = caplog.records
    assert "owner check failed in 1 namespace(s)" in line.getMessage()
    assert "forbidden" in line.getMessage() and "second line" not in line.getMessage()
    assert line.exc_info is None
    caplog.clear()
    with caplog.at_level("WARNING", logger="sparkplane.staging.cleanup"):
        deleted = decide(records, 6000.0, policy, no_owner_check)
    assert deleted == [Deletion("old", Reason.MAX_AGE)]
    assert caplog.records == []  # no credentials is a configuration, said once at start
    never = CleanupPolicy(unused_expiry=100.0, owner_grace=10.0, max_age=0)
    assert decide(records, 6000.0, never, forbidden) == []


def _stored(store: LocalDiskStore, db: MetadataDB, record: ResourceRecord) -> None:
    with store.open_writer(record.resource_id) as writer:
        writer.write(b"data")
        writer.commit()
    db.insert(record)


def test_run_cleanup_removes_bytes_and_rows(tmp_path: Path) -> None:
    store, db = LocalDiskStore(tmp_path / "b"), MetadataDB(tmp_path / "m.db")
    _stored(store, db, rec("keep", 0.0, 10.0))
    _stored(store, db, rec("gone", 0.0, 10.0, GONE))
    _stored(store, db, rec("old", 0.0, None))
    done = run_cleanup(db, store, lambda ns, labels: labels["app"] == "alive", 1000.0, POLICY)
    assert {d.resource_id for d in done} == {"gone", "old"}
    assert [r.resource_id for r in db.all()] == ["keep"]
    assert sorted(store.list_ids()) == ["keep"]


def test_sweep_orphans_deletes_bundles_without_rows(tmp_path: Path) -> None:
    store, db = LocalDiskStore(tmp_path / "b"), MetadataDB(tmp_path / "m.db")
    _stored(store, db, rec("known", 0.0, None))
    with store.open_writer("orphan") as writer:
        writer.commit()
    assert sweep_orphans(db, store) == 1
    assert list(store.list_ids()) == ["known"]
