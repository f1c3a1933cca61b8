"""SparkCluster: the master and workers as StatefulSets with Services, and its small state machine.

Owns the list of a cluster's objects (``<name>-master`` and ``<name>-worker`` StatefulSets,
headless Services ``<name>-master-svc`` and ``<name>-worker-svc``, the workers'
HorizontalPodAutoscaler ``<name>-worker-hpa`` when ``minWorkers < maxWorkers`` and
PodDisruptionBudget ``<name>-worker-pdb`` when ``minWorkers >= 1``; each built by
:mod:`sparkplane.operator.core.cluster_build`), every object owned by the SparkCluster, and
:func:`decide_cluster` over the states Submitted → RunningHealthy (master Ready
and at least ``minWorkers`` workers Ready) / SchedulingFailure (the objects cannot be made, or
the pods failed for good before the cluster was ever healthy: the rule of
:mod:`sparkplane.operator.core.cluster_health`), RunningHealthy → Failed (a StatefulSet vanished,
or the pods failed for good) → ResourceReleased (the objects deleted; their pods go with them).
``spec.suspend`` (Apache operator 1.1.0) takes Submitted or RunningHealthy to Suspended (the
objects but the auth Secret deleted); clearing it goes back to Submitted, which creates them.

Called by the runner (:mod:`sparkplane.operator.kinds.cluster_io`) and the CRD generator. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pydantic

from sparkplane.operator.core import bounds
from sparkplane.operator.core import cluster_build as build
from sparkplane.operator.core import cluster_health as health
from sparkplane.operator.core import standalone_auth as auth
from sparkplane.operator.core import states as st
from sparkplane.operator.core.cluster_spec import SparkClusterSpec
from sparkplane.operator.core.decision import CreateResources, Decision, DeleteResources, Transition
from sparkplane.operator.core.driver import owner_ref
from sparkplane.operator.core.settings import Limits

C = st.ClusterStateSummary
Obj = dict[str, Any]


def cluster_objects(
    cr: Mapping[str, Any],
    operator_name: str,
    *,
    new_secret: Callable[[], str] = auth.new_secret,
) -> tuple[Obj, ...]:
    """Secret, NetworkPolicy, Services, StatefulSets, HPA and PDB of SparkCluster ``cr``
    (raises pydantic.ValidationError).

    Built by :mod:`sparkplane.operator.core.cluster_build` and
    :mod:`sparkplane.operator.core.standalone_auth` (the Secret's value from ``new_secret``; the
    first one created stays); every object is put in the CR's namespace, labelled and owned by
    the CR.
    """
    spec = SparkClusterSpec.model_validate(cr.get("spec") or {})
    meta = cr["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
    labels = build.base_labels(name, operator_name, spec.runtime_versions.spark_version)
    out: list[Obj] = [
        auth.auth_secret(name, new_secret(), labels),
        auth.network_policy(name, labels),
    ]
    for role in ("master", "worker"):
        out.extend(build.role_objects(spec, name, namespace, role, labels))
    for extra in (
        build.autoscaler(spec, name, labels),
        build.disruption_budget(spec, name, labels),
    ):
        if extra is not None:
            out.append(extra)
    owner = owner_ref(cr)
    for obj in out:
        obj["metadata"]["namespace"] = namespace
        obj["metadata"]["ownerReferences"] = [owner]
    return tuple(out)


def _ready(sts: Mapping[str, Any] | None) -> int:
    return int(((sts or {}).get("status") or {}).get("readyReplicas") or 0)


def _broken(
    cr: Mapping[str, Any], statefulsets: Mapping[str, Obj | None], pods: Mapping[str, Sequence[Obj]]
) -> str | None:
    """Why the cluster's pods have failed for good (:mod:`.cluster_health`)."""
    spec = SparkClusterSpec.model_validate(cr.get("spec") or {})
    bounds = spec.cluster_tolerations.instance_config
    worker = statefulsets.get("worker") or {}
    wanted = int((worker.get("spec") or {}).get("replicas") or bounds.init_workers)
    return health.failure(pods, wanted, bounds.min_workers)


SUSPENDED_MESSAGE = "spec.suspend is true: the master and workers are released"


