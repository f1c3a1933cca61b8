"""Every event of an application's objects, in time order (what ``sparkplane events`` shows),
and :func:`describe` (``sparkplane describe``: summary, owned objects, events)."""

from __future__ import annotations

from typing import Any

from sparkplane.kube import Kube
from sparkplane.lifecycle.apps import App

Obj = dict[str, Any]


def event_time(event: Obj) -> str:
    """The best timestamp of an event (RFC 3339 strings sort chronologically)."""
    series = event.get("series") or {}
    return str(
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or event.get("metadata", {}).get("creationTimestamp")
        or ""
    )


def app_object_names(kube: Kube, app: App) -> set[str]:
    """Names of the app's objects: owner, driver, executors, and what carries its app id."""
    names = {app.name}
    if app.driver_pod:
        names.add(app.driver_pod)
    if app.app_id:
        selector = f"spark-app-selector={app.app_id}"
        for api, kind in (("v1", "Pod"), ("v1", "ConfigMap"), ("v1", "Service")):
            names |= {
                o["metadata"]["name"]
                for o in kube.list(api, kind, app.namespace, label_selector=selector)
            }
    return names


def app_events(kube: Kube, app: App) -> list[Obj]:
    """Events whose involved object belongs to ``app``, oldest first."""
    names = app_object_names(kube, app)
    events = [
        e
        for e in kube.list("v1", "Event", app.namespace)
        if (e.get("involvedObject") or {}).get("name") in names
    ]
    return sorted(events, key=event_time)


def describe(kube: Kube, app: App) -> dict[str, Any]:
    """The app's summary, the objects it owns (that this identity may list) and its events."""
    from sparkplane.lifecycle.kill import remaining_objects

    uid = app.owner.get("metadata", {}).get("uid", "")
    return {
        "app": app.summary(),
        "objects": remaining_objects(kube, app.namespace, {uid}) if uid else [],
        "events": app_events(kube, app),
    }
