"""The History Server verbs: ``history up|down|conf|open`` and the History Server side of ``ui``.

``up`` deploys (or updates) a namespace's Spark History Server with its event-log store;
``ensure`` deploys it with the defaults when the namespace has none (bare ``sparkplane history``);
``down`` removes it (the event logs stay); ``conf`` is the ``--conf`` an app needs to write there;
``address`` is where it serves (a ready pod and the page of one app); ``page_of_finished`` decides,
for ``ui APP``, whether the app's UI is its History Server page (finished, or deleted with its
record archived) rather than its live driver. Built by :mod:`sparkplane.history.server`, deployed
by :mod:`sparkplane.history.server_kube`. Called by :class:`sparkplane.SparkPlane`; never prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from sparkplane.errors import AppNotFoundError, KubeError, Problem, TimeoutExpired, ValidationError
from sparkplane.history import server as history
from sparkplane.history import server_kube as history_kube
from sparkplane.history.logs import archived_meta
from sparkplane.kube import Kube
from sparkplane.model.phase import is_finished
from sparkplane.settings import Settings
from sparkplane.usecases.query import get_app
from sparkplane.usecases.ui import UiAddress
from sparkplane.version import SPARK_IMAGE


@dataclass(frozen=True)
class HistoryDeployed:
    """What ``up``/``ensure`` applied, and warnings about the store (another namespace uses it)."""

    namespace: str
    store: history.EventLogStore
    objects: list[str]
    warnings: list[str] = field(default_factory=list)
    pod: str | None = None  # a ready server pod, when the caller waited for one


def store_for(
    namespace: str,
    *,
    host_path: str | None = None,
    claim: str | None = None,
    log_dir: str | None = None,
    default: bool = True,
    retention: timedelta = timedelta(days=7),
    s3_endpoint: str | None = None,
    s3_secret: str | None = None,
) -> history.EventLogStore:
    """The event-log store ``up`` deploys: one of a node path (default: the namespace's own
    directory), a ReadWriteMany claim or the user's own URI; every bad choice is one
    ValidationError naming the option, raised before anything is contacted."""
    if sum(x is not None for x in (host_path, claim, log_dir)) > 1:
        raise ValidationError(
            [Problem("--host-path/--claim/--log-dir", "more than one store", "choose one")],
            subject="history up",
        )
    if host_path is not None and not host_path.startswith("/"):
        example = history.default_host_path(namespace)
        raise ValidationError(
            [Problem("--host-path", f"{host_path!r} is not absolute", "e.g. " + example)],
            subject="history up",
        )
    if (s3_endpoint or s3_secret) and not (log_dir or "").startswith("s3a://"):
        raise ValidationError(
            [
                Problem(
                    "--s3-endpoint/--s3-secret",
                    "only for an s3a:// store",
                    "add --log-dir s3a://BUCKET/PREFIX",
                )
            ],
            subject="history up",
        )
    if s3_endpoint is not None and not s3_endpoint.startswith(("http://", "https://")):
        raise ValidationError(
            [
                Problem(
                    "--s3-endpoint",
                    f"{s3_endpoint!r} is not a URL",
                    "e.g. http://seaweedfs.storage:8333",
                )
            ],
            subject="history up",
        )
    if host_path is None and claim is None and log_dir is None:
        host_path = history.default_host_path(namespace)  # the namespace's own directory
    return history.EventLogStore(
        log_dir=log_dir or f"file:{history.MOUNT}",
        host_path=host_path,
        claim=claim,
        default=default,
        retention=retention,
        s3_endpoint=s3_endpoint,
        s3_secret=s3_secret,
    )


def up(
    kube: Kube, namespace: str, store: history.EventLogStore, image: str = SPARK_IMAGE
) -> HistoryDeployed:
    """Deploy (or update) the History Server and the namespace's event-log settings."""
    objects = history_kube.deploy(kube, namespace, store, image)
    return HistoryDeployed(namespace, store, objects, shared_warnings(kube, namespace))


