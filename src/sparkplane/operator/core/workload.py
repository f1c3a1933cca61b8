"""A SparkApplication's Kueue ``Workload``: what it reserves, and what an admission says.

The approach of Apache's operator 1.1.0 (apache/spark-kubernetes-operator, Kueue admission) and
of Kueue's own job integrations (kubernetes-sigs/kueue ``pkg/controller/jobframework``): an
app that names a LocalQueue (label ``kueue.x-k8s.io/queue-name``) is described to Kueue by a
Workload before any pod exists; Kueue admits it when the ClusterQueue has quota; the admission
says how many pods of each pod set were admitted and which labels, annotations, node selectors
and tolerations each pod set's pods must carry (``status.admissionChecks[].podSetUpdates``).

Pod sets: ``driver`` (count 1, the rendered driver pod's spec, so Kueue counts exactly what the
driver requests) and ``executor`` (a pod with the executor container's requests, computed as
Spark's ``BasicExecutorFeatureStep`` computes them, and the executors' node selector).

Dynamic allocation: the executor pod set reserves ``spark.dynamicAllocation.maxExecutors``
(the operator always caps it: :func:`~sparkplane.operator.core.bounds.with_executor_cap`).
Reserving the ceiling is the simple correct choice: an app never runs more executors than Kueue
admitted, so quota is never over-committed and no executor waits unscheduled after admission;
the price is that an app scaled below its ceiling holds quota it does not use (growing and
shrinking an admitted Workload would need Kueue's elastic workloads, alpha in v0.17). Without
dynamic allocation it reserves ``spark.executor.instances`` (Spark's default 2).

Admitted quota is the ceiling the app runs with: :func:`pinned_conf` writes the admitted count
over ``spark.executor.instances`` or ``spark.dynamicAllocation.maxExecutors`` (and lowers
``minExecutors``/``initialExecutors`` to it) in the conf the driver is submitted with.

ResourceFlavors: the admission names each pod set's flavors (``podSetAssignments[].flavors``)
but not what they ask of the pods; :func:`with_flavors` puts their ``nodeLabels`` and
``tolerations`` into each pod set's update, as Kueue's job integrations do, once the operator
has read them (:func:`unresolved_flavors`: none may be missing), and :func:`check_selector`
refuses a conflict with the app's own node selector, as Kueue does (``FailedToStart``).

:func:`admitted_cr` is the SparkApplication as the admission lets it run: the pinned conf,
and the executor pod set's update as Spark's executor confs (labels, annotations, node selector)
and pod template (tolerations); the driver's update goes onto the rendered driver pod
(:func:`with_pod_set_update`). The reconciler (:mod:`~sparkplane.operator.core.reconciler`)
builds the Workload of each attempt and decides from what Kueue wrote into it.

Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkplane.operator.core.bounds import DYNAMIC
from sparkplane.operator.core.decision import Release
from sparkplane.render.memory import executor_memory_mib
from sparkplane.vocab import (
    DRIVER_ROLE,
    EXEC_ID_LABEL,
    EXECUTOR_CONTAINER,
    EXECUTOR_ROLE,
    KUEUE_API_VERSION,
    POD_ENDED,
    QUEUE_NAME_LABEL,
    QUOTA_GATE,
    QUOTA_RELEASED_ANNOTATION,
    WORKLOAD,
)

Obj = dict[str, Any]
DEFAULT_INSTANCES = 2  # Spark's spark.executor.instances when unset (dynamic allocation off)
NODE_SELECTOR = "spark.kubernetes.node.selector."
EXECUTOR_NODE_SELECTOR = "spark.kubernetes.executor.node.selector."


def queue_name(cr: Mapping[str, Any]) -> str | None:
    """The LocalQueue ``cr`` names (its ``kueue.x-k8s.io/queue-name`` label), if any."""
    labels = (cr.get("metadata") or {}).get("labels") or {}
    name = labels.get(QUEUE_NAME_LABEL)
    return str(name) if name else None


def dynamic(conf: Mapping[str, str]) -> bool:
    return str(conf.get(f"{DYNAMIC}.enabled", "false")).strip().lower() == "true"


def executor_count(conf: Mapping[str, str]) -> int:
    """Executors to reserve: ``maxExecutors`` under dynamic allocation, else ``instances``."""
    key = f"{DYNAMIC}.maxExecutors" if dynamic(conf) else "spark.executor.instances"
    return int(str(conf.get(key, DEFAULT_INSTANCES)).strip())


def executor_requests(conf: Mapping[str, str], *, non_jvm: bool) -> dict[str, str]:
    """One executor container's requests (cpu as Spark requests it, memory with overhead)."""
    cpu = (
        conf.get("spark.kubernetes.executor.request.cores")
        or conf.get("spark.executor.cores")
        or "1"
    )
    return {"cpu": str(cpu), "memory": f"{executor_memory_mib(conf, non_jvm=non_jvm)}Mi"}


