"""The History Server and event logs against the cluster: deploy or find the server, give a
submitted app its namespace's event-log settings, and drop expired event logs.

Called by ``sparkplane history`` (deploy/find/open), by ``submit`` (one call:
:func:`with_namespace_event_log`) and by ``gc`` (:func:`remove_event_logs`, only where the
event-log directory is a path this process can reach: a hostPath on the dev cluster's node, a
volume mounted into the gc CronJob). Remote stores (s3a, gs, ...) are cleaned by the History
Server's own cleaner. Objects and settings: :mod:`sparkplane.lifecycle.history`.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterable
from pathlib import Path

from sparkplane.errors import ForbiddenError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.lifecycle import history
from sparkplane.lifecycle.history import EventLogStore
from sparkplane.spec import SparkApp

log = logging.getLogger(__name__)


def find_store(kube: Kube, namespace: str) -> EventLogStore | None:
    """The namespace's event-log store (its ``sparkplane-history`` ConfigMap), if any."""
    cm = kube.get_or_none("v1", "ConfigMap", history.NAME, namespace)
    return history.from_configmap(cm) if cm else None


def deploy(kube: Kube, namespace: str, store: EventLogStore, image: str) -> list[str]:
    """Create or update the store's ConfigMap and the History Server; the objects' names."""
    objs = [
        history.to_configmap(namespace, store),
        *history.server_objects(namespace, store, image),
    ]
    for obj in objs:
        kube.apply(obj)
    return [f"{o['kind']}/{o['metadata']['name']}" for o in objs]


def remove(kube: Kube, namespace: str) -> None:
    """Delete the History Server and the namespace's event-log settings (not the logs)."""
    for api, kind in (("apps/v1", "Deployment"), ("v1", "Service"), ("v1", "ConfigMap")):
        with contextlib.suppress(NotFoundError):
            kube.delete(api, kind, history.NAME, namespace)


def server_pod(kube: Kube, namespace: str) -> str | None:
    """A ready History Server pod of the namespace (None: not deployed or not ready yet)."""
    pods = kube.list(
        "v1", "Pod", namespace, label_selector=f"app.kubernetes.io/name={history.NAME}"
    )
    for pod in pods:
        conditions = pod.get("status", {}).get("conditions") or []
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        if ready and not pod["metadata"].get("deletionTimestamp"):
            return str(pod["metadata"]["name"])
    return None


def with_namespace_event_log(kube: Kube, app: SparkApp) -> SparkApp:
    """``app`` with event logging filled in from its namespace's store (see ``history``)."""
    namespace = app.metadata.namespace or "default"
    conf = app.spec.spark_conf
    if conf.get(history.ENABLED, "").strip().lower() == "false":
        return app
    try:
        store = find_store(kube, namespace)
    except ForbiddenError:  # may not read the namespace's settings: the app as it is
        return app
    merged = history.with_event_log(conf, store)
    if merged == conf:
        return app
    return app.model_copy(update={"spec": app.spec.model_copy(update={"spark_conf": merged})})


def local_dir(store: EventLogStore) -> Path | None:
    """The event-log directory as a path here, when this process can reach it."""
    for candidate in (store.host_path, store.log_dir.removeprefix("file:")):
        if candidate and Path(candidate).is_dir() and candidate.startswith("/"):
            return Path(candidate)
    return None


def remove_event_logs(kube: Kube, namespace: str, app_ids: Iterable[str]) -> list[str]:
    """Delete the event logs of ``app_ids`` from the namespace's store where reachable here."""
    ids = [i for i in app_ids if i and "/" not in i and not i.startswith(".")]
    store = find_store(kube, namespace) if ids else None
    where = local_dir(store) if store else None
    if where is None:
        return []
    removed = []
    for entry in where.iterdir():
        name = entry.name.removeprefix("eventlog_v2_")
        if any(name == i or name.startswith((f"{i}.", f"{i}_")) for i in ids):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry.name)
    return removed
