"""Which informer events make the operator archive a driver deleted by someone else, and once."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from sparkplane.operator.runtime.deletions import DeletionArchiver, deleted_driver


def _pod(role: str = "driver", deleting: bool = True, uid: str = "u1") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "pi-0-driver",
        "namespace": "jobs",
        "uid": uid,
        "labels": {"spark-role": role},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-11-23T12:00:00Z"
    return {"metadata": meta}


class Recorder(Executor):
    """Runs nothing: records what would run (the archiving itself is integration-tested)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.calls.append((fn, *args))
        return Future()


def test_only_drivers_being_deleted_count() -> None:
    assert deleted_driver("MODIFIED", _pod())
    assert deleted_driver("ADDED", _pod())  # seen at the informer's first list
    assert not deleted_driver("DELETED", _pod())  # gone: too late to read its log
    assert not deleted_driver("MODIFIED", _pod(deleting=False))
    assert not deleted_driver("MODIFIED", _pod(role="executor"))


def test_each_pod_is_archived_once_and_only_by_the_leader() -> None:
    pool, leading = Recorder(), [False]
    archiver = DeletionArchiver(None, pool, lambda: leading[0])  # type: ignore[arg-type]
    archiver.on_event("MODIFIED", _pod())
    assert pool.calls == []  # a standby replica leaves it to the leader
    leading[0] = True
    for _ in range(3):  # the pod changes several times while it stops
        archiver.on_event("MODIFIED", _pod())
    archiver.on_event("MODIFIED", _pod(uid="u2"))  # a new pod of the same name
    assert [call[1]["metadata"]["uid"] for call in pool.calls] == ["u1", "u2"]


def test_pods_the_sweeper_deletes_are_not_someone_elses() -> None:
    pool = Recorder()
    archiver = DeletionArchiver(None, pool, lambda: True)  # type: ignore[arg-type]
    archiver.ours("u1")  # the sweeper removes an older attempt's driver itself
    archiver.on_event("MODIFIED", _pod(uid="u1"))
    archiver.on_event("MODIFIED", _pod(uid="u2"))
    assert [call[1]["metadata"]["uid"] for call in pool.calls] == ["u2"]
