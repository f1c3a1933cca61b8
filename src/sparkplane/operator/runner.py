"""The operator process: informers in, a work queue, worker threads, actions and status out.

Owns the thin I/O shell around the pure reconcilers. Informers cache SparkApplications,
SparkClusters, and the pods and StatefulSets labelled ``spark.operator/name=<operator>`` in the
watched namespaces (one, a list, or all). Every change enqueues the owning resource's key; the
queue de-duplicates keys, never hands one key to two workers, and backs off exponentially per key
after errors. A worker reads the freshest copy of the resource (the cache, or the object its own
last status write returned, whichever is newer), gathers the observed pods, calls ``decide``,
runs the actions (idempotent; the independent requests of one action in parallel on a small
pool), then writes ``.status`` through the status subresource with the
resourceVersion it decided from: a 409 Conflict means someone else wrote in between, so it reads
again and decides again. Transitions become Events and metrics after the write succeeded.

With leader election on, workers only run while this replica holds the Lease; caches stay warm
so a new leader starts at once. Called by ``sparkplane operator run`` and the tests.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from sparkplane.errors import ConflictError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.kube.informer import Informer
from sparkplane.operator import actions, cluster_io, scheduled_io
from sparkplane.operator.decision import Decision, DeleteCustomResource
from sparkplane.operator.driver import template_files
from sparkplane.operator.leader import LeaderElector
from sparkplane.operator.metrics import OperatorMetrics
from sparkplane.operator.naming import APP_NAME_LABEL, OPERATOR_NAME_LABEL
from sparkplane.operator.observe import Observed
from sparkplane.operator.podtemplates import TemplateDirLoader
from sparkplane.operator.reconciler import decide
from sparkplane.operator.settings import OperatorSettings
from sparkplane.operator.workqueue import WorkQueue

log = logging.getLogger(__name__)
GROUP_VERSION = "spark.apache.org/v1"
APP, CLUSTER, SCHEDULED = "SparkApplication", "SparkCluster", "ScheduledSparkApplication"
Key = tuple[str, str, str]  # (kind, namespace, name)
Obj = dict[str, Any]
_TOMBSTONE_SECONDS = 600.0
_CONFLICT_RETRIES = 5


def _rv(obj: Obj | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Operator:
    """Reconciles SparkApplications (and SparkClusters) until :meth:`stop`."""

    def __init__(
        self,
        kube: Kube,
        settings: OperatorSettings | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        template_loader: Callable[[str], Obj | None] | None = None,
        after_actions: Callable[[Key, Decision], None] | None = None,
    ) -> None:
        self.kube = kube
        self.settings = settings or OperatorSettings()
        self.clock = clock
        # podTemplateFile: only from the configured directory (operator.podtemplates)
        self.template_loader = template_loader or TemplateDirLoader(self.settings.pod_template_dir)
        self.after_actions = after_actions  # test hook: runs between actions and status write
        self.identity = self.settings.identity or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
        self.name = self.settings.reconcile.operator_name
        self.queue: WorkQueue[Key] = WorkQueue(
            base_delay=self.settings.base_retry_seconds, max_delay=self.settings.max_retry_seconds
        )
        self.metrics = OperatorMetrics()
        self.events = actions.EventRecorder(
            kube, self.name, self.identity, workers=self.settings.event_workers
        )
        namespaces: tuple[str | None, ...] = self.settings.namespaces or (None,)
        selector = f"{OPERATOR_NAME_LABEL}={self.name}"
        self.apps = [Informer(kube, GROUP_VERSION, APP, namespace=ns) for ns in namespaces]
        self.pods = [
            Informer(kube, "v1", "Pod", namespace=ns, label_selector=selector) for ns in namespaces
        ]
        self.clusters: list[Informer] = []
        self.statefulsets: list[Informer] = []
        if self.settings.reconcile_clusters:
            self.clusters = [
                Informer(kube, GROUP_VERSION, CLUSTER, namespace=ns) for ns in namespaces
            ]
            self.statefulsets = [
                Informer(kube, "apps/v1", "StatefulSet", namespace=ns, label_selector=selector)
                for ns in namespaces
            ]
        self.schedules: list[Informer] = []
        if self.settings.reconcile_schedules:
            self.schedules = scheduled_io.informers(kube, namespaces)
        self.requests = ThreadPoolExecutor(
            max(self.settings.workers, 1) * 2, thread_name_prefix="requests"
        )
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], dict[str, Obj]] = {}
        self._tombstones: dict[tuple[str, str], dict[str, tuple[float, Obj]]] = {}
        self._driver_app: dict[tuple[str, str], str] = {}
        self._written: dict[Key, Obj] = {}
        self._stopping = threading.Event()
        self._leading = threading.Event()
        self._threads: list[threading.Thread] = []
        self.elector: LeaderElector | None = None
        self.metrics.watch_states("applications", lambda: self._cached(self.apps))
        self.metrics.watch_states("clusters", lambda: self._cached(self.clusters))

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, *, wait_synced: float = 30.0) -> Operator:
        for informer in self.apps:
            informer.add_handler(self._on_custom_resource(APP))
        for informer in self.clusters:
            informer.add_handler(self._on_custom_resource(CLUSTER))
        for informer in self.schedules:
            informer.add_handler(self._on_custom_resource(SCHEDULED))
        for informer in self.pods:
            informer.add_handler(self._on_pod)
        for informer in self.statefulsets:
            informer.add_handler(self._on_statefulset)
        everything = [*self.pods, *self.statefulsets, *self.apps, *self.clusters, *self.schedules]
        for informer in everything:
            informer.start()
        for informer in everything:
            informer.wait_synced(wait_synced)
        self.events.start()
        if self.settings.metrics_port is not None:
            self.metrics.serve(self.settings.metrics_port)
        for i in range(max(self.settings.workers, 1)):
            self._spawn(self._work, f"reconcile-{i}")
        self._spawn(self._resync, "resync")
        if self.settings.leader_election:
            self.elector = LeaderElector(
                self.kube,
                name=self.settings.lease_name,
                namespace=self.settings.lease_namespace,
                identity=self.identity,
                lease_seconds=self.settings.lease_seconds,
                renew_seconds=self.settings.renew_seconds,
                on_change=self._on_leadership,
            ).start()
        else:
            self._on_leadership(True)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.queue.shutdown()
        if self.elector is not None:
            self.elector.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        for informer in [
            *self.apps,
            *self.clusters,
            *self.pods,
            *self.statefulsets,
            *self.schedules,
        ]:
            informer.stop()
        self.events.stop()
        self.requests.shutdown(wait=False)
        self.metrics.close()

    def run_forever(self) -> None:
        """Start and block until :meth:`stop` is called from another thread (or Ctrl-C)."""
        self.start()
        try:
            while not self._stopping.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _on_leadership(self, leading: bool) -> None:
        if leading:
            self._leading.set()
            self._enqueue_all()
        else:
            self._leading.clear()

    # -- cache → queue --------------------------------------------------------------------
    @staticmethod
    def _cached(informers: list[Informer]) -> list[Obj]:
        return [obj for informer in informers for obj in informer.list()]

    def _enqueue_all(self) -> None:
        for kind, informers in (
            (APP, self.apps),
            (CLUSTER, self.clusters),
            (SCHEDULED, self.schedules),
        ):
            for obj in self._cached(informers):
                meta = obj["metadata"]
                self.queue.add((kind, meta["namespace"], meta["name"]))

    def _on_custom_resource(self, kind: str) -> Callable[[str, Obj], None]:
        def handler(event: str, obj: Obj) -> None:
            meta = obj.get("metadata") or {}
            key = (kind, str(meta.get("namespace")), str(meta.get("name")))
            owner = scheduled_io.schedule_of(obj) if kind == APP and self.schedules else None
            if owner is not None:  # a run changed: its schedule may trim its history
                self.queue.add((SCHEDULED, str(meta.get("namespace")), owner))
            if event == "DELETED":
                with self._lock:
                    self._written.pop(key, None)
                return
            with self._lock:
                mine = self._written.get(key)
            if mine is not None and _rv(mine) == _rv(obj):
                return  # our own status write coming back: nothing new to decide
            self.queue.add(key)

        return handler

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

    def _on_pod(self, event: str, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        app = self._app_of_pod(pod)
        if app is None:
            return
        key = (namespace, app)
        driver = (meta.get("labels") or {}).get("spark-role") == "driver"
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
        self.queue.add((APP, namespace, app))

    def _on_statefulset(self, event: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == CLUSTER:
                self.queue.add((CLUSTER, str(meta.get("namespace")), str(ref["name"])))

    def _resync(self) -> None:
        last = time.monotonic()
        while not self._stopping.wait(min(self.settings.resync_seconds, 30.0)):
            now = time.monotonic()
            with self._lock:
                for key in list(self._tombstones):
                    graves = self._tombstones[key]
                    for name in [n for n, (t, _) in graves.items() if now - t > _TOMBSTONE_SECONDS]:
                        graves.pop(name)
                    if not graves:
                        self._tombstones.pop(key)
            if now - last >= self.settings.resync_seconds and self.is_leader:
                last = now
                self._enqueue_all()

    # -- workers --------------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stopping.is_set():
            if not self._leading.wait(0.5):
                continue
            key = self.queue.get(timeout=0.5)
            if key is None:
                continue
            started = time.perf_counter()
            try:
                requeue = self.reconcile(key)
                self.queue.forget(key)
                if requeue is not None:
                    self.queue.add_after(key, requeue)
            except Exception as exc:
                delay = self.queue.add_rate_limited(key)
                self.metrics.reconcile_errors.labels(key[0], type(exc).__name__).inc()
                log.warning("reconcile %s %s/%s failed (retry in %.2fs): %s", *key, delay, exc)
            finally:
                self.metrics.reconcile_seconds.labels(key[0]).observe(time.perf_counter() - started)
                self.queue.done(key)

    def reconcile(self, key: Key) -> float | None:
        """Reconcile one resource now; returns the requeue delay (None: wait for changes)."""
        if key[0] == CLUSTER:
            return cluster_io.reconcile(self, key)
        if key[0] == SCHEDULED:
            return scheduled_io.reconcile(self, key)
        return self._reconcile_app(key)

    def current(self, key: Key) -> Obj | None:
        """The newest known copy: the cache's, or the one our last status write returned."""
        kind, namespace, name = key
        informers = {APP: self.apps, CLUSTER: self.clusters, SCHEDULED: self.schedules}[kind]
        cached = next((i.get(namespace, name) for i in informers if i.get(namespace, name)), None)
        with self._lock:
            mine = self._written.get(key)
        if cached is None:
            return None
        same = mine is not None and mine["metadata"].get("uid") == cached["metadata"].get("uid")
        if mine is not None and same and _rv(mine) > _rv(cached):
            return mine
        return cached

    def remember(self, key: Key, written: Obj) -> None:
        with self._lock:
            self._written[key] = written

    def observe(self, cr: Obj) -> Observed:
        meta = cr["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        with self._lock:
            pods = tuple(self._pods.get(key, {}).values())
            graves = tuple(p for _, p in self._tombstones.get(key, {}).values())
        templates: dict[str, Obj] = {}
        for role, path in template_files(cr).items():
            loaded = self.template_loader(path)
            if loaded is not None:
                templates[role] = loaded
        return Observed(pods=pods, tombstones=graves, templates=templates)

    def _reconcile_app(self, key: Key) -> float | None:
        cr = self.current(key)
        if cr is None or (cr.get("metadata") or {}).get("deletionTimestamp"):
            return None
        _, namespace, name = key
        for _ in range(_CONFLICT_RETRIES):
            observed = self.observe(cr)
            decision = decide(cr, observed, self.clock(), self.settings.reconcile)
            if decision.check_driver:
                pod = self.kube.get_or_none("v1", "Pod", decision.check_driver, namespace)
                pods = (*observed.pods, pod) if pod else observed.pods
                observed = replace(observed, pods=pods, driver_absent=pod is None)
                decision = decide(cr, observed, self.clock(), self.settings.reconcile)
            try:
                actions.run(self.kube, _before_status(decision), self.requests)
            except actions.CreateRejected as exc:
                observed = replace(observed, create_error=str(exc))
                decision = decide(cr, observed, self.clock(), self.settings.reconcile)
                actions.run(self.kube, _before_status(decision), self.requests)
            if self.after_actions is not None:
                self.after_actions(key, decision)
            if decision.status is not None:
                try:
                    written = self.kube.replace(
                        {**cr, "status": decision.status}, subresource="status"
                    )
                except ConflictError:
                    cr = self.kube.get(GROUP_VERSION, APP, name, namespace)
                    continue
                except NotFoundError:
                    return None
                written.setdefault("apiVersion", cr.get("apiVersion"))
                written.setdefault("kind", APP)
                self.remember(key, written)
                for transition in decision.transitions:
                    self.metrics.observe(transition)
                    self.events.record(written, transition)
            actions.run(self.kube, _after_status(decision))
            return decision.requeue_after
        raise ConflictError(f"{APP} {namespace}/{name}: status kept changing under the operator")


def _before_status(decision: Decision) -> tuple[Any, ...]:
    return tuple(a for a in decision.actions if not isinstance(a, DeleteCustomResource))


def _after_status(decision: Decision) -> tuple[Any, ...]:
    return tuple(a for a in decision.actions if isinstance(a, DeleteCustomResource))
