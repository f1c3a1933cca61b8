"""Track many applications at once with a fixed number of watches.

One informer per resource kind (Spark pods, SparkApplications of both APIs, and scheduler
``Preempted`` events), whatever the number of apps: 500 apps cost the same four watch
connections as one. A SparkApplication API that is not served yet is an empty cache that looks
again (:class:`~sparkplane.kube.informer.Informer`): a tracker made before the CRDs were
installed (the demo installs the operator after its native apps) still sees the apps made
after. Each change re-derives the state of just the app it belongs to (with the same pure
functions as a one-shot query) and calls subscribers only when that state changed. The caches are
indexed (pods by owner uid and by namespace/role/app id, Events by the object they are about), so
one change costs the size of its app, not of every pod cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sparkplane.kube import Kube
from sparkplane.kube.informer import Informer
from sparkplane.model.apps import KINDS, App, Mode, is_native_driver, native_name
from sparkplane.model.assemble import Index, cr_app, missing_native_app, native_app
from sparkplane.vocab import APP_SELECTOR_LABEL, DRIVER_ROLE, EXECUTOR_ROLE, ROLE_LABEL

Obj = dict[str, Any]
AppKey = tuple[str, str, Mode]  # namespace, name, mode
Subscriber = Callable[[App], None]


BY_OWNER, BY_APP, BY_INVOLVED = "owner-uid", "role-app", "involved"


def _owner_uids(pod: Obj) -> list[str]:
    return [str(r.get("uid")) for r in pod["metadata"].get("ownerReferences") or []]


def _role_app(pod: Obj) -> list[str]:
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    app_id = labels.get(APP_SELECTOR_LABEL)
    role = labels.get(ROLE_LABEL)
    return [f"{meta.get('namespace', '')}/{role}/{app_id}"] if app_id and role else []


def _involved(event: Obj) -> list[str]:
    involved = event.get("involvedObject") or {}
    return [f"{event['metadata'].get('namespace', '')}/{involved.get('name', '')}"]


class Tracker:
    """Live states of every Spark application in a namespace (or all namespaces)."""

    def __init__(self, kube: Kube, namespace: str | None = None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.pods = Informer(kube, "v1", "Pod", namespace=namespace, label_selector=ROLE_LABEL)
        self.events = Informer(
            kube, "v1", "Event", namespace=namespace, field_selector="reason=Preempted"
        )
        self.crs: list[Informer] = [
            Informer(kube, k.api_version, k.kind, namespace=namespace)
            for mode, k in KINDS.items()
            if mode is not Mode.NATIVE
        ]
        self.pods.add_index(BY_OWNER, _owner_uids)
        self.pods.add_index(BY_APP, _role_app)
        self.events.add_index(BY_INVOLVED, _involved)
        self._apps: dict[AppKey, App] = {}
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        for informer in (self.pods, self.events, *self.crs):
            informer.add_handler(self._on_change)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> Tracker:
        for informer in (self.events, *self.crs, self.pods):
            informer.start()
        for informer in (self.events, *self.crs, self.pods):
            informer.wait_synced(timeout)
        return self

    def stop(self) -> None:
        for informer in (self.pods, self.events, *self.crs):
            informer.stop()

    @property
    def watches(self) -> int:
        """Open watch connections (constant: one per informer)."""
        return 2 + len(self.crs)

    # -- readers --------------------------------------------------------------------------
    def apps(self, namespace: str | None = None) -> list[App]:
        with self._lock:
            return sorted(
                (a for a in self._apps.values() if namespace in (None, a.namespace)),
                key=lambda a: (a.namespace, a.name),
            )

    def get(self, namespace: str, name: str) -> App | None:
        with self._lock:
            for mode in (Mode.NATIVE, Mode.APACHE, Mode.KUBEFLOW):
                app = self._apps.get((namespace, name, mode))
                if app is not None:
                    return app
        return None

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(app)`` on every state change; returns an unsubscribe function."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    # -- change handling ------------------------------------------------------------------
    def _on_change(self, kind: str, obj: Obj) -> None:
        meta = obj.get("metadata", {})
        ns = meta.get("namespace", "")
        if obj.get("kind") == "Event":
            involved = obj.get("involvedObject") or {}
            pod = self.pods.get(ns, involved.get("name", ""))
            if pod:
                self._refresh_pod(pod)
            else:
                self._refresh_missing(ns, involved.get("name", ""))
        elif obj.get("kind") == "SparkApplication":
            self._refresh_cr(obj, deleted=kind == "DELETED")
        elif kind == "DELETED" and is_native_driver(obj):
            # the last state of a deleted driver: Killed if it was still running, else as it was
            self._publish(native_app(obj, self._index(obj), deleted=True))
        else:
            self._refresh_pod(obj)

    def _refresh_pod(self, pod: Obj) -> None:
        labels = pod.get("metadata", {}).get("labels", {})
        ns = pod["metadata"].get("namespace", "")
        if labels.get(ROLE_LABEL) == DRIVER_ROLE:
            driver: Obj | None = pod
        else:  # an executor: find its driver by application id
            app_id = labels.get(APP_SELECTOR_LABEL)
            found = self.pods.by_index(BY_APP, f"{ns}/{DRIVER_ROLE}/{app_id}")
            driver = found[0] if found else None
        if driver is None:
            return
        for ref in driver["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "SparkApplication":
                for informer in self.crs:
                    cr = informer.get(ns, ref["name"])
                    if cr is not None and cr["metadata"].get("uid") == ref.get("uid"):
                        self._refresh_cr(cr)
                return
        self._publish(native_app(driver, self._index(driver)))

    def _refresh_missing(self, ns: str, driver_name: str) -> None:
        key = (ns, native_name(driver_name), Mode.NATIVE)
        with self._lock:
            last = self._apps.get(key)
        if last is None:
            return
        events = self.events.by_index(BY_INVOLVED, f"{ns}/{driver_name}")
        self._publish(missing_native_app(ns, driver_name, Index([], events), last))

    def _refresh_cr(self, cr: Obj, deleted: bool = False) -> None:
        meta = cr["metadata"]
        mode = Mode.KUBEFLOW if cr["apiVersion"].startswith("sparkoperator") else Mode.APACHE
        if deleted:
            with self._lock:
                self._apps.pop((meta.get("namespace", ""), meta["name"], mode), None)
            return
        drivers = self.pods.by_index(BY_OWNER, str(meta.get("uid")))
        index = self._index(drivers[0] if drivers else None, extra=drivers)
        self._publish(cr_app(cr, index))

    def _index(self, driver: Obj | None, extra: list[Obj] | None = None) -> Index:
        if driver is None:
            return Index(extra or [])
        ns = driver["metadata"].get("namespace", "")
        app_id = driver["metadata"].get("labels", {}).get(APP_SELECTOR_LABEL)
        execs = self.pods.by_index(BY_APP, f"{ns}/{EXECUTOR_ROLE}/{app_id}")
        events = self.events.by_index(BY_INVOLVED, f"{ns}/{driver['metadata']['name']}")
        return Index([driver, *execs], events)

    def _publish(self, app: App) -> None:
        key = (app.namespace, app.name, app.mode)
        with self._lock:
            before = self._apps.get(key)
            self._apps[key] = app
        if before is None or before.state != app.state:
            for callback in list(self._subscribers):
                callback(app)
