"""The objects of a SparkCluster, built the way Apache's operator builds them (reference §9.7).

Owns the one precedence rule for clusters (docs/operator.md, "Precedence"): the user's
``masterSpec``/``workerSpec`` objects are the base and the operator adds to them, overriding
only the fields Apache's operator sets unconditionally:

* **conf**: ``spark.shuffle.service.enabled=true`` unless set, then every ``sparkConf`` entry
  (``{{SPARK_VERSION}}`` replaced in the image), then ``spark.kubernetes.namespace`` = the CR's
  namespace and ``spark.authenticate=true`` (forced; ``spark.authenticate.secret`` is dropped:
  the secret comes from the cluster's Secret, :mod:`sparkplane.operator.core.standalone_auth`).
  All of it reaches the master as ``SPARK_MASTER_OPTS`` and the workers as
  ``SPARK_WORKER_OPTS`` (``-Dkey="value"``), so ``spark.ui.filters``, ``spark.master.rest.*``
  and the rest take effect in the daemons. ``spark.kubernetes.scheduler.name`` becomes the
  pods' ``schedulerName`` (default ``default-scheduler``).
* **StatefulSet**: name, namespace, ``replicas`` (1 / ``initWorkers``), ``podManagementPolicy:
  Parallel``, ``serviceName``; labels and selector labels are added to the user's.
* **pod**: ``schedulerName``, ``terminationGracePeriodSeconds: 0``, the workers' DNS search
  domain; other pod fields (priority class, security context, sidecars...) stay the user's.
* **container** (the one named ``master``/``worker``, appended if the template has none):
  ``image``, ``command``/``args`` (``spark-class`` running the Master or Worker in the
  foreground: the daemon is the container's process, its log the pod's log; no ``sbin``
  scripts needed), ``SPARK_MASTER_OPTS``/``SPARK_WORKER_OPTS``, ``_SPARK_AUTH_SECRET`` (from
  the cluster's Secret) and the Spark ports replace those of the same name;
  ``SPARK_MASTER_HOST`` (the pod IP) and ``SPARK_WORKER_CORES`` /
  ``SPARK_WORKER_MEMORY`` (the container's limits, else the node's) and a TCP readiness
  probe on the web UI's port (8080 / 8081: bound once the daemon is up; a probe of the
  master's RPC port 7077 would log a "got disassociated" line every period, and an HTTP probe
  would meet the UI's filters) are set unless the template sets them;
  resources, mounts and the rest are merged in untouched. Every container without
  ``allowPrivilegeEscalation`` gets ``false``.

Called by :mod:`sparkplane.operator.core.cluster`. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from sparkplane.operator.core import standalone_auth as auth
from sparkplane.operator.core.cluster_spec import MasterSpec, SparkClusterSpec
from sparkplane.operator.core.naming import CLUSTER_NAME_LABEL, OPERATOR_NAME_LABEL
from sparkplane.spec.conf import SPARK_VERSION, versioned_image, with_spark_version
from sparkplane.vocab import ROLE_LABEL, label_value

Obj = dict[str, Any]
IMAGE_KEY = "spark.kubernetes.container.image"
SCHEDULER_KEY = "spark.kubernetes.scheduler.name"
DEFAULT_IMAGE = f"apache/spark:{SPARK_VERSION}"
PORTS = {"master": (("web", 8080), ("spark", 7077), ("rest", 6066)), "worker": (("web", 8081),)}
OPTS_ENV = {"master": "SPARK_MASTER_OPTS", "worker": "SPARK_WORKER_OPTS"}


def cluster_conf(spec: SparkClusterSpec, namespace: str) -> dict[str, str]:
    """The effective SparkConf of the cluster's daemons."""
    version = spec.runtime_versions.spark_version
    conf = {"spark.shuffle.service.enabled": "true"}
    conf.update(with_spark_version(spec.spark_conf, version))
    conf["spark.kubernetes.namespace"] = namespace
    conf.pop(auth.SECRET_CONF, None)  # never in the pod spec: from the Secret
    conf[auth.AUTH_CONF] = "true"
    return conf


