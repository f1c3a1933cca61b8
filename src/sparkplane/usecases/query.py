"""One-shot reads: find one application by name, or list them, with a few list calls.

``get`` looks for a native driver pod (``<name>-driver`` or ``<name>``), then a SparkApplication
of ``spark.apache.org``, then one of ``sparkoperator.k8s.io``. ``list_apps`` costs one list of
Spark pods, one of each served SparkApplication kind and one of ``Preempted`` events.

Preempted apps stay visible after the fact: a ``Preempted`` event about a ``*-driver`` pod that
no longer exists still yields that app (state Failed/Preempted) for as long as the cluster keeps
the event, and a preemptor the scheduler named by uid is named by pod (one extra list of pods,
only when such an event is there). A label ``selector`` (``-l``) applies to the driver pods and
the SparkApplications.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sparkplane.errors import AppNotFoundError, KubeError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.model.apps import KINDS, App, Mode, driver_candidates, is_native_driver
from sparkplane.model.assemble import (
    Index,
    assemble,
    cr_app,
    missing_native_app,
    native_app,
)
from sparkplane.model.native import KUEUE_STOPPED, stopped_by_kueue
from sparkplane.vocab import APP_SELECTOR_LABEL, DRIVER_SELECTOR, EXECUTOR_SELECTOR, ROLE_LABEL

Obj = dict[str, Any]


def _crs(kube: Kube, namespace: str | None, selector: str | None = None) -> list[Obj]:
    out: list[Obj] = []
    for mode, kind in KINDS.items():
        if mode is Mode.NATIVE:
            continue
        try:
            out += kube.list(kind.api_version, kind.kind, namespace, label_selector=selector)
        except KubeError as exc:
            if exc.code != 404:  # kind not served: that operator is not installed
                raise
    return out


def list_apps(kube: Kube, namespace: str | None, *, selector: str | None = None) -> list[App]:
    """Every application of ``namespace`` (all namespaces when None), preempted ones whose
    driver is gone included (not with a ``selector``: their labels are gone with the pod)."""
    pod_selector = f"{ROLE_LABEL},{selector}" if selector else ROLE_LABEL
    pods = kube.list("v1", "Pod", namespace, label_selector=pod_selector)
    events = kube.list("v1", "Event", namespace, field_selector="reason=Preempted")
    apps = assemble(pods, _crs(kube, namespace, selector), events)
    if not selector:
        apps = sorted(apps + preempted_leftovers(apps, events), key=lambda a: (a.namespace, a.name))
    return name_preemptors(kube, apps)


def _involved(event: Obj) -> tuple[str, str, str]:
    obj = event.get("involvedObject") or event.get("regarding") or {}
    ns = obj.get("namespace") or event.get("metadata", {}).get("namespace", "")
    return ns, obj.get("kind", ""), obj.get("name", "")


def preempted_leftovers(apps: list[App], events: list[Obj]) -> list[App]:
    """Apps known only from a ``Preempted`` event about a driver pod that is gone."""
    known = {(a.namespace, a.driver_pod) for a in apps}
    index = Index([], events)
    out: dict[tuple[str, str], App] = {}
    for event in events:
        ns, kind, name = _involved(event)
        if kind == "Pod" and name.endswith("-driver") and (ns, name) not in known:
            out.setdefault((ns, name), missing_native_app(ns, name, index, None))
    return list(out.values())


def name_preemptors(kube: Kube, apps: list[App]) -> list[App]:
    """Replace a preemptor known by uid (the scheduler's event text) with ``ns/pod-name``."""
    uids = {a.state.preemptor for a in apps if a.state.preemptor and "/" not in a.state.preemptor}
    if not uids:
        return apps
    namespaces = {a.namespace for a in apps if a.state.preemptor in uids}
    names: dict[str, str] = {}
    for ns in namespaces:
        for pod in kube.list("v1", "Pod", ns):
            meta = pod["metadata"]
            if meta.get("uid") in uids:
                names[meta["uid"]] = f"{meta.get('namespace')}/{meta['name']}"
    return [
        dataclasses.replace(a, state=dataclasses.replace(a.state, preemptor=names[p]))
        if (p := a.state.preemptor) in names
        else a
        for a in apps
    ]


def _preempted_gone(kube: Kube, name: str, namespace: str) -> App | None:
    """The app ``name`` if only a Preempted event about its driver pod is left, or Kueue's
    Stopped event (a queued native driver Kueue evicted: docs/queues.md)."""
    driver = driver_candidates(name)[0]
    events = kube.list(
        "v1", "Event", namespace, field_selector=f"reason=Preempted,involvedObject.name={driver}"
    )
    stopped = kube.list(
        "v1",
        "Event",
        namespace,
        field_selector=f"reason={KUEUE_STOPPED},involvedObject.name={driver}",
    )
    events += [e for e in stopped if stopped_by_kueue(e)]
    found = preempted_leftovers([], events)
    return name_preemptors(kube, found)[0] if found else None


def _pods_of(kube: Kube, namespace: str, driver: Obj) -> Index:
    app_id = driver["metadata"].get("labels", {}).get(APP_SELECTOR_LABEL)
    execs = (
        kube.list(
            "v1",
            "Pod",
            namespace,
            label_selector=f"{EXECUTOR_SELECTOR},{APP_SELECTOR_LABEL}={app_id}",
        )
        if app_id
        else []
    )
    name = driver["metadata"]["name"]
    events = kube.list("v1", "Event", namespace, field_selector=f"involvedObject.name={name}")
    return Index([driver, *execs], events)


def get_app(kube: Kube, name: str, namespace: str) -> App:
    """The application called ``name``; raises AppNotFoundError saying where it looked."""
    for candidate in driver_candidates(name):
        pod = kube.get_or_none("v1", "Pod", candidate, namespace)
        if pod is not None and is_native_driver(pod):
            return name_preemptors(kube, [native_app(pod, _pods_of(kube, namespace, pod))])[0]
    for mode, kind in KINDS.items():
        if mode is Mode.NATIVE:
            continue
        try:
            cr = kube.get(kind.api_version, kind.kind, name, namespace)
        except (NotFoundError, KubeError):
            continue
        uid = cr["metadata"]["uid"]
        drivers = [
            p
            for p in kube.list("v1", "Pod", namespace, label_selector=DRIVER_SELECTOR)
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]
        index = _pods_of(kube, namespace, drivers[0]) if drivers else Index([])
        return cr_app(cr, index)
    if (gone := _preempted_gone(kube, name, namespace)) is not None:
        return gone
    raise AppNotFoundError(
        f"no Spark application {name!r} in namespace {namespace}: no driver pod "
        f"{' or '.join(driver_candidates(name))} (a native app's driver may have been deleted "
        "or garbage-collected) and no SparkApplication of that name. "
        f"List them with `sparkplane get apps -n {namespace}`."
    )