def executor_node_selector(conf: Mapping[str, str]) -> dict[str, str]:
    """Spark's app-wide node selector, overridden by the executors' own."""
    out = {k.removeprefix(NODE_SELECTOR): v for k, v in conf.items() if k.startswith(NODE_SELECTOR)}
    out.update(
        (k.removeprefix(EXECUTOR_NODE_SELECTOR), v)
        for k, v in conf.items()
        if k.startswith(EXECUTOR_NODE_SELECTOR)
    )
    return out


def build_workload(
    cr: Mapping[str, Any],
    name: str,
    driver_pod: Mapping[str, Any],
    conf: Mapping[str, str],
    *,
    non_jvm: bool,
    owner: Mapping[str, Any],
    labels: Mapping[str, str] | None = None,
) -> Obj:
    """The Workload reserving ``driver_pod`` and the app's executors in the queue ``cr``
    names, owned by ``owner`` (the CR: deleting the app deletes it), with ``labels`` too
    (the operator's: what it watches Workloads by)."""
    queue = queue_name(cr)
    if queue is None:
        raise ValueError(f"the app names no queue (label {QUEUE_NAME_LABEL})")
    meta = cr["metadata"]
    driver_spec = copy.deepcopy(dict(driver_pod["spec"]))
    image = next(
        (c.get("image") for c in driver_spec.get("containers") or [] if c.get("image")), None
    )
    executor = {
        "name": EXECUTOR_CONTAINER,
        "resources": {"requests": executor_requests(conf, non_jvm=non_jvm)},
    }
    if image:
        executor["image"] = image
    executor_spec: Obj = {"containers": [executor], "restartPolicy": "Never"}
    if selector := executor_node_selector(conf):
        executor_spec["nodeSelector"] = selector
    executors = executor_count(conf)
    pod_sets: list[Obj] = [{"name": DRIVER_ROLE, "count": 1, "template": {"spec": driver_spec}}]
    if executors > 0:  # no executors: the driver alone
        pod_sets.append(
            {"name": EXECUTOR_ROLE, "count": executors, "template": {"spec": executor_spec}}
        )
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": WORKLOAD,
        "metadata": {
            "name": name,
            "namespace": str(meta.get("namespace") or "default"),
            "labels": {**(labels or {}), QUEUE_NAME_LABEL: queue},
            "ownerReferences": [dict(owner)],
        },
        "spec": {"queueName": queue, "podSets": pod_sets},
    }