def java_options(conf: Mapping[str, str]) -> str:
    """``-Dkey="value"`` for each entry, quoted as Spark's launcher parses ``SPARK_*_OPTS``."""

    def quote(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    return " ".join(f'-D{quote(k)}="{quote(v)}"' for k, v in conf.items())


def _merge_named(items: list[Obj] | None, ours: list[Obj], *keys: str) -> list[Obj]:
    """The user's entries minus those clashing with ours on any of ``keys``, then ours."""
    taken = {(k, o.get(k)) for o in ours for k in keys if o.get(k) is not None}
    kept = [i for i in items or [] if not any((k, i.get(k)) in taken for k in keys)]
    return [*kept, *ours]


DAEMON = {
    "master": "org.apache.spark.deploy.master.Master",
    "worker": "org.apache.spark.deploy.worker.Worker",
}


def _container(base: Obj, role: str, image: str, url: str, opts: str, cluster: str) -> Obj:
    """The Spark daemon's container: ``spark-class <Master|Worker>`` in the foreground."""
    out = copy.deepcopy(base)
    out["name"] = role
    out["image"] = image
    out["command"] = ["/opt/spark/bin/spark-class", DAEMON[role]]
    web = dict(PORTS[role])["web"]
    spark = ["--port", "7077"] if role == "master" else [url]
    out["args"] = ["--webui-port", str(web), *spark]
    defaults: list[Obj] = (
        [{"name": "SPARK_MASTER_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        if role == "master"
        else [
            {"name": f"SPARK_WORKER_{key}", "valueFrom": {"resourceFieldRef": {
                "containerName": "worker", "resource": resource, "divisor": "1"}}}
            for key, resource in (("CORES", "limits.cpu"), ("MEMORY", "limits.memory"))
        ]
    )  # fmt: skip
    given = {e.get("name") for e in out.get("env") or []}
    env: list[Obj] = [d for d in defaults if d["name"] not in given]
    env.append({"name": OPTS_ENV[role], "value": opts})
    env.append(auth.secret_env(cluster))
    out["env"] = _merge_named(out.get("env"), env, "name")
    ports = [{"name": n, "containerPort": p} for n, p in PORTS[role]]
    out["ports"] = _merge_named(out.get("ports"), ports, "name", "containerPort")
    # Ready = the daemon's web UI accepts connections (see the module docstring)
    out.setdefault("readinessProbe", {"tcpSocket": {"port": "web"}, "periodSeconds": 5})
    return out


def _no_escalation(containers: list[Obj]) -> None:
    for container in containers:
        context = container.setdefault("securityContext", {})
        context.setdefault("allowPrivilegeEscalation", False)


def _pod_template(
    part: MasterSpec,
    role: str,
    labels: Obj,
    conf: Mapping[str, str],
    image: str,
    url: str,
    dns: str,
    cluster: str,
) -> Obj:
    template = copy.deepcopy((part.stateful_set_spec or {}).get("template") or {})
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    pod = template.setdefault("spec", {})
    pod["schedulerName"] = conf.get(SCHEDULER_KEY) or "default-scheduler"
    pod["terminationGracePeriodSeconds"] = 0
    if role == "worker":
        dns_config = pod.setdefault("dnsConfig", {})
        searches = list(dns_config.get("searches") or [])
        dns_config["searches"] = [*searches, *([dns] if dns not in searches else [])]
    containers = list(pod.get("containers") or [])
    index = next((i for i, c in enumerate(containers) if c.get("name") == role), None)
    if index is None:
        containers.append({})
        index = len(containers) - 1
    opts = java_options(conf)
    containers[index] = _container(containers[index], role, image, url, opts, cluster)
    pod["containers"] = containers
    _no_escalation(containers)
    _no_escalation(list(pod.get("initContainers") or []))
    return template


def role_objects(
    spec: SparkClusterSpec, name: str, namespace: str, role: str, base_labels: Obj
) -> tuple[Obj, Obj]:
    """The headless Service and the StatefulSet of ``role`` (``master`` or ``worker``)."""
    part: MasterSpec = spec.master_spec if role == "master" else spec.worker_spec
    conf = cluster_conf(spec, namespace)
    version = spec.runtime_versions.spark_version
    image = conf.get(IMAGE_KEY) or versioned_image(DEFAULT_IMAGE, version)
    labels = {**base_labels, ROLE_LABEL: role}
    selector = {CLUSTER_NAME_LABEL: base_labels[CLUSTER_NAME_LABEL], ROLE_LABEL: role}
    service_spec = copy.deepcopy(part.service_spec or {})
    service_spec["clusterIP"] = "None"
    service_spec["selector"] = {**(service_spec.get("selector") or {}), **selector}
    ports = [{"name": n, "port": p, "targetPort": n} for n, p in PORTS[role]]
    service_spec["ports"] = _merge_named(service_spec.get("ports"), ports, "name", "port")
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(part.service_metadata, f"{name}-{role}-svc", labels),
        "spec": service_spec,
    }
    sts_spec = copy.deepcopy(part.stateful_set_spec or {})
    sts_spec["replicas"] = (
        1 if role == "master" else spec.cluster_tolerations.instance_config.init_workers
    )
    sts_spec["podManagementPolicy"] = "Parallel"
    sts_spec["serviceName"] = f"{name}-{role}-svc"
    match = dict((sts_spec.get("selector") or {}).get("matchLabels") or {})
    sts_spec["selector"] = {
        **(sts_spec.get("selector") or {}),
        "matchLabels": {**match, **selector},
    }
    dns = f"{name}-worker-svc.{namespace}.svc.cluster.local"
    url = master_url(name, namespace)
    sts_spec["template"] = _pod_template(part, role, labels, conf, image, url, dns, name)
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _metadata(part.stateful_set_metadata, f"{name}-{role}", labels),
        "spec": sts_spec,
    }
    return service, statefulset


def _metadata(user: Mapping[str, Any] | None, name: str, labels: Obj) -> Obj:
    meta = copy.deepcopy(dict(user or {}))
    meta["name"] = name
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    return meta


def master_url(name: str, namespace: str) -> str:
    """The standalone master's URL, for workers and for apps submitted to the cluster."""
    return f"spark://{name}-master-svc.{namespace}.svc:7077"


def autoscaler(spec: SparkClusterSpec, name: str, labels: Obj) -> Obj | None:
    """The workers' autoscaling/v2 HorizontalPodAutoscaler, when ``minWorkers < maxWorkers``.

    ``workerSpec.horizontalPodAutoscalerSpec`` is the base (else Apache's default: CPU of the
    ``worker`` container at 30%, one pod per minute up, one per ten minutes down); the target
    and the bounds are the operator's.
    """
    bounds = spec.cluster_tolerations.instance_config
    if bounds.min_workers >= bounds.max_workers:
        return None
    hpa_spec = copy.deepcopy(spec.worker_spec.horizontal_pod_autoscaler_spec or _DEFAULT_HPA)
    hpa_spec["scaleTargetRef"] = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": f"{name}-worker",
    }
    hpa_spec["minReplicas"] = bounds.min_workers
    hpa_spec["maxReplicas"] = bounds.max_workers
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"{name}-worker-hpa", "labels": {**labels, ROLE_LABEL: "worker"}},
        "spec": hpa_spec,
    }


def disruption_budget(spec: SparkClusterSpec, name: str, labels: Obj) -> Obj | None:
    """A PodDisruptionBudget keeping one worker up, when ``minWorkers >= 1`` (as Apache)."""
    if spec.cluster_tolerations.instance_config.min_workers < 1:
        return None
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{name}-worker-pdb", "labels": {**labels, ROLE_LABEL: "worker"}},
        "spec": {
            "minAvailable": 1,
            "selector": {
                "matchLabels": {
                    CLUSTER_NAME_LABEL: labels[CLUSTER_NAME_LABEL],
                    ROLE_LABEL: "worker",
                }
            },
        },
    }


_DEFAULT_HPA: Obj = {
    "metrics": [
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "worker",
                "target": {"type": "Utilization", "averageUtilization": 30},
            },
        }
    ],
    "behavior": {
        "scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
        "scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]},
    },
}


def base_labels(name: str, operator_name: str, version: str) -> Obj:
    return {
        OPERATOR_NAME_LABEL: operator_name,
        CLUSTER_NAME_LABEL: label_value(name),
        "spark-version": label_value(version),
    }
