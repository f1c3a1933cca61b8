"""``get apps -w`` after a real 410 Gone (issue 26, finding 8).

The gateway is the real one, except that its first SparkApplication list reports
resourceVersion 1, as a cache listed long ago would: the watch that follows asks the API server
for version 1, older than anything its watch cache of SparkApplications holds (that cache
started when the CRD was created), and gets the API server's own answer, 410 "too old resource
version". (Pods would not do: on a fresh dev cluster the pod cache starts at version 1, and the
API server replays from there.) The tracker must relist and keep emitting: an app created
afterwards is seen through to Succeeded by ``SparkPlane.watch``, what ``sparkplane get apps -w``
prints from. The relist path over a fake transport is tests/unit/kube/test_watch_gone.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane import AppPhase, SparkPlane
from sparkplane.errors import GoneError
from sparkplane.kube import Kube
from sparkplane.kube.client import WatchEvent
from sparkplane.operator.deploy.install import install_crds
from tests.integration.helpers import wait_for

API = "spark.apache.org/v1"


class StaleListKube(Kube):
    """The real gateway whose first SparkApplication list reports resourceVersion 1; it
    records the 410s the API server answers."""

    def __init__(self, kube: Kube) -> None:
        super().__init__(kube.api)
        self.stale = True
        self.gone: list[str] = []

    def list_page(
        self, api_version: str, kind: str, namespace: str | None = None, **kw: Any
    ) -> Any:
        page = super().list_page(api_version, kind, namespace, **kw)
        if (api_version, kind) == (API, "SparkApplication") and self.stale:
            self.stale = False
            page["metadata"]["resourceVersion"] = "1"
        return page

    def watch(self, *args: Any, **kwargs: Any) -> Iterator[WatchEvent]:
        try:
            yield from super().watch(*args, **kwargs)
        except GoneError as exc:
            self.gone.append(str(exc))
            raise


def _served(kube: Kube) -> bool:
    try:
        kube.discovery.resolve(API, "SparkApplication")
    except Exception:
        return False
    return True


def _status(kube: Kube, name: str, namespace: str, summary: str) -> None:
    status = {"status": {"currentState": {"currentStateSummary": summary}}}
    kube.patch(API, "SparkApplication", name, status, namespace, subresource="status")


def test_get_apps_watch_keeps_emitting_after_a_real_410(
    kube: Kube, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sparkplane.kube.informer")
    install_crds(kube)
    wait_for(lambda: _served(kube), timeout=30, what=f"{API} served")
    stale = StaleListKube(kube)
    watcher = SparkPlane(stale, namespace)
    try:
        changes = watcher.watch(namespace, timeout=120)  # the tracker starts here
        wait_for(lambda: stale.gone, timeout=30, what="a 410 from the API server")
        assert "too old resource version: 1 " in stale.gone[0], stale.gone
        (apache,) = [i for i in watcher.tracker(namespace).crs if i.api_version == API]
        wait_for(lambda: apache.relists >= 1, timeout=30, what="the relist after the 410")

        app = {
            "apiVersion": API,
            "kind": "SparkApplication",
            "metadata": {"name": "after-gone"},
            "spec": {
                "mainClass": "org.apache.spark.examples.SparkPi",
                "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
                "runtimeVersions": {"sparkVersion": "4.0.1"},
            },
        }
        kube.create(app, namespace)
        phases: list[AppPhase] = []
        for seen in changes:
            if seen.name != "after-gone":
                continue
            phases.append(seen.state.phase)
            if len(phases) == 1:
                _status(kube, "after-gone", namespace, "RunningHealthy")
            elif seen.state.phase is AppPhase.RUNNING:
                _status(kube, "after-gone", namespace, "Succeeded")
            if seen.state.finished:
                break
    finally:
        for tracker in watcher._trackers.values():
            tracker.stop()
    assert phases == [AppPhase.PENDING, AppPhase.RUNNING, AppPhase.SUCCEEDED], phases
    assert "SparkApplication watch expired (410 Gone): relisting" in caplog.text