def _condition(workload: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def _true(workload: Mapping[str, Any], kind: str) -> bool:
    found = _condition(workload, kind)
    return bool(found and found.get("status") == "True")


@dataclass(frozen=True)
class PodSetUpdate:
    """What an admission asks of one pod set's pods."""

    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[Obj, ...] = ()


@dataclass(frozen=True)
class Admission:
    """An admitted Workload: the executors admitted, each pod set's updates (the admission
    checks' ``podSetUpdates``; with the flavors' once :func:`with_flavors` merged them) and
    the ResourceFlavors each pod set was admitted on (``podSetAssignments[].flavors``)."""

    executors: int
    updates: dict[str, PodSetUpdate]
    flavors: dict[str, tuple[str, ...]] = field(default_factory=dict)


def admission(workload: Mapping[str, Any]) -> Admission | None:
    """The admission of ``workload``, None while it waits (or after Kueue evicted it)."""
    if not _true(workload, "Admitted") or _true(workload, "Evicted"):
        return None
    status = workload.get("status") or {}
    assignments = (status.get("admission") or {}).get("podSetAssignments") or []
    counts = {a.get("name"): int(a.get("count", 0)) for a in assignments}
    flavors = {  # resource -> flavor: each flavor once, in the resources' order
        str(a.get("name")): tuple(dict.fromkeys(str(v) for _, v in sorted(f.items())))
        for a in assignments
        if (f := a.get("flavors") or {})
    }
    updates: dict[str, PodSetUpdate] = {}
    for check in status.get("admissionChecks") or []:
        for u in check.get("podSetUpdates") or []:
            old = updates.get(u["name"], PodSetUpdate())
            updates[u["name"]] = PodSetUpdate(
                {**old.labels, **(u.get("labels") or {})},
                {**old.annotations, **(u.get("annotations") or {})},
                {**old.node_selector, **(u.get("nodeSelector") or {})},
                (*old.tolerations, *(u.get("tolerations") or [])),
            )
    return Admission(counts.get(EXECUTOR_ROLE, 0), updates, flavors)


def with_tolerations(tolerations: Sequence[Obj], more: Sequence[Obj]) -> list[Obj]:
    """``tolerations`` and those of ``more`` not already among them (Kueue appends so)."""
    out = list(tolerations)
    out += [t for t in more if t not in out]
    return out


def flavor_names(admitted: Admission) -> tuple[str, ...]:
    """Every ResourceFlavor the admission names (each once, sorted)."""
    return tuple(sorted({n for names in admitted.flavors.values() for n in names}))


def unresolved_flavors(
    admitted: Admission, flavors: Mapping[str, Mapping[str, Any] | None]
) -> tuple[str, ...]:
    """The ResourceFlavors ``admitted`` names that ``flavors`` (name -> object as read, None:
    not found; a name absent: not read) does not hold: the driver may not be created yet."""
    return tuple(n for n in flavor_names(admitted) if flavors.get(n) is None)


class FlavorConflict(ValueError):
    """A flavor's nodeLabels, an admission check's update or a pod's own node selector ask
    different values of one key (Kueue fails such a job's start: ``FailedToStart``)."""


def _conflicts(what: str, a: Mapping[str, str], b: Mapping[str, str]) -> None:
    clash = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
    if clash:
        pairs = ", ".join(f"{k}={a[k]!r} vs {b[k]!r}" for k in clash)
        raise FlavorConflict(f"{what}: {pairs}")


def merged_update(base: PodSetUpdate, other: PodSetUpdate, where: str) -> PodSetUpdate:
    """``base`` and ``other`` together, as Kueue's ``PodSetInfo.Merge``
    (``pkg/podset/podset.go``): a key both set to different values is a conflict
    (:class:`FlavorConflict`, naming ``where``), tolerations appended unless present."""
    for what, a, b in (
        ("labels", base.labels, other.labels),
        ("annotations", base.annotations, other.annotations),
        ("nodeSelector", base.node_selector, other.node_selector),
    ):
        _conflicts(f"{where} {what}", a, b)
    return PodSetUpdate(
        {**base.labels, **other.labels},
        {**base.annotations, **other.annotations},
        {**base.node_selector, **other.node_selector},
        tuple(with_tolerations(base.tolerations, other.tolerations)),
    )


def with_flavors(admitted: Admission, flavors: Mapping[str, Mapping[str, Any] | None]) -> Admission:
    """``admitted`` with each pod set's ResourceFlavors applied as Kueue's job integrations
    apply them (``podset.FromAssignment`` in ``pkg/podset/podset.go``, merged with the checks'
    ``podSetUpdates`` in ``pkg/controller/jobframework/reconciler.go``): the flavors'
    ``spec.nodeLabels`` into the node selector, their ``spec.tolerations`` appended, then the
    admission checks' updates merged (:func:`merged_update`: a conflict raises). Every flavor
    must be resolved (:func:`unresolved_flavors`)."""
    updates: dict[str, PodSetUpdate] = {}
    for pod_set in sorted(set(admitted.flavors) | set(admitted.updates)):
        selector: dict[str, str] = {}
        tolerations: list[Obj] = []
        for name in admitted.flavors.get(pod_set, ()):
            spec = (flavors.get(name) or {}).get("spec") or {}
            selector.update({str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()})
            tolerations = with_tolerations(tolerations, spec.get("tolerations") or [])
        base = PodSetUpdate(node_selector=selector, tolerations=tuple(tolerations))
        update = admitted.updates.get(pod_set, PodSetUpdate())
        updates[pod_set] = merged_update(
            base, update, f"pod set {pod_set}: the ResourceFlavor and podSetUpdates"
        )
    return Admission(admitted.executors, updates, admitted.flavors)


def check_selector(pod_set: str, own: Mapping[str, str], update: PodSetUpdate) -> None:
    """Raise :class:`FlavorConflict` if ``update`` asks a node-selector key of pod set
    ``pod_set`` a value other than the pod's ``own`` (Kueue's ``podset.Merge`` refuses the
    same: the job is not started)."""
    _conflicts(
        f"pod set {pod_set}: the app's nodeSelector and its admission's", own, update.node_selector
    )


def pending_message(workload: Mapping[str, Any]) -> str:
    """Why Kueue has not admitted ``workload`` yet (its QuotaReserved message), or an eviction."""
    for kind in ("Evicted", "QuotaReserved"):
        found = _condition(workload, kind)
        if found and (kind != "Evicted" or found.get("status") == "True"):
            return str(found.get("message") or found.get("reason") or "")
    return "waiting for Kueue"


def pinned_conf(conf: Mapping[str, str], executors: int) -> dict[str, str]:
    """``conf`` held to ``executors`` admitted executors: the count Spark would start
    (``instances``, or dynamic allocation's ``maxExecutors``, with ``min``/``initial`` lowered
    to it) is the admitted one."""
    out = dict(conf)
    if dynamic(conf):
        out[f"{DYNAMIC}.maxExecutors"] = str(executors)
        for key in (f"{DYNAMIC}.minExecutors", f"{DYNAMIC}.initialExecutors"):
            if key in out and int(str(out[key]).strip()) > executors:
                out[key] = str(executors)
    else:
        out["spark.executor.instances"] = str(executors)
    return out


def with_pod_set_update(pod: Mapping[str, Any], update: PodSetUpdate) -> Obj:
    """``pod`` (or a pod template) carrying an admission's update: labels, annotations and
    node selector merged (the admission's win), tolerations appended unless present."""
    out = copy.deepcopy(dict(pod))
    meta = out.setdefault("metadata", {})
    if update.labels:
        meta["labels"] = {**(meta.get("labels") or {}), **update.labels}
    if update.annotations:
        meta["annotations"] = {**(meta.get("annotations") or {}), **update.annotations}
    spec = out.setdefault("spec", {})
    if update.node_selector:
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **update.node_selector}
    tolerations = with_tolerations(spec.get("tolerations") or [], update.tolerations)
    if tolerations:
        spec["tolerations"] = tolerations
    return out


