"""Issue 26, finding 8 (pure part): a SparkApplication sees only the pods of its own uid, so one
deleted and created again under the same name (same pod names) never reads its predecessor's."""

from __future__ import annotations

from typing import Any

from sparkplane.operator.kinds.app_adapter import of_resource
from sparkplane.operator.runtime.actions import controller_uid


def _pod(name: str, uid: str, owner_kind: str | None, owner_uid: str = "") -> dict[str, Any]:
    refs = [{"kind": owner_kind, "name": "x", "uid": owner_uid, "controller": True}]
    return {"metadata": {"name": name, "uid": uid, "ownerReferences": refs if owner_kind else []}}


def test_only_the_resources_own_drivers_and_their_executors() -> None:
    old_driver = _pod("pi-0-driver", "d-old", "SparkApplication", "cr-old")
    old_exec = _pod("pi-0-exec-1", "e-old", "Pod", "d-old")
    new_driver = _pod("pi-0-driver", "d-new", "SparkApplication", "cr-new")
    new_exec = _pod("pi-0-exec-1", "e-new", "Pod", "d-new")
    grave = _pod("pi-0-driver", "d-gone", "SparkApplication", "cr-new")
    grave_exec = _pod("pi-0-exec-2", "e-gone", "Pod", "d-gone")
    bare = _pod("bare", "b", None)
    pods, graves = of_resource(
        "cr-new", [old_driver, old_exec, new_driver, new_exec, grave_exec, bare], [grave]
    )
    assert [p["metadata"]["uid"] for p in pods] == ["d-new", "e-new", "e-gone"]
    assert graves == (grave,)
    assert of_resource("", [old_driver], []) == ((old_driver,), ())


def test_controller_uid() -> None:
    assert controller_uid(_pod("a", "1", "SparkApplication", "cr")) == "cr"
    assert controller_uid({"metadata": {}}) is None
    assert controller_uid(None) is None
