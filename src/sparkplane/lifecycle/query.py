"""One-shot reads: find one application by name, or list them, with a few list calls.

``get`` looks for a native driver pod (``<name>-driver`` or ``<name>``), then a SparkApplication
of ``spark.apache.org``, then one of ``sparkoperator.k8s.io``. ``list_apps`` costs one list of
Spark pods, one of each served SparkApplication kind and one of ``Preempted`` events.
"""

from __future__ import annotations

from typing import Any

from sparkplane.errors import AppNotFoundError, KubeError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.lifecycle.apps import KINDS, App, Mode, driver_candidates, is_native_driver
from sparkplane.lifecycle.assemble import Index, assemble, cr_app, native_app

Obj = dict[str, Any]


def _crs(kube: Kube, namespace: str | None) -> list[Obj]:
    out: list[Obj] = []
    for mode, kind in KINDS.items():
        if mode is Mode.NATIVE:
            continue
        try:
            out += kube.list(kind.api_version, kind.kind, namespace)
        except KubeError as exc:
            if exc.code != 404:  # kind not served: that operator is not installed
                raise
    return out


def list_apps(kube: Kube, namespace: str | None) -> list[App]:
    """Every application of ``namespace`` (all namespaces when None)."""
    pods = kube.list("v1", "Pod", namespace, label_selector="spark-role")
    events = kube.list("v1", "Event", namespace, field_selector="reason=Preempted")
    return assemble(pods, _crs(kube, namespace), events)


def _pods_of(kube: Kube, namespace: str, driver: Obj) -> Index:
    app_id = driver["metadata"].get("labels", {}).get("spark-app-selector")
    execs = (
        kube.list(
            "v1",
            "Pod",
            namespace,
            label_selector=f"spark-role=executor,spark-app-selector={app_id}",
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
            return native_app(pod, _pods_of(kube, namespace, pod))
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
            for p in kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]
        index = _pods_of(kube, namespace, drivers[0]) if drivers else Index([])
        return cr_app(cr, index)
    raise AppNotFoundError(
        f"no Spark application {name!r} in namespace {namespace}: no driver pod "
        f"{' or '.join(driver_candidates(name))} (a native app's driver may have been deleted "
        "or garbage-collected) and no SparkApplication of that name. "
        f"List them with `sparkplane get apps -n {namespace}`."
    )
