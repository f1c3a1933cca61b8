"""The operator process: informers in, one work queue, workers running the generic loop.

Owns the plumbing around the kind adapters (:mod:`~sparkplane.operator.kinds.app_adapter`,
:mod:`~sparkplane.operator.kinds.cluster_io`, :mod:`~sparkplane.operator.kinds.scheduled_io`): an
informer per custom-resource kind and per watched namespace (one, a list, or all; optionally
narrowed by a label selector, so several operator instances can split the work into shards), the
adapters' secondary informers (pods,
StatefulSets), the queue (de-duplicated keys, never one key on two workers, per-key backoff),
the worker threads, leader election and the fenced gateway every write goes through, the
newest-copy cache of our own status writes, Events and metrics, and the sweeper's schedule.
What one reconcile does, and in which order it writes, is :mod:`sparkplane.operator.runtime.loop`.

With leader election on, workers only take keys while this replica holds the Lease, and every
write checks the lease again right before it is sent; caches stay warm so a new leader starts
at once. Called by ``sparkplane operator run``, the benchmarks and the tests.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from sparkplane.errors import KubeError
from sparkplane.kube import Kube
from sparkplane.kube.informer import Informer
from sparkplane.operator.core.decision import Notice, Transition
from sparkplane.operator.core.scheduled_spec import SCHEDULE_KINDS
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.kinds import connect_io, kubeflow_io, kueue_io, scheduled_io
from sparkplane.operator.kinds.app_adapter import AppAdapter
from sparkplane.operator.kinds.cluster_io import ClusterAdapter
from sparkplane.operator.kinds.connect_io import ConnectAdapter
from sparkplane.operator.kinds.kubeflow_io import KubeflowAdapter
from sparkplane.operator.kinds.podtemplates import TemplateDirLoader
from sparkplane.operator.kinds.scheduled_io import ScheduleAdapter
from sparkplane.operator.runtime import actions, loop, sweep
from sparkplane.operator.runtime.capacity import CapacityGate
from sparkplane.operator.runtime.deletions import DeletionArchiver
from sparkplane.operator.runtime.dynamic import DynamicConfig
from sparkplane.operator.runtime.fencing import FencedKube
from sparkplane.operator.runtime.leader import LeaderElector
from sparkplane.operator.runtime.metrics import OperatorMetrics
from sparkplane.operator.runtime.workqueue import WorkQueue
from sparkplane.settings import Settings
from sparkplane.vocab import (
    DRIVER_ROLE,
    EXECUTOR_ROLE,
    ROLE_LABEL,
    SPARK_APPLICATION,
    SPARK_CLUSTER,
)

log = logging.getLogger(__name__)
Key = loop.Key
Obj = dict[str, Any]
__all__ = ["Key", "Operator"]


def _rv(obj: Obj | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


#: An executor's change waits this long before its app is reconciled, unless the app is already
#: queued: a driver's executors start and end together (Spark asks for them in a batch), so
#: their changes fold into one pass and one status write (Kubeflow's ``executorState``) instead
#: of one each; each such write costs the API server a CR validation and a watch event.
EXECUTOR_FOLD_SECONDS = 1.0


def urgent_change(kind: str, obj: Obj) -> bool:
    """Whether a change of this secondary object (a pod, a Workload) goes in the urgent lane:
    everything but an executor pod's change (see :meth:`Operator._on_secondary`)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return kind != "Pod" or labels.get(ROLE_LABEL) != EXECUTOR_ROLE