def decide_cluster(
    cr: Mapping[str, Any],
    statefulsets: Mapping[str, Obj | None],
    now: datetime,
    operator_name: str,
    *,
    create_error: str | None = None,
    pods: Mapping[str, Sequence[Obj]] | None = None,
    limits: Limits | None = None,
    new_secret: Callable[[], str] = auth.new_secret,
) -> Decision:
    """The next status and actions of a SparkCluster, given its StatefulSets and pods by role.

    A cluster above ``limits`` (:func:`sparkplane.operator.core.bounds.worker_problems`) is refused:
    ``SchedulingFailure`` with the reason, before anything is created.
    """
    status = copy.deepcopy(cr.get("status")) or None
    transitions: list[Transition] = []

    def go(dst: C, message: str, fields: Mapping[str, Any] | None = None) -> None:
        nonlocal status
        assert status is not None
        src = st.current_summary(status, cluster=True)
        status = st.append_state(status, dst, now, message, fields=fields)
        transitions.append(Transition(src, dst, message, now, None, dst in st.CLUSTER_FAILURES))

    if status is None:
        status = st.new_status(now, "Spark cluster has been created.", cluster=True)
        transitions.append(Transition(None, C.SUBMITTED, "created", now))
    state = st.current_summary(status, cluster=True)
    namespace = str(cr["metadata"].get("namespace") or "default")
    owner_uid = str(cr["metadata"].get("uid") or "")  # only its own objects are adopted/deleted
    action_list: list[Any] = []
    requeue: float | None = None
    try:
        objects = cluster_objects(cr, operator_name, new_secret=new_secret)
    except pydantic.ValidationError as exc:
        objects = ()
        problems = "; ".join(
            f"spec.{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        create_error = create_error or f"invalid spec: {problems}"
    instance = (
        ((cr.get("spec") or {}).get("clusterTolerations") or {}).get("instanceConfig")
    ) or {}
    too_big = bounds.worker_problems(
        instance if isinstance(instance, Mapping) else {}, limits or Limits()
    )
    if too_big and state == C.SUBMITTED and not create_error:
        objects, create_error = (), "; ".join(too_big)
    broken: str | None = None
    # the Secret is never deleted by name (no identity may delete Secrets, docs/security.md):
    # it goes with the SparkCluster, which owns it
    refs = tuple(
        (o["apiVersion"], o["kind"], o["metadata"]["name"])
        for o in objects
        if o["kind"] != "Secret"
    )
    suspend = (cr.get("spec") or {}).get("suspend") is True
    if state in (C.SUBMITTED, C.RUNNING_HEALTHY) and suspend:
        if any(statefulsets.get(role) is not None for role in ("master", "worker")):
            action_list.append(DeleteResources(namespace, refs, owner_uid=owner_uid))
        go(C.SUSPENDED, SUSPENDED_MESSAGE, {st.SUSPEND_REASON: st.SUSPEND_BY_SPEC})
        state = C.SUSPENDED
    elif state == C.SUSPENDED and not suspend:
        go(C.SUBMITTED, "spec.suspend cleared: creating the master and workers again")
        state = C.SUBMITTED
    elif state == C.SUSPENDED and any(  # left behind (a crash between delete and status)
        (statefulsets.get(role) or {"metadata": {"deletionTimestamp": "-"}})["metadata"].get(
            "deletionTimestamp"
        )
        is None
        for role in ("master", "worker")
    ):
        action_list.append(DeleteResources(namespace, refs, owner_uid=owner_uid))
    if state in (C.SUBMITTED, C.RUNNING_HEALTHY) and not create_error:
        broken = _broken(cr, statefulsets, pods or {})
    if state == C.SUBMITTED:
        if create_error:
            go(C.SCHEDULING_FAILURE, f"Cannot create cluster resources: {create_error}")
            state = C.SCHEDULING_FAILURE
        elif broken:  # never healthy: Apache's one failure out of Submitted
            go(C.SCHEDULING_FAILURE, f"Cluster failed to start: {broken}")
            state = C.SCHEDULING_FAILURE
        else:
            master, worker = statefulsets.get("master"), statefulsets.get("worker")
            if master is None or worker is None:
                action_list.append(CreateResources(namespace, objects, "", owner_uid))
            spec = SparkClusterSpec.model_validate(cr.get("spec") or {})
            minimum = spec.cluster_tolerations.instance_config.min_workers
            if _ready(master) >= 1 and _ready(worker) >= minimum:
                go(C.RUNNING_HEALTHY, f"Master ready, {_ready(worker)} worker(s) ready")
            else:
                requeue = 2.0
    elif state == C.RUNNING_HEALTHY:
        gone = [role for role in ("master", "worker") if statefulsets.get(role) is None]
        if gone:
            go(C.FAILED, f"StatefulSet of the {' and '.join(gone)} is gone")
            state = C.FAILED
        elif broken:
            go(C.FAILED, broken)
            state = C.FAILED
    if state in st.CLUSTER_FAILURES:
        action_list.append(DeleteResources(namespace, refs, owner_uid=owner_uid))
        go(C.RESOURCE_RELEASED, "Cluster resources released")
    changed = status != (cr.get("status") or None)
    return Decision(
        status=status if changed else None,
        actions=tuple(action_list),
        transitions=tuple(transitions),
        requeue_after=requeue,
    )
