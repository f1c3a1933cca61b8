"""A watch that expires (410 Gone) is relisted and keeps emitting: the path of ``get apps -w``
(SparkPlane.watch: usecases.waiting.watch over a Tracker's informers) through the real gateway
(``Kube.watch`` turning the API server's ERROR event into GoneError) over a fake HTTP transport.
The same against the real API server is tests/integration/test_watch_gone.py."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from sparkplane.kube.client import Kube
from sparkplane.kube.informer import Informer
from sparkplane.model.phase import AppPhase
from sparkplane.usecases.tracker import Tracker
from sparkplane.usecases.waiting import watch

NS = "ns"
GONE = {
    "type": "ERROR",
    "object": {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": "too old resource version: 5 (100)",
        "reason": "Expired",
        "code": 410,
    },
}


class _Stream:
    """A watch response: its lines (once ``ready`` is set), then open until shut down."""

    def __init__(self, lines: list[bytes], ready: threading.Event | None = None) -> None:
        self.lines, self.ready, self.closed = lines, ready, threading.Event()

    def __iter__(self) -> Any:
        if self.ready is not None:
            self.ready.wait(20)
        yield from self.lines
        self.closed.wait(20)

    def release_conn(self) -> None:
        pass

    def shutdown(self) -> None:
        self.closed.set()


class _Response:
    def __init__(
        self,
        status: int,
        body: Any = None,
        lines: list[bytes] | None = None,
        ready: threading.Event | None = None,
    ) -> None:
        self.status = status
        self._body = json.dumps(body).encode() if body is not None else b""
        self.response = _Stream(lines or [], ready)

    def read(self) -> bytes:
        return self._body


def driver(name: str, rv: int, phase: str = "Running") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-driver",
            "namespace": NS,
            "uid": f"uid-{name}",
            "resourceVersion": str(rv),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"spark-role": "driver", "spark-app-selector": f"spark-{name}"},
        },
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}]},
        "status": {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": "spark-kubernetes-driver",
                    "state": {"running": {}}
                    if phase == "Running"
                    else {"terminated": {"exitCode": 0}},
                }
            ],
        },
    }


class FakeApi:
    """Discovery, lists and watches of pods (events: none; no SparkApplication API). The first
    pod watch expires when ``expire`` is set (410 in the stream, as the API server answers a
    compacted resourceVersion); after the relist, the next one reports ``b`` succeeding."""

    def __init__(self) -> None:
        self.pod_lists = 0
        self.pod_watches: list[str] = []
        self.expire = threading.Event()

    def request(self, method: str, path: str, *, query: Any = None, **_: Any) -> _Response:
        query = query or {}
        if path == "/api/v1":
            kinds = [("pods", "Pod"), ("events", "Event")]
            return _Response(
                200, {"resources": [{"name": n, "kind": k, "namespaced": True} for n, k in kinds]}
            )
        if path.startswith("/apis/"):
            return _Response(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
        if path.endswith("/events"):
            if query.get("watch") == "true":
                return _Response(200, lines=[])
            return _Response(200, {"items": [], "metadata": {"resourceVersion": "5"}})
        if query.get("watch") == "true":
            self.pod_watches.append(str(query.get("resourceVersion")))
            if len(self.pod_watches) == 1:
                return _Response(200, lines=[json.dumps(GONE).encode()], ready=self.expire)
            event = {"type": "MODIFIED", "object": driver("b", 102, "Succeeded")}
            return _Response(200, lines=[json.dumps(event).encode()])
        self.pod_lists += 1
        if self.pod_lists == 1:
            return _Response(200, {"items": [driver("a", 5)], "metadata": {"resourceVersion": "5"}})
        items = [driver("a", 101, "Succeeded"), driver("b", 101)]  # what changed meanwhile
        return _Response(200, {"items": items, "metadata": {"resourceVersion": "101"}})


def test_informer_relists_after_410_and_keeps_emitting() -> None:
    api = FakeApi()
    informer = Informer(Kube(api), "v1", "Pod", namespace=NS)  # type: ignore[arg-type]
    seen: list[tuple[str, str, str]] = []
    informer.add_handler(
        lambda kind, obj: seen.append(
            (kind, obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
        )
    )
    informer.start().wait_synced(5)
    api.expire.set()
    deadline = time.monotonic() + 10
    while len(seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    informer.stop()
    assert seen == [
        ("ADDED", "a-driver", "5"),
        ("MODIFIED", "a-driver", "101"),  # the relist
        ("ADDED", "b-driver", "101"),
        ("MODIFIED", "b-driver", "102"),  # the watch resumed from the relist's version
    ]
    assert api.pod_watches == ["5", "101"] and informer.relists == 1


def test_an_index_follows_the_list_the_relist_and_the_watch() -> None:
    """``by_index`` answers from the cache as it changes: the first list, the relist after
    410 (which also re-indexes a changed value) and the watch's change."""
    api = FakeApi()
    informer = Informer(Kube(api), "v1", "Pod", namespace=NS)  # type: ignore[arg-type]
    informer.add_index("phase", lambda pod: [str(pod["status"]["phase"])])
    changes = threading.Semaphore(0)
    informer.add_handler(lambda kind, obj: changes.release())
    informer.start().wait_synced(5)
    assert [p["metadata"]["name"] for p in informer.by_index("phase", "Running")] == ["a-driver"]
    api.expire.set()
    for _ in range(4):  # ADDED a, then the relist's MODIFIED a and ADDED b, then b's MODIFIED
        assert changes.acquire(timeout=10)
    informer.stop()
    assert [p["metadata"]["name"] for p in informer.by_index("phase", "Succeeded")] == [
        "a-driver",
        "b-driver",
    ]
    assert informer.by_index("phase", "Running") == []
    assert informer.by_index("phase", "Pending") == []


def test_get_apps_watch_keeps_printing_after_410() -> None:
    """``sparkplane get apps -w`` is ``SparkPlane.watch``: waiting.watch over a Tracker."""
    api = FakeApi()
    tracker = Tracker(Kube(api), NS).start(timeout=10)  # type: ignore[arg-type]
    try:
        states: dict[str, list[AppPhase]] = {}
        for app in watch(tracker, NS, timeout=10):
            states.setdefault(app.name, []).append(app.state.phase)
            api.expire.set()  # the watch expires once the first app was printed
            if states.get("b", [])[-1:] == [AppPhase.SUCCEEDED]:
                break
    finally:
        tracker.stop()
    assert states["a"] == [AppPhase.RUNNING, AppPhase.SUCCEEDED]
    assert states["b"] == [AppPhase.RUNNING, AppPhase.SUCCEEDED]
    assert tracker.pods.relists == 1
