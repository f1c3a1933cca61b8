"""Every event of an application's objects, in time order (what ``sparkplane events`` shows:
:class:`~sparkplane.model.phase.Event` each), and :func:`describe` (``sparkplane describe``:
a :class:`~sparkplane.model.apps.Description`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sparkplane.kube import Kube
from sparkplane.model.apps import App, Description
from sparkplane.model.phase import Event

Obj = dict[str, Any]
_EPOCH = datetime.min.replace(tzinfo=UTC)


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


def app_events(kube: Kube, app: App) -> list[Event]:
    """Events whose involved object belongs to ``app``, oldest first."""
    names = app_object_names(kube, app)
    events = [
        e
        for e in kube.list("v1", "Event", app.namespace)
        if (e.get("involvedObject") or {}).get("name") in names
    ]
    return sorted((Event.from_api(e) for e in events), key=lambda e: e.time or _EPOCH)


def describe(kube: Kube, app: App) -> Description:
    """The app, the objects it owns (that this identity may list) and its events."""
    from sparkplane.usecases.kill import remaining_objects

    uid = app.owner.get("metadata", {}).get("uid", "")
    owned = remaining_objects(kube, app.namespace, {uid}) if uid else []
    return Description(app=app, objects=tuple(owned), events=tuple(app_events(kube, app)))
