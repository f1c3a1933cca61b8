"""Keep a driver's logs before sparkplane deletes it, read them back once it is gone, prune them.

Hooks (one call each): ``kill`` calls :func:`archive_app`, ``gc`` calls :func:`archive_driver`
per driver it deletes and :func:`prune` once, the operator calls :func:`archive_driver` before
releasing a driver; ``SparkPlane.logs`` reads through :func:`live_or_archived`. Archiving is best
effort: a failure is logged and never stops the deletion. The operator also calls
:func:`archive_driver` for driver pods it sees deleted by someone else
(:mod:`sparkplane.operator.runtime.deletions`). Layout, caps and retention:
:mod:`sparkplane.history.archive`.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sparkplane.errors import AppNotFoundError, ForbiddenError, KubeError
from sparkplane.history import archive as layout
from sparkplane.history.archive import ArchiveMeta, ArchiveStore
from sparkplane.history.stores import open_store, reading_stores
from sparkplane.kube import Kube
from sparkplane.model.apps import App, native_name
from sparkplane.settings import Settings
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    DRIVER_CONTAINER,
    EXECUTOR_CONTAINER,
    EXECUTOR_SELECTOR,
    ROLE_LABEL,
    SESSION_LABEL,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def app_name_of(pod: Obj) -> str:
    """The name ``sparkplane logs`` takes: the owning SparkApplication's, else the native one."""
    meta = pod.get("metadata", {})
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "SparkApplication":
            return str(ref["name"])
    return native_name(str(meta.get("name", "")))


def archive_app(kube: Kube, app: App, reason: str, *, settings: Settings) -> None:
    """Archive ``app``'s driver (if it has one) before it is deleted; never raises."""
    if app.driver_pod:
        archive_driver(
            kube, app.namespace, app.driver_pod, reason, settings=settings, name=app.name
        )


def archive_refs(
    kube: Kube,
    namespace: str,
    refs: Iterable[tuple[str, str, str]],
    reason: str,
    *,
    settings: Settings,
) -> None:
    """Archive the driver pods among ``refs`` (apiVersion, kind, name) about to be deleted."""
    for api_version, kind, name in refs:
        if (api_version, kind) == ("v1", "Pod"):
            archive_driver(kube, namespace, name, reason, settings=settings)


def archive_driver(
    kube: Kube,
    namespace: str,
    driver_pod: str,
    reason: str,
    *,
    settings: Settings,
    store: ArchiveStore | None = None,
    name: str | None = None,
) -> ArchiveMeta | None:
    """Archive a driver pod's log and its executors' tails to ``store`` (default: the one the
    settings name); never raises (logs a warning)."""
    try:
        store = store or open_store(settings, kube=kube)
        if store is None:
            return None
        pod = kube.get_or_none("v1", "Pod", driver_pod, namespace)
        role = (pod or {}).get("metadata", {}).get("labels", {}).get(ROLE_LABEL)
        if pod is None or role != "driver" or not _started(pod):
            return None
        return _archive(kube, store, pod, name or app_name_of(pod), reason)
    except Exception as exc:  # archiving must never block a deletion
        log.warning("could not archive the logs of %s/%s: %s", namespace, driver_pod, exc)
        return None


def _started(pod: Obj) -> bool:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return any(
        s.get("state", {}).get("running")
        or s.get("state", {}).get("terminated")
        or s.get("lastState", {}).get("terminated")
        for s in statuses
    )


def _archive(kube: Kube, store: ArchiveStore, pod: Obj, app: str, reason: str) -> ArchiveMeta:
    meta, ns = pod["metadata"], pod["metadata"]["namespace"]
    app_id = (meta.get("labels") or {}).get(APP_SELECTOR_LABEL)
    text, truncated = layout.cap_text(
        kube.logs(meta["name"], ns, container=_container(pod, DRIVER_CONTAINER)), layout.DRIVER_CAP
    )
    files = {"driver.log": text.encode()}
    used, kept = len(text.encode()), []
    selector = f"{EXECUTOR_SELECTOR},{APP_SELECTOR_LABEL}={app_id}"
    for ex in kube.list("v1", "Pod", ns, label_selector=selector) if app_id else []:
        exec_id = str((ex["metadata"].get("labels") or {}).get("spark-exec-id", ""))
        if not exec_id.isdigit() or used >= layout.APP_CAP:
            continue
        try:
            lines = kube.logs(
                ex["metadata"]["name"],
                ns,
                container=_container(ex, EXECUTOR_CONTAINER),
                tail_lines=layout.EXECUTOR_TAIL_LINES,
            )
            etext, cut = layout.cap_text(lines, layout.EXECUTOR_CAP)
        except Exception as exc:  # an executor that never started has no log
            log.info("no log of executor %s: %s", ex["metadata"]["name"], exc)
            continue
        files[layout.log_key(ns, app, int(exec_id)).rsplit("/", 1)[1]] = etext.encode()
        used += len(etext.encode())
        truncated = truncated or cut
        kept.append(int(exec_id))
    retain = layout.retention_of(meta.get("annotations"), layout.DEFAULT_RETENTION)
    first = _same_pod(store, ns, app, meta.get("uid"))  # archived before: keep why and when
    if first is not None and _no_log(text):  # the container is gone: keep what was read then
        return first
    record = ArchiveMeta(
        namespace=ns,
        app=app,
        driver_pod=meta["name"],
        archived_at=first.archived_at if first else _now(),
        reason=first.reason if first else reason,
        retain_seconds=int(retain.total_seconds()),
        app_id=app_id,
        executors=tuple(sorted(kept)),
        truncated=truncated,
        pod_uid=meta.get("uid"),
        session=(meta.get("labels") or {}).get(SESSION_LABEL),
    )
    files[layout.META] = record.to_json()
    store.replace(layout.app_prefix(ns, app), files)  # a new run of the same name replaces it
    return record


