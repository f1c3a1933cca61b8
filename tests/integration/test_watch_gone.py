"""``get apps -w`` after a real 410 Gone (issue 26, finding 8).

The gateway is the real one, except that its first pod list reports resourceVersion 1, as a
cache listed long ago would before etcd compacted: the watch that follows asks the API server
for version 1 and gets its real answer, 410 "too old resource version". The tracker must relist
and keep emitting: an app submitted afterwards is seen through to Succeeded by ``SparkPlane.watch``
(what ``sparkplane get apps -w`` prints from). The relist path itself over a fake transport is in
tests/unit/kube/test_watch_gone.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane import AppPhase, SparkPlane
from sparkplane.errors import GoneError
from sparkplane.kube import Kube
from sparkplane.kube.client import WatchEvent
from tests.integration.helpers import wait_for

EXAMPLES = Path(__file__).parents[2] / "examples"


class StaleListKube(Kube):
    """The real gateway whose first Pod list reports resourceVersion 1; records the 410s."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube.api)
        self.stale = True
        self.gone: list[str] = []

    def list_page(
        self, api_version: str, kind: str, namespace: str | None = None, **kw: Any
    ) -> Any:
        page = super().list_page(api_version, kind, namespace, **kw)
        if kind == "Pod" and self.stale:
            self.stale = False
            page["metadata"]["resourceVersion"] = "1"
        return page

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[WatchEvent]:
        try:
            yield from super().watch(*args, **kwargs)
        except GoneError as exc:
            self.gone.append(str(exc))
            raise


def test_get_apps_watch_keeps_emitting_after_a_real_410(
    kube: Kube, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sparkplane.kube.informer")
    stale = StaleListKube(kube)
    watcher = SparkPlane(stale, namespace)
    try:
        changes = watcher.watch(namespace, timeout=120)  # the tracker starts here
        wait_for(lambda: stale.gone, timeout=30, what="a 410 from the API server")
        assert "too old resource version" in stale.gone[0], stale.gone
        pods = watcher.tracker(namespace).pods
        wait_for(lambda: pods.relists >= 1, timeout=30, what="the relist after the 410")

        doc = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
        doc["metadata"]["namespace"] = namespace
        ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
        ann["sim.sparkplane.io/run-for"] = "3s"
        submitted = SparkPlane(kube, namespace).submit(doc)
        phases: list[AppPhase] = []
        for app in changes:
            if app.name == submitted.name:
                phases.append(app.state.phase)
                if app.state.finished:
                    break
    finally:
        for tracker in watcher._trackers.values():
            tracker.stop()
    assert phases[-1] is AppPhase.SUCCEEDED, phases
    assert AppPhase.RUNNING in phases or AppPhase.PENDING in phases
    assert "watch expired (410 Gone): relisting" in caplog.text
