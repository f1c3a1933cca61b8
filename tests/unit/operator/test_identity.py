"""Issues 26 (finding 8) and 27 (pure part): a SparkApplication sees only the pods of its own
uid, so one deleted and created again under the same name (same pod names) never reads its
predecessor's pods, live or remembered, nor takes its outcome."""

from __future__ import annotations

from typing import Any

from sparkplane.operator.core.decision import CreateResources
from sparkplane.operator.kinds.pod_index import PodIndex
from sparkplane.operator.runtime.actions import controller_uid
from tests.unit.operator.opfixtures import UID, Walk, driver, make_cr


def _pod(name: str, uid: str, owner_kind: str | None, owner_uid: str = "") -> dict[str, Any]:
    refs = [{"kind": owner_kind, "name": "x", "uid": owner_uid, "controller": True}]
    role = "driver" if owner_kind == "SparkApplication" else "executor"
    meta = {"name": name, "namespace": "ns", "uid": uid, "labels": {"spark-role": role}}
    return {"metadata": {**meta, "ownerReferences": refs if owner_kind else []}}


def _uids(pods: tuple[dict[str, Any], ...]) -> list[str]:
    return [p["metadata"]["uid"] for p in pods]


def test_the_index_is_by_uid_so_a_recreated_name_sees_only_its_own_pods() -> None:
    index = PodIndex(keep_seconds=600)
    old_driver = _pod("pi-0-driver", "d-old", "SparkApplication", "cr-old")
    old_exec = _pod("pi-0-exec-1", "e-old", "Pod", "d-old")
    new_driver = _pod("pi-0-driver", "d-new", "SparkApplication", "cr-new")
    new_exec = _pod("pi-0-exec-1", "e-new", "Pod", "d-new")
    bare = _pod("bare", "b", None)
    assert index.update("ADDED", old_driver, 0) == ("ns", "x")
    assert index.update("ADDED", old_exec, 1) == ("ns", "x")
    assert index.update("ADDED", bare, 1) is None
    assert index.update("DELETED", old_exec, 2) == ("ns", "x")
    assert index.update("DELETED", old_driver, 2) == ("ns", "x")  # remembered: a tombstone
    assert index.of("cr-old") == ((), (old_driver,))
    assert index.of("cr-new") == ((), ())  # the same name, another uid: nothing inherited
    index.update("ADDED", new_exec, 3)  # an executor seen before its driver is kept
    index.update("ADDED", new_driver, 3)
    pods, graves = index.of("cr-new")
    assert _uids(pods) == ["d-new", "e-new"] and graves == ()
    assert _uids(tuple(index.drivers())) == ["d-new"]
    index.expire(700)  # the old tombstone runs out; the live app stays
    assert index.of("cr-old") == ((), ())
    assert index.update("MODIFIED", new_driver, 701) == ("ns", "x")  # still known
    assert _uids(index.of("cr-new")[0]) == ["d-new", "e-new"]


def test_executors_of_a_deleted_driver_stay_its_apps_until_the_tombstone_expires() -> None:
    index = PodIndex(keep_seconds=10)
    driver = _pod("pi-0-driver", "d", "SparkApplication", "cr")
    executor = _pod("pi-0-exec-1", "e", "Pod", "d")
    index.update("ADDED", driver, 0)
    index.update("DELETED", driver, 1)
    assert index.update("ADDED", executor, 2) == ("ns", "x")
    assert _uids(index.of("cr")[0]) == ["e"]
    index.update("DELETED", executor, 3)
    index.expire(20)
    assert index.of("cr") == ((), ()) and index.drivers() == []


def test_a_new_resource_never_takes_a_predecessors_outcome() -> None:
    """Issue 27: the predecessor's Succeeded driver (same name, same app ID ``pi-0``) is in
    what was observed; the new resource (another uid) still requests its own driver."""
    old = driver(0, "Succeeded", uid="d-old")
    old["metadata"]["ownerReferences"] = [{"kind": "SparkApplication", "uid": "old"}]
    walk = Walk(make_cr())
    walk.step(0, old, tombstones=(old,), owner=UID)
    assert walk.states == ["Submitted", "DriverRequested"]
    assert any(isinstance(a, CreateResources) for a in walk.decisions[-1].actions)
    walk.step(5, old, driver(0, "Succeeded", uid="d-new"), owner=UID)
    assert "Succeeded" in walk.states  # its own driver's end counts


def test_controller_uid() -> None:
    assert controller_uid(_pod("a", "1", "SparkApplication", "cr")) == "cr"
    assert controller_uid({"metadata": {}}) is None
    assert controller_uid(None) is None
