"""SparkCluster: the master and workers as StatefulSets with Services, and its small state machine.

Owns the objects of a cluster (``<name>-master`` and ``<name>-worker`` StatefulSets, headless
Services ``<name>-master-svc`` and ``<name>-worker-svc``; standalone Spark master on 7077/8080,
workers pointed at ``spark://<name>-master-svc.<ns>.svc:7077``; ``masterSpec``/``workerSpec``
overrides merged over them; worker replicas = ``initWorkers``), every object owned by the
SparkCluster, and :func:`decide_cluster` over the states Submitted → RunningHealthy (master Ready
and at least ``minWorkers`` workers Ready) / SchedulingFailure, RunningHealthy → Failed (a
StatefulSet vanished) → ResourceReleased.

Called by the runner (:mod:`sparkplane.operator.cluster_io`) and the CRD generator. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import pydantic

from sparkplane.operator import states as st
from sparkplane.operator.cluster_spec import SparkClusterSpec
from sparkplane.operator.decision import CreateResources, Decision, DeleteResources, Transition
from sparkplane.operator.driver import owner_ref
from sparkplane.operator.naming import CLUSTER_NAME_LABEL, OPERATOR_NAME_LABEL, label_value

C = st.ClusterStateSummary
Obj = dict[str, Any]
MASTER_PORTS = (("spark", 7077), ("web", 8080), ("rest", 6066))
WORKER_PORTS = (("web", 8081),)


def _merge(base: Obj, override: Mapping[str, Any] | None) -> Obj:
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def cluster_objects(cr: Mapping[str, Any], operator_name: str) -> tuple[Obj, ...]:
    """The Services and StatefulSets of SparkCluster ``cr`` (raises pydantic.ValidationError)."""
    spec = SparkClusterSpec.model_validate(cr.get("spec") or {})
    meta = cr["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
    version = spec.runtime_versions.spark_version
    image = spec.spark_conf.get(
        "spark.kubernetes.container.image", "apache/spark:{{SPARK_VERSION}}"
    )
    image = image.replace("{{SPARK_VERSION}}", version)
    master_url = f"spark://{name}-master-svc.{namespace}.svc:7077"
    out: list[Obj] = []
    for role, ports, part in (
        ("master", MASTER_PORTS, spec.master_spec),
        ("worker", WORKER_PORTS, spec.worker_spec),
    ):
        labels = {
            OPERATOR_NAME_LABEL: operator_name,
            CLUSTER_NAME_LABEL: label_value(name),
            "spark-role": role,
            "spark-version": version,
        }
        args = (
            ["/opt/spark/sbin/start-master.sh"]
            if role == "master"
            else [
                "/opt/spark/sbin/start-worker.sh",
                master_url,
            ]
        )
        container = {
            "name": role,
            "image": image,
            "args": args,
            "env": [{"name": "SPARK_NO_DAEMONIZE", "value": "true"}],
            "ports": [{"name": n, "containerPort": p} for n, p in ports],
        }
        replicas = 1 if role == "master" else spec.cluster_tolerations.instance_config.init_workers
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _merge(
                {"name": f"{name}-{role}-svc", "labels": labels}, part.service_metadata
            ),
            "spec": _merge(
                {
                    "clusterIP": "None",
                    "selector": labels,
                    "ports": [{"name": n, "port": p, "targetPort": p} for n, p in ports],
                },
                part.service_spec,
            ),
        }
        statefulset = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _merge(
                {"name": f"{name}-{role}", "labels": labels}, part.stateful_set_metadata
            ),
            "spec": _merge(
                {
                    "replicas": replicas,
                    "serviceName": f"{name}-{role}-svc",
                    "podManagementPolicy": "Parallel",
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {"containers": [container]},
                    },
                },
                part.stateful_set_spec,
            ),
        }
        out.extend((service, statefulset))
    owner = owner_ref(cr)
    for obj in out:
        obj["metadata"]["namespace"] = namespace
        obj["metadata"]["ownerReferences"] = [owner]
    return tuple(out)


def _ready(sts: Mapping[str, Any] | None) -> int:
    return int(((sts or {}).get("status") or {}).get("readyReplicas") or 0)


def decide_cluster(
    cr: Mapping[str, Any],
    statefulsets: Mapping[str, Obj | None],
    now: datetime,
    operator_name: str,
    *,
    create_error: str | None = None,
) -> Decision:
    """The next status and actions of a SparkCluster, given its StatefulSets by role."""
    status = copy.deepcopy(cr.get("status")) or None
    transitions: list[Transition] = []

    def go(dst: C, message: str) -> None:
        nonlocal status
        assert status is not None
        src = st.current_summary(status, cluster=True)
        status = st.append_state(status, dst, now, message)
        transitions.append(Transition(src, dst, message, now, None, dst in st.CLUSTER_FAILURES))

    if status is None:
        status = st.new_status(now, "Spark cluster has been created.", cluster=True)
        transitions.append(Transition(None, C.SUBMITTED, "created", now))
    state = st.current_summary(status, cluster=True)
    namespace = str(cr["metadata"].get("namespace") or "default")
    action_list: list[Any] = []
    requeue: float | None = None
    try:
        objects = cluster_objects(cr, operator_name)
    except pydantic.ValidationError as exc:
        objects = ()
        create_error = create_error or f"invalid spec: {exc.error_count()} problem(s): {exc}"
    refs = tuple((o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objects)
    if state == C.SUBMITTED:
        if create_error:
            go(C.SCHEDULING_FAILURE, f"Cannot create cluster resources: {create_error}")
            state = C.SCHEDULING_FAILURE
        else:
            master, worker = statefulsets.get("master"), statefulsets.get("worker")
            if master is None or worker is None:
                action_list.append(CreateResources(namespace, objects, ""))
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
    if state in st.CLUSTER_FAILURES:
        action_list.append(DeleteResources(namespace, refs))
        go(C.RESOURCE_RELEASED, "Cluster resources released")
    changed = status != (cr.get("status") or None)
    return Decision(
        status=status if changed else None,
        actions=tuple(action_list),
        transitions=tuple(transitions),
        requeue_after=requeue,
    )