EXECUTOR_LABEL = "spark.kubernetes.executor.label."
EXECUTOR_ANNOTATION = "spark.kubernetes.executor.annotation."


def admitted_cr(cr: Mapping[str, Any], admitted: Admission) -> Obj:
    """``cr`` as ``admitted`` lets it run: its sparkConf pinned to the admitted executors
    (:func:`pinned_conf`; a typed ``spec.executor.instances`` too), and the executor pod set's
    update as Spark's executor confs (labels, annotations, node selector: the admission's win)
    and tolerations appended to ``spec.executorSpec.podTemplateSpec``. The driver's update is
    for the rendered driver pod (:func:`with_pod_set_update`)."""
    out = copy.deepcopy(dict(cr))
    spec = out.setdefault("spec", {})
    conf = {str(k): str(v) for k, v in (spec.get("sparkConf") or {}).items()}
    pinned = pinned_conf(conf, admitted.executors)
    executor_typed = spec.get("executor")
    typed = isinstance(executor_typed, dict) and "instances" in executor_typed
    if typed and not dynamic(conf):  # the typed field wins over sparkConf: pin it too
        executor_typed["instances"] = admitted.executors
        if "spark.executor.instances" not in conf:
            pinned.pop("spark.executor.instances")
    update = admitted.updates.get(EXECUTOR_ROLE, PodSetUpdate())
    for prefix, values in (
        (EXECUTOR_LABEL, update.labels),
        (EXECUTOR_ANNOTATION, update.annotations),
        (EXECUTOR_NODE_SELECTOR, update.node_selector),
    ):
        pinned.update((f"{prefix}{k}", v) for k, v in values.items())
    spec["sparkConf"] = pinned
    holder = spec.setdefault("executorSpec", {}) or {}
    spec["executorSpec"] = holder
    template = holder.setdefault("podTemplateSpec", {}) or {}
    holder["podTemplateSpec"] = template
    pod_spec = template.setdefault("spec", {}) or {}
    template["spec"] = pod_spec
    gates = list(pod_spec.get("schedulingGates") or [])
    if not any(g.get("name") == QUOTA_GATE for g in gates):
        pod_spec["schedulingGates"] = [*gates, {"name": QUOTA_GATE}]
    if update.tolerations:
        pod_spec["tolerations"] = with_tolerations(
            pod_spec.get("tolerations") or [], update.tolerations
        )
    return out