def ensure(kube: Kube, namespace: str, image: str = SPARK_IMAGE) -> HistoryDeployed | None:
    """Deploy the History Server with the defaults when the namespace has none (else None)."""
    if history_kube.find_store(kube, namespace) is not None:
        return None
    return up(kube, namespace, store_for(namespace), image)


def down(kube: Kube, namespace: str) -> None:
    """Remove the History Server and the event-log settings (the event logs stay)."""
    history_kube.remove(kube, namespace)


def conf(kube: Kube, namespace: str) -> dict[str, str]:
    """The Spark conf that gives one app event logs in the namespace's store."""
    store = history_kube.find_store(kube, namespace)
    if store is None:
        raise AppNotFoundError(f"no History Server in {namespace}: run `sparkplane history up`")
    return history.event_log_conf(store)


def shared_warnings(kube: Kube, namespace: str) -> list[str]:
    """One warning per other namespace sharing this one's event-log store; none when this
    identity may not list other namespaces (the operator warns then)."""
    try:
        shared = history_kube.sharing(kube)
    except KubeError:
        return []
    warnings = []
    for what, names in shared:
        if namespace in names:
            others = ", ".join(n for n in names if n != namespace)
            warnings.append(
                f"{namespace} shares its event-log store ({what}) with {others}: "
                "each History Server lists the others' apps and their drivers can change them; "
                "give each namespace its own (omit --host-path for the default)"
            )
    return warnings


def ready_pod(kube: Kube, namespace: str, wait: float = 0.0, interval: float = 1.0) -> str:
    """A ready History Server pod, waiting up to ``wait`` seconds for one."""
    deadline = time.monotonic() + wait
    while (pod := history_kube.server_pod(kube, namespace)) is None:
        if time.monotonic() >= deadline:
            if history_kube.find_store(kube, namespace) is None:
                raise AppNotFoundError(
                    f"no History Server in {namespace}: run `sparkplane history up -n {namespace}`"
                )
            raise TimeoutExpired(f"the History Server of {namespace} is not ready (yet)")
        time.sleep(interval)
    return pod


def address(
    kube: Kube, namespace: str, app_id: str | None = None, *, wait: float = 0.0
) -> UiAddress:
    """Where the History Server serves (``app_id``: that app's page), for a port-forward."""
    pod = ready_pod(kube, namespace, wait)
    path = history.app_path(app_id) if app_id else "/"
    return UiAddress(url=None, pod=pod, port=history.PORT, via="history", path=path)


def page_of_finished(kube: Kube, namespace: str, name: str, settings: Settings) -> UiAddress | None:
    """For ``ui``: a finished (or deleted) app's page in the History Server; None when the app
    still runs (its own UI serves it) or its driver pod is still there to serve it."""
    deleted: AppNotFoundError | None = None
    try:
        current = get_app(kube, name, namespace)
    except AppNotFoundError as exc:
        meta = archived_meta(namespace, name, settings=settings, kube=kube)
        if meta is None:
            raise
        deleted, app_id = exc, meta.app_id
    else:
        if not is_finished(current.state):
            return None
        kept = (
            None if current.app_id else archived_meta(namespace, name, settings=settings, kube=kube)
        )
        app_id = current.app_id or (kept.app_id if kept else None)  # released: only archived
    pod = history_kube.server_pod(kube, namespace)
    if (not app_id or pod is None) and deleted is None:
        return None  # the driver pod is still there: its own UI address
    if not app_id or pod is None:
        raise AppNotFoundError(
            f"{deleted}; its log is in the archive (`sparkplane logs {name}`); its UI would be "
            f"in a History Server (`sparkplane history up -n {namespace}` before running apps)"
        )
    return UiAddress(
        url=None, pod=pod, port=history.PORT, via="history", path=history.app_path(app_id)
    )
