"""Archive drivers deleted by someone else (``kubectl delete``), best effort, and prune.

The operator archives a driver's log itself before it releases the driver
(:func:`sparkplane.operator.runtime.actions.delete`). A driver deleted by anyone else — ``kubectl
delete``, an eviction, a drain — still runs its container for the grace period, so its log can
still be read: :class:`DeletionArchiver` gets the operator's driver-pod informer events, and the
first time it sees a driver with a ``deletionTimestamp`` whose archive is not already this pod's
(the same pod uid: the operator's own release), it archives it on a background thread.

Not covered (documented in docs/history.md): deletion with grace period 0 (``--force``, the
pod is gone before any event), a lost node (no kubelet serves the log), a namespace deleted
(its ConfigMaps go with it), and any time the operator is down or not leading. Called by
:class:`sparkplane.operator.runtime.runner.Operator`; only on the leader (writes are fenced anyway).

Each prune round also looks for namespaces sharing one event-log store (:func:`warn_shared`):
their History Servers show each other's apps, so it logs a warning and posts a Warning Event
(``SharedEventLogStore``) on each one's ``sparkplane-history`` ConfigMap, once per operator run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any

from sparkplane.errors import KubeError
from sparkplane.history import server as history
from sparkplane.history import server_kube as history_kube
from sparkplane.history.logs import app_name_of, archive_driver, archived_meta, prune
from sparkplane.history.stores import open_store
from sparkplane.kube import Kube
from sparkplane.settings import Settings
from sparkplane.vocab import DRIVER_ROLE, ROLE_LABEL, now_text

log = logging.getLogger(__name__)
Obj = dict[str, Any]
REASON = "deleted by someone else (archived by the operator)"
_REMEMBERED = 10_000


def deleted_driver(event: str, pod: Obj) -> bool:
    """Whether an informer event shows a driver pod being deleted (grace period running)."""
    meta = pod.get("metadata") or {}
    role = (meta.get("labels") or {}).get(ROLE_LABEL)
    return (
        event in ("ADDED", "MODIFIED")
        and role == DRIVER_ROLE
        and bool(meta.get("deletionTimestamp"))
    )


class DeletionArchiver:
    """Informer handler: archive each driver seen being deleted, once (by pod uid)."""

    def __init__(
        self,
        kube: Kube,
        pool: Executor,
        may_act: Callable[[], bool],
        namespaces: tuple[str | None, ...] = (None,),
        prune_seconds: float = 600.0,
        settings: Settings | None = None,
    ) -> None:
        self.kube, self.pool, self.may_act = kube, pool, may_act
        self.settings = settings if settings is not None else Settings()
        self.namespaces, self.prune_seconds = namespaces, prune_seconds
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._last_prune = time.monotonic()
        self._warned: set[tuple[str, tuple[str, ...]]] = set()

    def tick(self) -> None:
        """Called every few seconds: prunes the archive every ``prune_seconds`` (leader only)."""
        now = time.monotonic()
        if now - self._last_prune >= self.prune_seconds and self.may_act():
            self._last_prune = now
            self.pool.submit(prune_round, self.kube, self.namespaces, self._warned, self.settings)

    def ours(self, uid: str) -> None:
        """The operator itself deletes the pod ``uid`` (the sweeper removing an attempt that is
        over): not someone else's deletion, so it is not archived as one."""
        self._first_time(uid)

    def _first_time(self, uid: str) -> bool:
        with self._lock:
            if uid in self._seen:
                return False
            self._seen[uid] = None
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)
            return True

    def on_event(self, event: str, pod: Obj) -> None:
        if not deleted_driver(event, pod) or not self.may_act():
            return
        if self._first_time(str(pod["metadata"].get("uid", ""))):
            self.pool.submit(self.archive, pod)

    def archive(self, pod: Obj) -> None:
        """Archive ``pod`` unless its archive already is this pod's (the operator's release)."""
        meta = pod["metadata"]
        namespace, name, app = meta["namespace"], meta["name"], app_name_of(pod)
        store = open_store(self.settings, kube=self.kube)
        if store is None:
            return
        try:
            kept = archived_meta(namespace, app, settings=self.settings, store=store)
        except Exception as exc:  # unreadable archive: archive again rather than lose it
            log.info("archive of %s/%s unreadable: %s", namespace, app, exc)
            kept = None
        if kept is not None and kept.pod_uid and kept.pod_uid == meta.get("uid"):
            return
        if archive_driver(
            self.kube, namespace, name, REASON, settings=self.settings, store=store, name=app
        ):
            log.info("archived the log of %s/%s, deleted by someone else", namespace, name)


def prune_round(
    kube: Kube,
    namespaces: tuple[str | None, ...],
    warned: set[tuple[str, tuple[str, ...]]] | None = None,
    settings: Settings | None = None,
) -> None:
    """Drop the archived apps past their retention in the watched namespaces (the store and
    event-log root ``settings`` name), and warn about shared event-log stores; never raises."""
    scope = None if None in namespaces else [ns for ns in namespaces if ns]
    warn_shared(kube, namespaces, set() if warned is None else warned)
    try:
        dropped = prune(
            datetime.now(UTC),
            settings=settings if settings is not None else Settings(),
            kube=kube,
            namespaces=scope,
        )
    except Exception as exc:  # retried at the next round
        log.warning("could not prune the log archive: %s", exc)
        return
    for meta in dropped:
        log.info("log archive of %s/%s expired: deleted", meta.namespace, meta.app)


def warn_shared(
    kube: Kube, namespaces: tuple[str | None, ...], warned: set[tuple[str, tuple[str, ...]]]
) -> list[tuple[str, list[str]]]:
    """Log and record (an Event on each ``sparkplane-history`` ConfigMap) every event-log store
    two or more watched namespaces share, once per store and set of namespaces."""
    try:
        shared = history_kube.sharing(kube, namespaces)
    except KubeError as exc:
        log.info("could not check the namespaces' event-log stores: %s", exc)
        return []
    for what, names in shared:
        key = (what, tuple(names))
        if key in warned:
            continue
        warned.add(key)
        message = (
            f"namespaces {', '.join(names)} share one event-log store ({what}): each one's "
            "History Server lists the others' apps and their drivers can change them; give "
            "each namespace its own (`sparkplane history up -n NS` without --host-path)"
        )
        log.warning("%s", message)
        for namespace in names:
            try:
                kube.create(_shared_event(namespace, message))
            except KubeError as exc:  # an Event is best effort
                log.info("could not post the event in %s: %s", namespace, exc)
    return shared


def _shared_event(namespace: str, message: str) -> Obj:
    when = now_text()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{history.NAME}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": history.NAME,
            "namespace": namespace,
        },
        "reason": "SharedEventLogStore",
        "message": message,
        "type": "Warning",
        "source": {"component": "sparkplane-operator"},
        "reportingComponent": "sparkplane-operator",
        "reportingInstance": "sparkplane-operator",
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": 1,
    }