@dataclass(frozen=True)
class ExecutorQuota:
    """What the operator does about a queued app's executors (:func:`executor_quota`).

    ``release``: gated executors to let run (their gate removed, marked released);
    ``remove``: (name, uid) of executors running past the admitted count, those without the
    operator's release mark (someone removed their gate) first, to delete; ``held``: gated
    executors left waiting because the app asked for more than Kueue admitted.
    """

    release: tuple[Release, ...] = ()
    remove: tuple[tuple[str, str], ...] = ()
    held: int = 0


def _gate_index(pod: Mapping[str, Any]) -> int | None:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return next((i for i, g in enumerate(gates) if g.get("name") == QUOTA_GATE), None)


def _exec_order(pod: Mapping[str, Any]) -> tuple[int, str]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    raw = str(labels.get(EXEC_ID_LABEL, ""))
    return (int(raw) if raw.isdigit() else 1 << 30, str(pod["metadata"]["name"]))


def executor_quota(executors: Sequence[Mapping[str, Any]], admitted: int) -> ExecutorQuota:
    """Hold a queued app to the ``admitted`` executors Kueue admitted, whatever it asks at
    run time (its own code may raise ``spark.executor.instances`` or ``maxExecutors`` over the
    pinned conf). ``executors``: the current attempt's executor pods.

    Every executor is created behind the scheduling gate :data:`~sparkplane.vocab.QUOTA_GATE`
    (:func:`admitted_cr` puts it in the executor template). Live executors without it count
    against ``admitted``; gated ones are released in Spark's order (executor ID) while there is
    room, the rest wait, gated, using no node resources, until an executor ends — a dynamically
    allocated app that scales down makes room for one it asks later. Ungated executors past
    ``admitted`` (a driver removed the gate itself: drivers may update the pods they own) are
    removed, those the operator did not release (no :data:`QUOTA_RELEASED_ANNOTATION`) first,
    newest first."""
    live = sorted(
        (p for p in executors if (p.get("status") or {}).get("phase") not in POD_ENDED),
        key=_exec_order,
    )
    if any((p.get("metadata") or {}).get("deletionTimestamp") for p in live):
        live = [p for p in live if not (p.get("metadata") or {}).get("deletionTimestamp")]
    running = [p for p in live if _gate_index(p) is None]
    gated = [p for p in live if _gate_index(p) is not None]
    room = admitted - len(running)
    # past the admission, the operator's own releases are kept (oldest first) and the others
    # removed: an executor whose gate someone else removed never displaces a released one
    kept = sorted(running, key=lambda p: (not _released(p), _exec_order(p)))[: max(admitted, 0)]
    over = [p for p in running if p not in kept]
    remove = tuple(
        (str(p["metadata"]["name"]), str(p["metadata"].get("uid") or "")) for p in reversed(over)
    )
    release = tuple(_release(p) for p in gated[: max(room, 0)])
    return ExecutorQuota(release, remove, len(gated) - len(release))


def _released(pod: Mapping[str, Any]) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return QUOTA_RELEASED_ANNOTATION in annotations


def _release(pod: Mapping[str, Any]) -> Release:
    meta = pod.get("metadata") or {}
    fresh = None if meta.get("annotations") else str(meta.get("resourceVersion") or "")
    return Release(str(meta["name"]), str(meta.get("uid") or ""), _gate_index(pod) or 0, fresh)


def admitted_message(workload: Mapping[str, Any], admitted: Admission) -> str:
    """What the ``KueueAdmitted`` transition says."""
    name = (workload.get("metadata") or {}).get("name", "?")
    queue = (workload.get("status") or {}).get("admission", {}).get("clusterQueue", "")
    where = f" by ClusterQueue {queue}" if queue else ""
    return f"Workload {name} admitted{where}: driver and {admitted.executors} executors"


def evicted(workload: Mapping[str, Any] | None) -> bool:
    """Kueue took the admission back (``Evicted``, or no longer ``Admitted``), or the
    Workload is gone: the app may not keep running on that quota."""
    return workload is None or admission(workload) is None
