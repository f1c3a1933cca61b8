"""The pods of each SparkApplication, keyed by the application's uid, never by its name.

A Kubeflow SparkConnect runs as a SparkApplication does (its server is a driver the operator
creates): :data:`OWNER_KINDS` are the kinds whose pods are indexed, and each application is
remembered with its apiVersion and kind (what the work queue needs to wake the right one).

Owns :class:`PodIndex`: the live pods a SparkApplication controls (its drivers), the pods those
drivers control (their executors: Spark gives every executor an ownerReference to its driver
pod), and the *tombstones* of deleted drivers (their last state, so an evicted driver that
vanished at once is still seen as evicted; kept ``keep_seconds``). Everything is keyed by uid —
the application's, then each pod's — so a SparkApplication deleted and created again under the
same name (same attempt ids, so the same pod names) never sees its predecessor's pods, live or
remembered (issue 27: a re-used name inherited the old driver's ``Succeeded``).

Called by :class:`~sparkplane.operator.kinds.app_adapter.AppAdapter` under its lock. Pure: the
caller passes the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkplane.vocab import DRIVER_ROLE, ROLE_LABEL, SPARK_APPLICATION, SPARK_CONNECT, owner_refs

Obj = dict[str, Any]
AppRef = tuple[str, str]  # (namespace, name) of a SparkApplication: what the queue holds
#: The kinds whose drivers the operator creates (a SparkConnect's server is one).
OWNER_KINDS = (SPARK_APPLICATION, SPARK_CONNECT)


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def owner(pod: Mapping[str, Any], kind: str) -> tuple[str, str] | None:
    """(uid, name) of ``pod``'s first ownerReference of ``kind`` that has a uid."""
    for ref in owner_refs(pod, kind):
        if ref.get("uid"):
            return str(ref["uid"]), str(ref.get("name") or "")
    return None


def app_owner(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``pod``'s first ownerReference (with a uid) of one of :data:`OWNER_KINDS`."""
    return next((r for r in owner_refs(pod) if r.get("kind") in OWNER_KINDS and r.get("uid")), None)


@dataclass
class PodIndex:
    """Pods by owning application uid; see the module docstring."""

    keep_seconds: float = 600.0
    _drivers: dict[str, dict[str, Obj]] = field(default_factory=dict)  # app uid -> pod uid -> pod
    _children: dict[str, dict[str, Obj]] = field(default_factory=dict)  # driver uid -> ...
    _graves: dict[str, dict[str, tuple[float, Obj]]] = field(default_factory=dict)  # app uid
    _app_of_driver: dict[str, str] = field(default_factory=dict)  # driver uid -> app uid
    _refs: dict[str, AppRef] = field(default_factory=dict)  # app uid -> (namespace, name)
    _versions: dict[str, tuple[str, str]] = field(default_factory=dict)  # app uid -> (v, kind)

    def update(self, event: str, pod: Obj, now: float) -> AppRef | None:
        """Take one informer event; returns the application to reconcile (None: not one of
        an application's pods, or an executor whose driver is not indexed yet)."""
        found = self.update_versioned(event, pod, now)
        return None if found is None else (found[2], found[3])

    def update_versioned(
        self, event: str, pod: Obj, now: float
    ) -> tuple[str, str, str, str] | None:
        """:meth:`update`, with the application's apiVersion and kind first (a
        ``spark.apache.org`` and a ``sparkoperator.k8s.io`` SparkApplication are different
        resources, and a SparkConnect another)."""
        app_uid = self._update(event, pod, now)
        if app_uid is None or app_uid not in self._refs:
            return None
        version, kind = self._versions.get(app_uid, ("", SPARK_APPLICATION))
        return (version, kind, *self._refs[app_uid])

    def _update(self, event: str, pod: Obj, now: float) -> str | None:
        meta = _meta(pod)
        pod_uid = str(meta.get("uid") or "")
        if not pod_uid:
            return None
        deleted = event == "DELETED"
        app = app_owner(pod)
        if app is not None:
            app_uid, app_name = str(app["uid"]), str(app.get("name") or "")
            self._refs[app_uid] = (str(meta.get("namespace") or ""), app_name)
            self._versions[app_uid] = (str(app.get("apiVersion") or ""), str(app["kind"]))
            self._app_of_driver[pod_uid] = app_uid
            _put(self._drivers, app_uid, pod_uid, None if deleted else pod)
            driver = (meta.get("labels") or {}).get(ROLE_LABEL) == DRIVER_ROLE
            if deleted and driver:
                self._graves.setdefault(app_uid, {})[pod_uid] = (now, pod)
            elif deleted:
                self._app_of_driver.pop(pod_uid, None)
            else:
                _put(self._graves, app_uid, pod_uid, None)
            return app_uid
        parent = owner(pod, "Pod")
        if parent is None:
            return None
        _put(self._children, parent[0], pod_uid, None if deleted else pod)
        return self._app_of_driver.get(parent[0])

    def of(self, app_uid: str) -> tuple[tuple[Obj, ...], tuple[Obj, ...]]:
        """(live pods, tombstones newest first) of the application ``app_uid``: its drivers
        and the executors of its drivers, live or deleted."""
        drivers = tuple(self._drivers.get(app_uid, {}).values())
        graves = sorted(self._graves.get(app_uid, {}).values(), key=lambda g: -g[0])
        tombstones = tuple(p for _, p in graves)
        children = tuple(
            child
            for pod in (*drivers, *tombstones)
            for child in self._children.get(str(_meta(pod).get("uid")), {}).values()
        )
        return (*drivers, *children), tombstones

    def drivers(self) -> list[Obj]:
        """Every live pod an application controls."""
        return [pod for pods in self._drivers.values() for pod in pods.values()]

    def expire(self, now: float) -> None:
        """Forget tombstones older than ``keep_seconds`` and what only they kept."""
        for app_uid in list(self._graves):
            graves = self._graves[app_uid]
            for pod_uid in [u for u, (t, _) in graves.items() if now - t > self.keep_seconds]:
                graves.pop(pod_uid)
                if pod_uid not in self._drivers.get(app_uid, {}):
                    self._app_of_driver.pop(pod_uid, None)
                    self._children.pop(pod_uid, None)
            if not graves:
                self._graves.pop(app_uid)
        for app_uid in list(self._refs):
            if app_uid not in self._drivers and app_uid not in self._graves:
                self._refs.pop(app_uid)
                self._versions.pop(app_uid, None)


def _put(index: dict[str, dict[str, Any]], outer: str, inner: str, value: Any | None) -> None:
    """Set (or, with None, drop) ``index[outer][inner]``; an emptied bucket goes."""
    if value is None:
        bucket = index.get(outer)
        if bucket is not None:
            bucket.pop(inner, None)
            if not bucket:
                index.pop(outer)
        return
    index.setdefault(outer, {})[inner] = value
