"""The History Server and event logs against the cluster: deploy or find the server, give a
submitted app its namespace's event-log settings, and drop expired event logs.

Called by ``sparkplane history`` (deploy/find/open, and :func:`sharing` to warn when
namespaces share a store) and by ``submit`` (one call: :func:`with_namespace_event_log`). The
pruner never reads a namespace's settings to find files to delete: it deletes event logs only
under its own configured root (:mod:`sparkplane.history.server_files`). Remote stores (s3a,
gs, ...) are cleaned by the History Server's own cleaner. Objects and settings:
:mod:`sparkplane.history.server`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence

from sparkplane.errors import ForbiddenError, NotFoundError
from sparkplane.history import server as history
from sparkplane.history.server import EventLogStore
from sparkplane.kube import Kube
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


def sharing(kube: Kube, namespaces: Sequence[str | None] = (None,)) -> list[tuple[str, list[str]]]:
    """The event-log stores two or more of ``namespaces`` share (None: every namespace), from
    their ``sparkplane-history`` ConfigMaps (raises ForbiddenError when they may not be listed)."""
    selector = f"app.kubernetes.io/name={history.NAME}"
    found = [
        cm
        for ns in namespaces
        for cm in kube.list("v1", "ConfigMap", ns, label_selector=selector)
        if cm["metadata"].get("name") == history.NAME
    ]
    return history.shared_stores(
        (str(cm["metadata"]["namespace"]), history.from_configmap(cm)) for cm in found
    )
