"""Turn observed objects (pods, SparkApplication resources, events) into :class:`App` values.

The same pure function serves a one-shot ``sparkplane get apps`` (objects from three list calls)
and the long-running tracker (objects from its watch caches), so both agree on every state.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sparkplane.model import classify_apache_cr, classify_kubeflow_cr, classify_native
from sparkplane.model.apps import App, Mode, is_native_driver, native_name
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    EXECUTOR_ROLE,
    KUBEFLOW_GROUP,
    ROLE_LABEL,
    parse_time,
)

Obj = dict[str, Any]


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata", {})
    return meta


def _labels(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] = _meta(obj).get("labels") or {}
    return labels


class Index:
    """Pods and events of one snapshot, indexed the ways classification needs."""

    def __init__(self, pods: Iterable[Obj], events: Iterable[Obj] = ()) -> None:
        self.drivers: list[Obj] = []
        self.executors: dict[tuple[str, str], list[Obj]] = defaultdict(list)
        self.owned_drivers: dict[str, Obj] = {}
        for pod in pods:
            labels = _labels(pod)
            role = labels.get(ROLE_LABEL)
            if role == "driver":
                self.drivers.append(pod)
                for ref in _meta(pod).get("ownerReferences") or []:
                    if ref.get("kind") == "SparkApplication":
                        self.owned_drivers[ref["uid"]] = pod
            elif role == EXECUTOR_ROLE and labels.get(APP_SELECTOR_LABEL):
                key = (_meta(pod).get("namespace", ""), labels[APP_SELECTOR_LABEL])
                self.executors[key].append(pod)
        self.events: dict[tuple[str, str], list[Obj]] = defaultdict(list)
        for event in events:
            involved = event.get("involvedObject") or event.get("regarding") or {}
            key = (
                involved.get("namespace", _meta(event).get("namespace", "")),
                involved.get("name", ""),
            )
            self.events[key].append(event)

    def executors_of(self, driver: Obj | None) -> list[Obj]:
        if driver is None:
            return []
        app_id = _labels(driver).get(APP_SELECTOR_LABEL)
        return self.executors.get((_meta(driver).get("namespace", ""), app_id or ""), [])

    def events_of(self, namespace: str, name: str | None) -> list[Obj]:
        return self.events.get((namespace, name or ""), [])


def native_app(driver: Obj, index: Index, *, deleted: bool = False) -> App:
    """A natively submitted app from its driver pod (``deleted``: its last state, it is gone)."""
    meta = _meta(driver)
    ns, name = meta.get("namespace", ""), meta["name"]
    execs, events = index.executors_of(driver), index.events_of(ns, name)
    state = classify_native(driver, execs, events, deleted=deleted)
    return App(
        name=native_name(name),
        namespace=ns,
        mode=Mode.NATIVE,
        owner=driver,
        state=state,
        app_id=_labels(driver).get(APP_SELECTOR_LABEL),
        driver_pod=name,
        created=parse_time(meta.get("creationTimestamp")),
    )


def missing_native_app(namespace: str, driver_name: str, index: Index, last: App | None) -> App:
    """A native app whose driver pod is gone (known from earlier; events may say why)."""
    state = classify_native(
        None, [], index.events_of(namespace, driver_name), driver_name=driver_name
    )
    return App(
        name=native_name(driver_name),
        namespace=namespace,
        mode=Mode.NATIVE,
        owner=last.owner if last else {},
        state=state,
        app_id=last.app_id if last else None,
        driver_pod=driver_name,
        created=last.created if last else None,
    )


def cr_app(cr: Obj, index: Index) -> App:
    """An app owned by a SparkApplication custom resource (Apache's API or Kubeflow's)."""
    meta = _meta(cr)
    driver = index.owned_drivers.get(meta.get("uid", ""))
    execs = index.executors_of(driver)
    if cr.get("apiVersion", "").startswith(KUBEFLOW_GROUP):
        mode, state = Mode.KUBEFLOW, classify_kubeflow_cr(cr, executor_pods=execs)
        app_id = (cr.get("status") or {}).get("sparkApplicationId")
    else:
        mode = Mode.APACHE
        state = classify_apache_cr(cr, driver_pod=driver, executor_pods=execs)
        app_id = None
    if driver is not None:
        app_id = app_id or _labels(driver).get(APP_SELECTOR_LABEL)
    return App(
        name=meta["name"],
        namespace=meta.get("namespace", ""),
        mode=mode,
        owner=cr,
        state=state,
        app_id=app_id,
        driver_pod=_meta(driver).get("name") if driver else state.driver,
        created=parse_time(meta.get("creationTimestamp")),
    )


def assemble(pods: Sequence[Obj], crs: Sequence[Obj], events: Sequence[Obj] = ()) -> list[App]:
    """Every app visible in one snapshot: native drivers first, then custom resources."""
    index = Index(pods, events)
    apps = [native_app(d, index) for d in index.drivers if is_native_driver(d)]
    apps += [cr_app(cr, index) for cr in crs]
    return sorted(apps, key=lambda a: (a.namespace, a.name))