def _no_log(text: str) -> bool:
    """The kubelet's answer for a container whose log is gone, in place of a log."""
    return not text.strip() or (
        text.count("\n") <= 1 and text.startswith("unable to retrieve container logs")
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _same_pod(store: ArchiveStore, namespace: str, app: str, uid: str | None) -> ArchiveMeta | None:
    """The app's archive if it is of this very pod (seen deleted by someone else, then
    released): its reason and time stay, its content is refreshed (longer now)."""
    try:
        data = store.get(layout.meta_key(namespace, app))
        meta = ArchiveMeta.from_json(data) if data else None
    except (KubeError, ValueError, TypeError, KeyError):
        return None
    return meta if meta and uid and meta.pod_uid == uid else None


def _container(pod: Obj, preferred: str) -> str | None:
    names = [c.get("name") for c in pod.get("spec", {}).get("containers") or []]
    return preferred if preferred in names else (str(names[0]) if names else None)


def archived_meta(
    namespace: str,
    app: str,
    *,
    settings: Settings,
    store: ArchiveStore | None = None,
    kube: Kube | None = None,
) -> ArchiveMeta | None:
    """What the archive holds for ``app`` (None: nothing, or archiving off)."""
    found = _newest(namespace, app, settings, store, kube)
    return found[0] if found else None


def _newest(
    namespace: str, app: str, settings: Settings, store: ArchiveStore | None, kube: Kube | None
) -> tuple[ArchiveMeta, ArchiveStore] | None:
    """The newest record of ``app`` among ``store`` (else every store ``logs`` reads)."""
    stores = [store] if store else reading_stores(settings, kube, namespace)
    best: tuple[ArchiveMeta, ArchiveStore] | None = None
    for candidate in stores:
        try:
            data = candidate.get(layout.meta_key(namespace, app))
            meta = ArchiveMeta.from_json(data) if data else None
        except (KubeError, ValueError, TypeError, KeyError) as exc:  # unreadable: look elsewhere
            log.info("archive %r: %s", candidate, exc)
            continue
        except OSError as exc:  # object storage refused or unreachable: say so, look elsewhere
            log.warning("could not read the log archive %r: %s", candidate, exc)
            continue
        if meta and (best is None or meta.archived > best[0].archived):
            best = (meta, candidate)
    return best


def archived_session(
    namespace: str, session: str, *, settings: Settings, kube: Kube | None = None
) -> ArchiveMeta | None:
    """The newest archived run of Spark Connect session ``session`` (its app is named
    ``<session>-<suffix>``, or ``spark-<suffix>`` when the name is too long for a prefix, as
    spark-submit names them): what ``session logs`` reads once the session has ended."""
    candidates = (f"{session}-", "spark-")
    best: ArchiveMeta | None = None
    for store in reading_stores(settings, kube, namespace):
        try:
            keys = store.keys(f"{namespace}/")
        except (KubeError, OSError) as exc:  # unreadable or unreachable: look elsewhere
            log.info("archive %r: %s", store, exc)
            continue
        apps = {
            k.split("/")[1]
            for k in keys
            if k.endswith(f"/{layout.META}") and k.split("/")[1].startswith(candidates)
        }
        for app in apps:
            found = _newest(namespace, app, settings, store, kube)
            mine = found[0] if found and found[0].session == session else None
            if mine and (best is None or mine.archived > best.archived):
                best = mine
    return best


def read_archived(
    namespace: str,
    app: str,
    executor: int | None = None,
    *,
    tail: int | None = None,
    settings: Settings,
    store: ArchiveStore | None = None,
    kube: Kube | None = None,
) -> tuple[ArchiveMeta, list[str]] | None:
    """The archived log lines of the driver (or executor N) and the app's record, from the
    newest archive of it (this machine's, the cluster's)."""
    found = _newest(namespace, app, settings, store, kube)
    if found is None:
        return None
    lines = _stored_lines(found[1], layout.log_key(namespace, app, executor), tail)
    return None if lines is None else (found[0], lines)


def _stored_lines(store: ArchiveStore, key: str, tail: int | None) -> list[str] | None:
    """A stored log's lines (the last ``tail``); a store that streams (object storage) is read
    as it arrives, so only ``tail`` lines are held at once."""
    stream = getattr(store, "iter_lines", None)
    if stream is not None:
        found: Iterator[str] | None = stream(key)
        if found is None:
            return None
        return list(deque(found, maxlen=tail) if tail else found)
    data = store.get(key)
    if data is None:
        return None
    lines = data.decode(errors="replace").splitlines()
    return lines[-tail:] if tail else lines


def live_or_archived(
    live: Callable[[], Iterator[str]] | None,
    namespace: str,
    app: str,
    executor: int | None,
    *,
    tail: int | None = None,
    notice: Callable[[str], None] = lambda _: None,
    missing: AppNotFoundError | None = None,
    settings: Settings,
    kube: Kube | None = None,
) -> Iterator[str]:
    """The live log while the pod exists, else the archived one (``notice`` says so)."""
    if live is not None:
        started = False
        try:
            for line in live():
                started = True
                yield line
            return
        except AppNotFoundError as exc:
            if started:
                raise
            missing = exc
    found = read_archived(namespace, app, executor, tail=tail, settings=settings, kube=kube)
    if found is None:
        raise missing or AppNotFoundError(f"{namespace}/{app} not found, nor in the log archive")
    meta, lines = found
    notice(layout.deleted_notice(meta, executor))
    yield from lines


def prune(
    now: datetime | None = None,
    *,
    settings: Settings,
    store: ArchiveStore | None = None,
    kube: Kube | None = None,
    namespaces: Sequence[str] | None = None,
    event_log_root: Path | Literal["configured"] | None = "configured",
) -> list[ArchiveMeta]:
    """Drop the archived apps past their retention, and their event logs under
    ``event_log_root`` (default: the settings' root, ``history_files``); returns
    what was dropped. The in-cluster store is looked at in ``namespaces`` (None: every one).

    Identity comes from where an archive is, never from what it says: the namespace and app
    are those of its key (the ConfigMap's namespace and name, the directory's path); an archive
    whose ``meta.json`` names another namespace or app is skipped with a warning (anyone who
    may create ConfigMaps can write one)."""
    from sparkplane.history import server_files as history_files

    store = store or open_store(settings, kube=kube, namespaces=namespaces)
    if store is None:
        return []
    root = (
        history_files.configured_root(settings.event_log_root)
        if event_log_root == "configured"
        else event_log_root
    )
    now = now or datetime.now(UTC)
    dropped = []
    try:
        keys = store.keys("")
    except ForbiddenError as exc:  # the gc CronJob may create archives, not list them
        log.info("not pruning the log archive %r: %s", store, exc)
        return []
    except OSError as exc:  # object storage: no list right, or unreachable
        log.warning("not pruning the log archive %r: %s", store, exc)
        return []
    for key in keys:
        parts = key.split("/")
        if len(parts) != 3 or parts[2] != layout.META:
            continue
        namespace, app = parts[0], parts[1]
        data = store.get(key)
        try:
            meta = ArchiveMeta.from_json(data) if data else None
            layout.app_prefix(namespace, app)
        except (ValueError, TypeError, KeyError):
            continue  # never delete on a guess
        if meta is None:
            continue
        if (meta.namespace, meta.app) != (namespace, app):
            log.warning(
                "log archive of %s/%s not pruned: its meta.json names %s/%s (forged or copied?)",
                namespace,
                app,
                meta.namespace,
                meta.app,
            )
            continue
        if layout.expired(meta, now):
            store.delete_prefix(layout.app_prefix(namespace, app))
            dropped.append(meta)
            if meta.app_id:
                _drop_event_log(root, namespace, meta.app_id)
    return dropped


def _drop_event_log(root: Path | None, namespace: str, app_id: str) -> None:
    from sparkplane.history.server_files import remove_event_logs

    try:
        remove_event_logs(root, namespace, [app_id])
    except OSError as exc:  # the archive is pruned either way
        log.warning("could not remove the event log of %s in %s: %s", app_id, namespace, exc)
