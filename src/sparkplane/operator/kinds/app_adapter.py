"""The SparkApplication kind for the generic loop: what it observes and how it decides.

Owns the index of pods per application (drivers the operator created, executors the drivers
created; an executor is mapped to its app through its owning driver pod), the tombstones of
deleted driver pods (their last state, so an evicted driver that vanished at once is still seen
as evicted; kept 10 minutes), the pod templates read from ``podTemplateFile``, and the one live
read the state machine may ask for (``check_driver``: is a driver absent from the cache really
gone?). The index is by name; what a resource observes is by identity (:func:`of_resource`):
only drivers its uid controls and executors of those drivers, so a SparkApplication deleted and
created again under the same name never sees its predecessor's pods (same names: attempt ids
derive from the name), and which SparkCluster of its namespace an app's ``spark.master`` names
(from the runner's SparkCluster cache: its driver gets that cluster's secret). Decisions come
from the pure :func:`~sparkplane.operator.core.reconciler.decide`.

Called by the runner (through :mod:`sparkplane.operator.runtime.loop`). Writes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sparkplane.kube import Kube
from sparkplane.operator.core import standalone_auth
from sparkplane.operator.core.decision import Decision
from sparkplane.operator.core.driver import template_files
from sparkplane.operator.core.naming import APP_NAME_LABEL, OPERATOR_NAME_LABEL
from sparkplane.operator.core.observe import Observed
from sparkplane.operator.core.reconciler import decide
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.operator.kinds.adapter import Key, Watch
from sparkplane.operator.kinds.podtemplates import TemplateDirLoader
from sparkplane.vocab import APACHE_API_VERSION, DRIVER_ROLE, ROLE_LABEL, SPARK_APPLICATION

Obj = dict[str, Any]
APP = SPARK_APPLICATION
TOMBSTONE_SECONDS = 600.0


NO_TEMPLATE_FILES = TemplateDirLoader(None)  # reads no local file (see operator.podtemplates)


def _owner_uids(pod: Obj, kind: str) -> set[str]:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return {str(r.get("uid")) for r in refs if r.get("kind") == kind and r.get("uid")}


def of_resource(
    uid: str, pods: Sequence[Obj], tombstones: Sequence[Obj]
) -> tuple[tuple[Obj, ...], tuple[Obj, ...]]:
    """The pods and tombstones of the resource ``uid``: pods it owns (its drivers) and pods
    owned by one of those drivers (their executors; Spark gives every executor that reference).
    A pod with neither (say, a predecessor's driver orphaned by its deletion) is not its.
    No ``uid``: everything."""
    if not uid:
        return tuple(pods), tuple(tombstones)

    def direct(pod: Obj) -> bool:
        return uid in _owner_uids(pod, APP)

    graves = tuple(p for p in tombstones if direct(p))
    drivers = {str((p.get("metadata") or {}).get("uid")) for p in (*pods, *graves) if direct(p)}
    kept = tuple(p for p in pods if direct(p) or _owner_uids(p, "Pod") & drivers)
    return kept, graves


class AppAdapter:
    """SparkApplications: pods in, :func:`decide` out."""

    kind = APP
    api_version = APACHE_API_VERSION

    def __init__(
        self,
        kube: Kube,
        settings: ReconcileSettings,
        clock: Callable[[], datetime],
        template_loader: Callable[[str], Obj | None] = NO_TEMPLATE_FILES,
        cluster_exists: Callable[[str, str], bool] = lambda namespace, name: False,
    ) -> None:
        self.kube, self.settings, self.clock = kube, settings, clock
        self.template_loader = template_loader
        self.cluster_exists = cluster_exists  # (namespace, name): a SparkCluster in the cache
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], dict[str, Obj]] = {}
        self._tombstones: dict[tuple[str, str], dict[str, tuple[float, Obj]]] = {}
        self._driver_app: dict[tuple[str, str], str] = {}

    def watches(self) -> Sequence[Watch]:
        selector = f"{OPERATOR_NAME_LABEL}={self.settings.operator_name}"
        return (Watch("v1", "Pod", selector, self._on_pod),)

    # -- the pod index ----------------------------------------------------------------------
    def _app_of_pod(self, pod: Obj) -> str | None:
        meta = pod.get("metadata") or {}
        owners = meta.get("ownerReferences") or []
        for ref in owners:
            if ref.get("kind") == APP:
                return str(ref["name"])
        for ref in owners:
            if ref.get("kind") == "Pod":
                with self._lock:
                    found = self._driver_app.get((meta.get("namespace", ""), ref.get("name")))
                if found:
                    return found
        label = (meta.get("labels") or {}).get(APP_NAME_LABEL)
        return str(label) if label else None

    def _on_pod(self, event: str, pod: Obj) -> Iterable[Key]:
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        app = self._app_of_pod(pod)
        if app is None:
            return ()
        key = (namespace, app)
        driver = (meta.get("labels") or {}).get(ROLE_LABEL) == DRIVER_ROLE
        with self._lock:
            bucket = self._pods.setdefault(key, {})
            graves = self._tombstones.setdefault(key, {})
            if event == "DELETED":
                bucket.pop(name, None)
                if driver:
                    graves[name] = (time.monotonic(), pod)
                    self._driver_app.pop((namespace, name), None)
            else:
                bucket[name] = pod
                graves.pop(name, None)
                if driver:
                    self._driver_app[(namespace, name)] = app
            if not bucket:
                self._pods.pop(key, None)
            if not graves:
                self._tombstones.pop(key, None)
        return ((APP, namespace, app),)

    def indexed(self) -> list[tuple[str, str]]:
        """(namespace, app) of every application with live pods."""
        with self._lock:
            return list(self._pods)

    def pods_of(self, namespace: str, app: str) -> list[Obj]:
        with self._lock:
            return list(self._pods.get((namespace, app), {}).values())

    def resync(self) -> None:
        now = time.monotonic()
        with self._lock:
            for key in list(self._tombstones):
                graves = self._tombstones[key]
                for name in [n for n, (t, _) in graves.items() if now - t > TOMBSTONE_SECONDS]:
                    graves.pop(name)
                if not graves:
                    self._tombstones.pop(key)

    # -- deciding ---------------------------------------------------------------------------
    def observe(self, cr: Obj) -> Observed:
        meta = cr["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        with self._lock:
            pods = tuple(self._pods.get(key, {}).values())
            graves = tuple(p for _, p in self._tombstones.get(key, {}).values())
        pods, graves = of_resource(str(meta.get("uid") or ""), pods, graves)
        templates: dict[str, Obj] = {}
        for role, path in template_files(cr).items():
            loaded = self.template_loader(path)
            if loaded is not None:
                templates[role] = loaded
        master = ((cr.get("spec") or {}).get("sparkConf") or {}).get("spark.master")
        target = standalone_auth.target_cluster(str(master) if master else None, key[0])
        found = target if target and self.cluster_exists(key[0], target) else None
        return Observed(pods=pods, tombstones=graves, templates=templates, auth_cluster=found)

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Decision:
        observed = replace(self.observe(cr), create_error=create_error)
        decision = decide(cr, observed, self.clock(), self.settings)
        if decision.check_driver:  # absent from the cache: a live read before concluding
            namespace = str(cr["metadata"]["namespace"])
            pod = self.kube.get_or_none("v1", "Pod", decision.check_driver, namespace)
            uid = str(cr["metadata"].get("uid") or "")
            if pod is not None and uid and uid not in _owner_uids(pod, APP):
                pod = None  # a predecessor's driver of the same name: not this resource's
            pods = (*observed.pods, pod) if pod else observed.pods
            observed = replace(observed, pods=pods, driver_absent=pod is None)
            decision = decide(cr, observed, self.clock(), self.settings)
        return decision
