"""The SparkApplication kind for the generic loop: what it observes and how it decides.

Owns the index of pods per application (:class:`~.pod_index.PodIndex`: drivers the operator
created, executors the drivers created, and the tombstones of deleted drivers, kept 10 minutes;
all keyed by the application's uid, never its name, so a SparkApplication deleted and created
again under the same name never sees its predecessor's pods or outcome), the pod templates read
from ``podTemplateFile``, the live reads the state machine may ask for (``check_driver``: is
a driver absent from the cache really gone? a pod of that name another uid controls is not this
resource's; ``read_priority``: the priority class of a Workload about to be created,
:func:`~.kueue_io.read_priority`), and which SparkCluster of its namespace an app's
``spark.master`` names (from the
runner's SparkCluster cache: its driver gets that cluster's secret), and, when Kueue is served,
the Workloads of queued apps (:class:`~.kueue_io.WorkloadIndex`, by uid too: an admission or an
eviction wakes the app). Decisions come from the pure
:func:`~sparkplane.operator.core.reconciler.decide`. With a capacity gate (the runner's
backpressure, :mod:`sparkplane.operator.core.capacity`), a decision that would create a driver
asks it first; held back, the app is decided again as held (it stays in its state, its status
says ``WaitingForCapacity``). Every kind that creates a driver is gated, under its own queue key
(the v1beta2 and SparkConnect adapters decide through this one with ``gate=`` their queue kind),
so one limit covers Apache's and Kubeflow's apps and sessions alike.

Called by the runner (through :mod:`sparkplane.operator.runtime.loop`). Writes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sparkplane.kube import Kube
from sparkplane.operator.core import standalone_auth
from sparkplane.operator.core.capacity import Gate
from sparkplane.operator.core.decision import CreateResources, Decision
from sparkplane.operator.core.driver import template_files
from sparkplane.operator.core.naming import OPERATOR_NAME_LABEL
from sparkplane.operator.core.observe import Observed
from sparkplane.operator.core.reconciler import decide
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.operator.core.states import AppStateSummary, current_summary
from sparkplane.operator.kinds.adapter import Key, Watch, queue_kind
from sparkplane.operator.kinds.kueue_io import WorkloadIndex, read_flavors, read_priority
from sparkplane.operator.kinds.pod_index import OWNER_KINDS, PodIndex
from sparkplane.operator.kinds.podtemplates import TemplateDirLoader
from sparkplane.vocab import APACHE_API_VERSION, KUEUE_API_VERSION, SPARK_APPLICATION, WORKLOAD

Obj = dict[str, Any]
APP = SPARK_APPLICATION
TOMBSTONE_SECONDS = 600.0
#: the states a queued app's driver may be created in: its admission's ResourceFlavors are read
CREATING_STATES = frozenset({AppStateSummary.ADMISSION_PENDING, AppStateSummary.DRIVER_REQUESTED})


NO_TEMPLATE_FILES = TemplateDirLoader(None)  # reads no local file (see operator.podtemplates)


def _owner_uids(pod: Obj) -> set[str]:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return {str(r.get("uid")) for r in refs if r.get("kind") in OWNER_KINDS and r.get("uid")}


class AppAdapter:
    """SparkApplications: pods in, :func:`decide` out."""

    kind = APP
    api_version = APACHE_API_VERSION

    def __init__(
        self,
        kube: Kube,
        settings: ReconcileSettings,
        clock: Callable[[], datetime],
        template_loader: Callable[[str], Obj | None] = NO_TEMPLATE_FILES,
        cluster_exists: Callable[[str, str], bool] = lambda namespace, name: False,
        *,
        kueue: bool = False,
        capacity: Gate | None = None,
    ) -> None:
        self.kube, self.settings, self.clock = kube, settings, clock
        self.template_loader = template_loader
        self.cluster_exists = cluster_exists  # (namespace, name): a SparkCluster in the cache
        self._lock = threading.Lock()
        self._index = PodIndex(TOMBSTONE_SECONDS)
        self.kueue = kueue  # Kueue's Workloads are served: watched, and queued apps wait on them
        self._workloads = WorkloadIndex()
        self.capacity = capacity  # the runner's backpressure on driver creation (None: none)

    def watches(self) -> Sequence[Watch]:
        selector = f"{OPERATOR_NAME_LABEL}={self.settings.operator_name}"
        pods = Watch("v1", "Pod", selector, self._on_pod)
        if not self.kueue:
            return (pods,)
        return (pods, Watch(KUEUE_API_VERSION, WORKLOAD, selector, self._on_workload))

    def _on_workload(self, event: str, workload: Obj) -> Iterable[Key]:
        with self._lock:
            ref = self._workloads.update(event, workload)
        if ref is None:
            return ()
        version, namespace, name = ref
        return ((queue_kind(version, APP), namespace, name),)

    # -- the pod index (by the application's uid: :mod:`.pod_index`) -------------------------
    def _on_pod(self, event: str, pod: Obj) -> Iterable[Key]:
        """The application to wake, under the queue kind of its API group and kind (Apache's
        or Kubeflow's SparkApplication, Kubeflow's SparkConnect: one pod index serves them
        all, keyed by uid)."""
        with self._lock:
            ref = self._index.update_versioned(event, pod, time.monotonic())
        if ref is None:
            return ()
        version, kind, namespace, name = ref
        return ((queue_kind(version, kind), namespace, name),)

    def driver_pods(self) -> list[Obj]:
        """Every live pod a SparkApplication controls (for the sweeper)."""
        with self._lock:
            return self._index.drivers()

    def resync(self) -> None:
        with self._lock:
            self._index.expire(time.monotonic())

    # -- deciding ---------------------------------------------------------------------------
    def observe(self, cr: Obj, *, flavors: bool = True) -> Observed:
        """What :func:`decide` needs of ``cr`` (caches; with ``flavors``, the ResourceFlavors
        its admitted Workloads name are read while its driver may be created)."""
        meta = cr["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        uid = str(meta.get("uid") or "")
        with self._lock:
            pods, graves = self._index.of(uid)
            workloads = self._workloads.of(uid)
        templates: dict[str, Obj] = {}
        for role, path in template_files(cr).items():
            loaded = self.template_loader(path)
            if loaded is not None:
                templates[role] = loaded
        master = ((cr.get("spec") or {}).get("sparkConf") or {}).get("spark.master")
        target = standalone_auth.target_cluster(str(master) if master else None, key[0])
        found = target if target and self.cluster_exists(key[0], target) else None
        creating = current_summary(cr.get("status")) in CREATING_STATES
        read = read_flavors(self.kube, workloads) if flavors and self.kueue and creating else {}
        return Observed(
            pods=pods,
            tombstones=graves,
            templates=templates,
            auth_cluster=found,
            owner=uid,
            kueue=self.kueue,
            workloads=workloads,
            flavors=read,
        )

    def decide(
        self, cr: Obj, *, create_error: str | None = None, gate: str | None = APP
    ) -> Decision:
        """``gate``: the queue kind the capacity gate knows this resource by (the runner's key;
        Kubeflow's kinds pass theirs); None: not gated."""
        observed = replace(self.observe(cr), create_error=create_error)
        decision = decide(cr, observed, self.clock(), self.settings)
        if (ref := decision.read_priority) is not None:  # a Workload to create: its priority
            read = {**observed.priority, ref: read_priority(self.kube, ref)}
            observed = replace(observed, priority=read)
            decision = decide(cr, observed, self.clock(), self.settings)
        if gate is not None and self.capacity is not None:
            decision, observed = self._gated(gate, cr, observed, decision)
        if decision.check_driver:  # absent from the cache: a live read before concluding
            namespace = str(cr["metadata"]["namespace"])
            pod = self.kube.get_or_none("v1", "Pod", decision.check_driver, namespace)
            uid = str(cr["metadata"].get("uid") or "")
            if pod is not None and uid and uid not in _owner_uids(pod):
                pod = None  # a predecessor's driver of the same name: not this resource's
            pods = (*observed.pods, pod) if pod else observed.pods
            observed = replace(observed, pods=pods, driver_absent=pod is None)
            decision = decide(cr, observed, self.clock(), self.settings)
        return decision

    def _gated(
        self, kind: str, cr: Obj, observed: Observed, decision: Decision
    ) -> tuple[Decision, Observed]:
        """``decision`` if it creates no driver or the gate admits it; else decided as held."""
        assert self.capacity is not None
        meta = cr["metadata"]
        key = (kind, str(meta["namespace"]), str(meta["name"]))
        if not creates_driver(decision):
            self.capacity.forget(key)
            return decision, observed
        verdict = self.capacity.admit(key)
        if verdict.admitted:
            return decision, observed
        held = replace(observed, held=verdict.reason)
        return decide(cr, held, self.clock(), self.settings), held


def creates_driver(decision: Decision) -> bool:
    """``decision`` creates a driver pod (not only a Kueue Workload)."""
    return any(
        isinstance(a, CreateResources) and any(o.get("kind") == "Pod" for o in a.objects)
        for a in decision.actions
    )