class Operator:
    """Reconciles SparkApplications and SparkClusters until :meth:`stop`."""

    def __init__(
        self,
        kube: Kube,
        settings: OperatorSettings | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        template_loader: Callable[[str], Obj | None] | None = None,
    ) -> None:
        self.settings = settings or OperatorSettings()
        self.clock = clock
        self.identity = self.settings.identity or f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}"
        self.name = self.settings.reconcile.operator_name
        self.elector: LeaderElector | None = None
        self.reader = kube
        fenced = FencedKube(kube, self.may_write)
        self.kube: Kube = fenced
        # backpressure on driver creation (issue 21 item 5): fed by every request and pod event
        self.capacity = CapacityGate(self.settings.capacity)
        if self.settings.capacity.enabled:
            fenced.on_request = self.capacity.on_request
        self.queue: WorkQueue[Key] = WorkQueue(
            base_delay=self.settings.base_retry_seconds, max_delay=self.settings.max_retry_seconds
        )
        self.metrics = OperatorMetrics()
        self.events = actions.EventRecorder(
            self.kube, self.name, self.identity, workers=self.settings.event_workers
        )
        # podTemplateFile: only from the configured directory (operator.podtemplates)
        loader = template_loader or TemplateDirLoader(self.settings.pod_template_dir)
        self.app_adapter = AppAdapter(
            kube,
            self.settings.reconcile,
            clock,
            loader,
            cluster_exists=self._cluster_exists,
            kueue=kueue_io.served(kube),  # Kueue installed: queued apps wait for its admission
            capacity=self.capacity if self.settings.capacity.enabled else None,
        )
        self.adapters: dict[str, loop.Adapter] = {AppAdapter.kind: self.app_adapter}
        limits = self.settings.reconcile.limits
        if self.settings.reconcile_clusters:
            self.adapters[ClusterAdapter.kind] = ClusterAdapter(kube, self.name, clock, limits)
        for schedule in SCHEDULE_KINDS.values() if self.settings.reconcile_schedules else ():
            if scheduled_io.served(kube, schedule):  # sparkplane's API, and Kubeflow's
                adapter = ScheduleAdapter(clock, limits, schedule)
                self.adapters[adapter.queue] = adapter
        if kubeflow_io.served(kube):  # Kubeflow's v1beta2 API, when its CRD is installed
            self.adapters[kubeflow_io.KUBEFLOW_APP] = KubeflowAdapter(self.app_adapter)
        if connect_io.served(kube):  # Kubeflow's v1alpha1 SparkConnect (a Connect server)
            self.adapters[connect_io.CONNECT] = ConnectAdapter(self.app_adapter)
        self.namespaces: tuple[str | None, ...] = self.settings.namespaces or (None,)
        self.resources: dict[str, list[Informer]] = {kind: [] for kind in self.adapters}
        self.secondary: list[tuple[Informer, loop.Watch]] = []
        for ns in self.namespaces:
            primary, secondary = self._informers_in(ns, self.settings.label_selector or None)
            for kind, informer in primary.items():
                self.resources[kind].append(informer)
            self.secondary += secondary
        self.dynamic = DynamicConfig(self.reader, self.settings, self.reconfigure)
        self.requests = ThreadPoolExecutor(
            max(self.settings.workers, 1) * 2, thread_name_prefix="requests"
        )
        kube.api.fit(max(self.settings.workers, 1) * 3 + 8)  # workers, their requests, informers
        self.archiver = DeletionArchiver(
            self.kube,
            ThreadPoolExecutor(2, thread_name_prefix="archive"),
            lambda: self.is_leader,
            self.namespaces,
            self.settings.archive_prune_seconds,
            self.settings.process,
        )
        self._lock = threading.Lock()
        self._written: dict[Key, Obj] = {}
        self._reported: dict[Key, str] = {}  # the last ReconcileError Event per resource
        self._stopping = threading.Event()
        self._leading = threading.Event()
        self._threads: list[threading.Thread] = []
        self.metrics.watch_states("applications", lambda: self.cached(SPARK_APPLICATION))
        self.metrics.watch_states("clusters", lambda: self.cached(SPARK_CLUSTER))
        self.metrics.watch_capacity(self.capacity.snapshot)

    def _informers_in(
        self, ns: str | None, selector: str | None
    ) -> tuple[dict[str, Informer], list[tuple[Informer, loop.Watch]]]:
        """The informers of one watched namespace (``None``: all): each kind's custom
        resources (narrowed by the label selector) and the adapters' secondary watches."""
        primary = {
            kind: Informer(
                self.reader, a.api_version, a.kind, namespace=ns, label_selector=selector
            )
            for kind, a in self.adapters.items()
        }
        secondary = [
            (
                Informer(
                    self.reader,
                    w.api_version,
                    w.kind,
                    namespace=ns,
                    label_selector=w.label_selector,
                ),
                w,
            )
            for a in self.adapters.values()
            for w in a.watches()
        ]
        return primary, secondary

    def _connect(
        self, primary: dict[str, Informer], secondary: list[tuple[Informer, loop.Watch]]
    ) -> None:
        for kind, informer in primary.items():
            informer.add_handler(self._on_custom_resource(kind))
        for informer, watch in secondary:
            informer.add_handler(self._on_secondary(watch))
            if watch.kind == "Pod":  # drivers deleted by someone else: archive their logs
                informer.add_handler(self.archiver.on_event)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, *, wait_synced: float = 30.0) -> Operator:
        for kind, informers in self.resources.items():
            for informer in informers:
                self._connect({kind: informer}, [])
        self._connect({}, self.secondary)
        everything = self._informers()
        for informer in everything:
            informer.start()
        for informer in everything:
            informer.wait_synced(wait_synced)
        self.events.start()
        if self.settings.metrics_port is not None:
            self.metrics.serve(self.settings.metrics_port)
        if self.settings.dynamic_config:
            self.dynamic.start(wait_synced)
        for i in range(max(self.settings.workers, 1)):
            self._spawn(self._work, f"reconcile-{i}")
        self._spawn(self._resync, "resync")
        if self.settings.capacity.enabled:
            self._spawn(self._wake_held, "capacity")
        if self.settings.leader_election:
            # its own gateway, with a timeout inside the renew deadline: a request the API
            # server sits on cannot hold the next renewal back past the point it could help
            lease_timeout = self.settings.lease_seconds * 2 / 3 - self.settings.renew_seconds
            self.elector = LeaderElector(
                Kube(self.reader.api, timeout=max(lease_timeout, 1.0)),
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

    def _informers(self) -> list[Informer]:
        primary = [i for informers in self.resources.values() for i in informers]
        return [*(i for i, _ in self.secondary), *primary]

    def stop(self) -> None:
        self._stopping.set()
        self.queue.shutdown()
        if self.elector is not None:
            self.elector.stop()
        for thread in self._threads:
            thread.join(timeout=10)
        self.dynamic.stop()
        for informer in self._informers():
            informer.stop()
        self.events.stop()
        self.requests.shutdown(wait=False)
        self.archiver.pool.shutdown(wait=False)
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

    def reconfigure(self, settings: OperatorSettings) -> None:
        """Run with ``settings`` from now on (the dynamic configuration, :mod:`.dynamic`): the
        reconcile interval at the next resync tick; a namespace added is watched (its
        informers started and synced, its resources queued), one removed is no longer (its
        informers stopped: its resources are left as they are); a new label selector replaces
        the custom resources' informers (the newly selected are queued, the others left)."""
        old = set(self.namespaces)
        new = settings.namespaces or (None,)
        added = [ns for ns in new if ns not in old]
        removed = old - set(new)
        reselect = settings.label_selector != self.settings.label_selector
        selector = settings.label_selector or None
        fresh: dict[str, list[Informer]] = {kind: [] for kind in self.resources}
        secondary = [(i, w) for i, w in self.secondary if i.namespace not in removed]
        started: list[Informer] = []
        for ns in new:
            if ns not in added and not reselect:
                continue
            primary, more = self._informers_in(ns, selector)
            more = more if ns in added else []
            self._connect(primary, more)
            for kind, informer in primary.items():
                fresh[kind].append(informer)
            secondary += more
            started += [*(i for i, _ in more), *primary.values()]
        for informer in started:
            informer.start()
        try:
            for informer in started:
                informer.wait_synced(30.0)
        except KubeError:  # e.g. no Role there yet: nothing changes
            for informer in started:
                informer.stop()
            raise
        gone = removed | (old if reselect else set())
        stopped = [i for i, _ in self.secondary if i.namespace in removed]
        resources: dict[str, list[Informer]] = {}
        for kind, informers in self.resources.items():
            stopped += [i for i in informers if i.namespace in gone]
            resources[kind] = [i for i in informers if i.namespace not in gone] + fresh[kind]
        with self._lock:  # readers see the old lists or the new ones, never half of them
            self.resources, self.secondary = resources, secondary
            self.namespaces = tuple(new)
            self.archiver.namespaces = self.namespaces
            self.settings = settings
        for informer in stopped:
            informer.stop()
        for kind, informers in fresh.items():  # queued before the swap made them visible
            for informer in informers:
                for obj in informer.list():
                    self.queue.add((kind, obj["metadata"]["namespace"], obj["metadata"]["name"]))
        if added or removed or reselect:
            log.info(
                "watched namespaces now %s (added %s, removed %s), selector %r",
                ", ".join(str(ns) for ns in new),
                ", ".join(str(ns) for ns in added) or "none",
                ", ".join(sorted(str(ns) for ns in removed)) or "none",
                settings.label_selector,
            )

    @property
    def process_settings(self) -> Settings:
        """Where released drivers' logs are archived (:class:`OperatorSettings` ``process``)."""
        return self.settings.process

    @property
    def pod_policy_allow(self) -> tuple[str, ...]:
        """The pod policy checks this operator does not apply (:class:`OperatorSettings`)."""
        return self.settings.pod_policy_allow

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def may_write(self) -> bool:
        """The fence: without leader election always; with it, only while the lease is held."""
        if self.elector is None:
            return not self.settings.leader_election
        return self._leading.is_set() and self.elector.holds()

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _on_leadership(self, leading: bool) -> None:
        if leading:
            self._leading.set()
            self._enqueue_all()
            self._spawn(self._sweep, "sweep-on-lead")
        else:
            self._leading.clear()

    # -- cache → queue --------------------------------------------------------------------
    def _cluster_exists(self, namespace: str, name: str) -> bool:
        informers = self.resources.get(ClusterAdapter.kind, [])
        return any(i.get(namespace, name) is not None for i in informers)

    def cached(self, kind: str) -> list[Obj]:
        return [obj for informer in self.resources.get(kind, []) for obj in informer.list()]

    def _enqueue_all(self) -> None:
        for kind in self.resources:
            for obj in self.cached(kind):
                meta = obj["metadata"]
                self.queue.add((kind, meta["namespace"], meta["name"]))

    def _on_custom_resource(self, kind: str) -> Callable[[str, Obj], None]:
        def handler(event: str, obj: Obj) -> None:
            meta = obj.get("metadata") or {}
            key = (kind, str(meta.get("namespace")), str(meta.get("name")))
            with self._lock:
                if event == "DELETED":
                    self._written.pop(key, None)
                    self._reported.pop(key, None)
                    self.capacity.forget(key)
                    return
                mine = self._written.get(key)
            if mine is not None and _rv(mine) == _rv(obj):
                self.capacity.saw(key, _rv(obj))  # its round trip: the API server's watch lag
                return  # our own status write coming back: nothing new to decide
            self.queue.add(key)

        return handler

    def _on_secondary(self, watch: loop.Watch) -> Callable[[str, Obj], None]:
        """A pod (or Workload) changed: its resource goes in the queue's URGENT lane (its
        status follows what it observes, and is written before new apps get drivers), except
        for an executor's change: it moves an app at most between its running states (Apache's
        ``RunningHealthy``/``RunningWithBelowThresholdExecutors``) and into Kubeflow's
        ``executorState`` (several writes an executor), so under overload it waits in the
        normal lane, in arrival order with the new apps, and the drivers' starts and ends are
        written first; and it is folded with its siblings' changes (``EXECUTOR_FOLD_SECONDS``)."""

        def handler(event: str, obj: Obj) -> None:
            keys = tuple(watch.on_event(event, obj))
            if watch.kind == "Pod":
                self.capacity.on_pod(event, obj, keys)
            urgent = urgent_change(watch.kind, obj)
            fold = self.settings.status_first and not urgent
            for key in keys:
                if key[0] not in self.resources:
                    continue
                if fold:  # an executor's: folded with its siblings' (EXECUTOR_FOLD_SECONDS)
                    self.queue.add_soon(key, EXECUTOR_FOLD_SECONDS)
                else:
                    self.queue.add(key, urgent=urgent and self.settings.status_first)

        return handler

    def _wake_held(self) -> None:
        """Queue the apps held for capacity that may be admitted now, oldest first."""
        every = self.settings.capacity.retry_seconds / 2
        while not self._stopping.wait(every):
            for key in self.capacity.wake():
                self.queue.add(key)  # type: ignore[arg-type]

    def _resync(self) -> None:
        last = last_sweep = time.monotonic()
        while not self._stopping.wait(min(self.settings.resync_seconds, 30.0)):
            now = time.monotonic()
            for adapter in self.adapters.values():
                adapter.resync()
            self.archiver.tick()
            if now - last >= self.settings.resync_seconds and self.is_leader:
                last = now
                self._enqueue_all()
            if now - last_sweep >= self.settings.sweep_seconds and self.is_leader:
                last_sweep = now
                self._sweep()

    def _sweep(self) -> None:
        sweep.run_round(self, self.settings.sweep_min_age_seconds)

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
                self._report_failure(key, exc)
            finally:
                self.metrics.reconcile_seconds.labels(key[0]).observe(time.perf_counter() - started)
                self.queue.done(key)

    def _report_failure(self, key: Key, exc: Exception) -> None:
        """A Warning Event ``ReconcileError`` on the resource, once per distinct error: an
        error that is not the API's (a spec the builders cannot handle) repeats on every retry,
        and its author must see it (``kubectl describe``), not only the operator's log."""
        if isinstance(exc, KubeError):
            return
        message = f"cannot reconcile: {type(exc).__name__}: {exc}"[:1000]
        with self._lock:
            if self._reported.get(key) == message:
                return
            self._reported[key] = message
        cr = self.current(key)
        if cr is not None:
            self.events.record(
                cr, Transition(None, "ReconcileError", message, self.clock(), warning=True)
            )

    def reconcile(self, key: Key) -> float | None:
        """Reconcile one resource now; returns the requeue delay (None: wait for changes)."""
        return loop.reconcile(self, self.adapters[key[0]], key)

    def current(self, key: Key) -> Obj | None:
        """The newest known copy: the cache's, or the one our last status write returned."""
        kind, namespace, name = key
        informers = self.resources.get(kind, [])
        cached = next((i.get(namespace, name) for i in informers if i.get(namespace, name)), None)
        with self._lock:
            mine = self._written.get(key)
        if cached is None:
            return None
        same = mine is not None and mine["metadata"].get("uid") == cached["metadata"].get("uid")
        if mine is not None and same and _rv(mine) > _rv(cached):
            return mine
        return cached

    def driver_pods(self) -> list[Obj]:
        """The driver pods the SparkApplication adapter has indexed (for the sweeper)."""
        pods = self.app_adapter.driver_pods()
        return [
            p for p in pods if (p["metadata"].get("labels") or {}).get(ROLE_LABEL) == DRIVER_ROLE
        ]

    def deleting(self, uid: str) -> None:
        """The sweeper deletes pod ``uid``: not someone else's deletion (not archived as one)."""
        self.archiver.ours(uid)

    def remember(self, key: Key, written: Obj) -> None:
        with self._lock:
            self._written[key] = written
        if self.settings.capacity.enabled:
            self.capacity.wrote(key, _rv(written))

    def publish(
        self,
        written: Obj,
        transitions: Iterable[Transition],
        notices: Iterable[Notice] = (),
    ) -> None:
        """Metrics for each committed transition; one Event for all of them; an Event for each
        notice (no state change: no metric)."""
        transitions = tuple(transitions)
        for transition in transitions:
            self.metrics.observe(transition)
        self.events.record_all(written, transitions)
        now = self.clock()
        for reason, message, warning in notices:
            self.events.record(
                written, Transition(None, reason, message, now, None, warning, reason)
            )
