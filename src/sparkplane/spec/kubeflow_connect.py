"""Kubeflow's ``sparkoperator.k8s.io/v1alpha1`` SparkConnect spec, read and mapped onto Apache's.

Owns :class:`SparkConnectSpec` (the fields of Kubeflow's ``api/v1alpha1/sparkconnect_types.go``,
camelCase, unknown fields rejected with a suggestion), the names Kubeflow gives what it creates
(the server pod and its Service are both ``<name>-server``; label
``sparkoperator.k8s.io/connect-name=<name>`` on the server and its executors) and
:func:`to_apache`, which turns a SparkConnect into the ``spark.apache.org`` SparkApplication the
operator's one state machine runs: Spark's own Connect server
(:mod:`sparkplane.spec.connect`: main class, the image's jar, gRPC port 15002) submitted with
the SparkConnect's ``sparkConf``, ``hadoopConf``, ``deps`` and ``dynamicAllocation``
(:func:`sparkplane.spec.kubeflow.to_apache` maps those exactly as for a v1beta2
SparkApplication), ``server`` → the driver (``cores``, ``memory``, ``template``),
``executor`` → the executors (``instances`` may be 0 here), ``restartPolicy`` →
``applicationTolerations.restartConfig``, and the server's Service (port 15002
``spark-connect-server`` with ``appProtocol: grpc``, and the UI's 4040, selecting the current
server pod) as a ``driverServiceIngressList`` entry: the same render steps as every driver.
The server container gets Kubeflow's TCP readiness probe on 15002 (unless its template sets
one), so the pod is Ready, and the SparkConnect ``Ready``, once the server accepts clients.
Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

import pydantic
from pydantic import Field

from sparkplane.errors import Problem, ValidationError
from sparkplane.spec import kubeflow
from sparkplane.spec.connect import CONNECT_CLASS, CONNECT_PORT, CONNECT_PORT_CONF, connect_jar
from sparkplane.spec.manifest import problems_from_pydantic
from sparkplane.spec.tolerations import SpecModel
from sparkplane.vocab import DRIVER_CONTAINER, DRIVER_ROLE, KUBEFLOW_GROUP, ROLE_LABEL

Obj = dict[str, Any]
#: The label Kubeflow puts on a SparkConnect's server pod, its executors and its Service.
CONNECT_NAME_LABEL = f"{KUBEFLOW_GROUP}/connect-name"
UI_PORT = 4040
#: Kubeflow's readiness probe of the server container (its reconciler, facts only).
READINESS_PROBE: Obj = {
    "tcpSocket": {"port": CONNECT_PORT},
    "periodSeconds": 10,
    "timeoutSeconds": 1,
    "failureThreshold": 3,
}


class ConnectPodSpec(SpecModel):
    """``SparkPodSpec`` of v1alpha1: what ``server`` and ``executor`` share."""

    cores: int | None = Field(default=None, ge=1)
    memory: str | None = None
    template: dict[str, Any] | None = None


class ConnectServerSpec(ConnectPodSpec):
    """``server``: the pod fields, the Service that exposes it, its service account."""

    service: dict[str, Any] | None = None
    service_account: str | None = None


class ConnectExecutorSpec(ConnectPodSpec):
    """``executor``: the pod fields plus the executor count (0 allowed)."""

    instances: int | None = Field(default=None, ge=0)


class ConnectRestartPolicy(SpecModel):
    """``restartPolicy``: when the operator starts the server again."""

    restart_policy_type: Literal["Never", "Always", "OnFailure"] | None = None
    on_failure_retries: int | None = Field(default=None, ge=0)
    on_failure_retry_interval: int | None = Field(default=None, ge=1)


class SparkConnectSpec(SpecModel):
    """``SparkConnect.spec`` of ``sparkoperator.k8s.io/v1alpha1``."""

    spark_version: str
    image: str | None = None
    hadoop_conf: dict[str, str] = Field(default_factory=dict)
    spark_conf: dict[str, str] = Field(default_factory=dict)
    server: ConnectServerSpec
    executor: ConnectExecutorSpec
    dynamic_allocation: kubeflow.KubeflowDynamicAllocation | None = None
    deps: kubeflow.KubeflowDeps = Field(default_factory=kubeflow.KubeflowDeps)
    restart_policy: ConnectRestartPolicy = Field(default_factory=ConnectRestartPolicy)


def server_pod_name(name: str) -> str:
    """Kubeflow's name of the server pod of SparkConnect ``name``."""
    return f"{name}-server"


def service_name(cr: Mapping[str, Any]) -> str:
    """The server Service's name: ``server.service.metadata.name``, else ``<name>-server``."""
    spec = cr.get("spec") or {}
    given = (((spec.get("server") or {}).get("service") or {}).get("metadata") or {}).get("name")
    return str(given) if given else server_pod_name(str(cr["metadata"]["name"]))


def parse(cr: Mapping[str, Any]) -> SparkConnectSpec:
    """The spec of SparkConnect ``cr`` (ValidationError naming every bad field)."""
    name = (cr.get("metadata") or {}).get("name")
    try:
        return SparkConnectSpec.model_validate(cr.get("spec") or {})
    except pydantic.ValidationError as exc:
        found = [
            Problem(f"spec.{p.path}" if p.path else "spec", p.message, p.hint)
            for p in problems_from_pydantic(exc)
        ]
        raise ValidationError(found, subject=f"SparkConnect {name!r}") from exc


def _with_probe(template: Obj | None) -> Obj:
    """The server's pod template with Kubeflow's readiness probe on its Spark container."""
    out = copy.deepcopy(template or {})
    containers = out.setdefault("spec", {}).setdefault("containers", [])
    spark = next((c for c in containers if c.get("name") == DRIVER_CONTAINER), None)
    if spark is None:
        spark = {"name": DRIVER_CONTAINER}
        containers.insert(0, spark)
    spark.setdefault("readinessProbe", copy.deepcopy(READINESS_PROBE))
    return out


def _restart(policy: ConnectRestartPolicy) -> Obj:
    out: Obj = {"type": policy.restart_policy_type or "Never"}
    if policy.on_failure_retries is not None:
        out["onFailureRetries"] = policy.on_failure_retries
    if policy.on_failure_retry_interval is not None:
        out["onFailureRetryInterval"] = policy.on_failure_retry_interval
    return out


def as_v1beta2(cr: Mapping[str, Any], spec: SparkConnectSpec) -> Obj:
    """The v1beta2 SparkApplication that runs SparkConnect ``cr``'s server (one mapping of
    ``sparkConf``, ``hadoopConf``, ``deps``, ``dynamicAllocation`` and roles for both kinds)."""
    server: Obj = {"template": _with_probe(spec.server.template)}
    executor: Obj = {}
    for role, out in ((spec.server, server), (spec.executor, executor)):
        if role.cores is not None:
            out["cores"] = role.cores
        if role.memory is not None:
            out["memory"] = role.memory
    if spec.executor.template:
        executor["template"] = copy.deepcopy(spec.executor.template)
    if spec.server.service_account:
        server["serviceAccount"] = spec.server.service_account
    body: Obj = {
        "type": "Scala",
        "sparkVersion": spec.spark_version,
        "mainClass": CONNECT_CLASS,
        "mainApplicationFile": connect_jar(spec.spark_version),
        "sparkConf": dict(spec.spark_conf),
        "hadoopConf": dict(spec.hadoop_conf),
        "deps": spec.deps.model_dump(by_alias=True),
        "restartPolicy": _restart(spec.restart_policy),
        "driver": server,
        "executor": executor,
    }
    if spec.image:
        body["image"] = spec.image
    if spec.dynamic_allocation is not None:
        body["dynamicAllocation"] = spec.dynamic_allocation.model_dump(
            by_alias=True, exclude_none=True
        )
    return {"metadata": copy.deepcopy(dict(cr.get("metadata") or {})), "spec": body}


def _service(cr: Mapping[str, Any], spec: SparkConnectSpec) -> Obj:
    """The ``driverServiceIngressList`` entry of the server's Service (Kubeflow's ports and
    labels; a user Service's metadata and spec kept, its ports and selector filled in)."""
    name = str(cr["metadata"]["name"])
    given = copy.deepcopy(spec.server.service or {})
    meta: Obj = dict(given.get("metadata") or {})
    meta["name"] = service_name(cr)
    meta.pop("namespace", None)  # the SparkConnect's, always (as Kubeflow)
    meta["labels"] = {**(meta.get("labels") or {}), CONNECT_NAME_LABEL: name}
    svc: Obj = dict(given.get("spec") or {})
    svc.setdefault(
        "ports",
        [
            {
                "name": "spark-connect-server",
                "port": CONNECT_PORT,
                "targetPort": CONNECT_PORT,
                "protocol": "TCP",
                "appProtocol": "grpc",
            },
            {
                "name": "web-ui",
                "port": UI_PORT,
                "targetPort": UI_PORT,
                "protocol": "TCP",
                "appProtocol": "http",
            },
        ],
    )
    # every attempt's server pod carries these; the current one is the only one Ready
    svc.setdefault("selector", {CONNECT_NAME_LABEL: name, ROLE_LABEL: DRIVER_ROLE})
    return {"serviceMetadata": meta, "serviceSpec": svc, "ingressMetadata": {}}


def to_apache(cr: Mapping[str, Any]) -> Obj:
    """The ``spark.apache.org`` SparkApplication that runs SparkConnect ``cr``'s server (its
    metadata kept, uid included; no status). Raises ValidationError naming the fields."""
    spec = parse(cr)
    name = str(cr["metadata"]["name"])
    try:
        apache = kubeflow.to_apache(as_v1beta2(cr, spec))
    except ValidationError as exc:  # named as the SparkConnect's fields
        problems = [
            Problem(p.path.replace("spec.driver", "spec.server"), p.message, p.hint)
            for p in exc.problems
        ]
        raise ValidationError(problems, subject=f"SparkConnect {name!r}") from exc
    body = apache["spec"]
    conf = body["sparkConf"]
    conf.setdefault(CONNECT_PORT_CONF, str(CONNECT_PORT))
    if spec.executor.instances is not None:  # 0 too (a v1beta2 executor needs one)
        conf["spark.executor.instances"] = str(spec.executor.instances)
    labels = {CONNECT_NAME_LABEL: name, kubeflow.LAUNCHED_LABEL: "true"}
    for role in ("driver", "executor"):
        kept = {k: v for k, v in body[role]["labels"].items() if k != kubeflow.APP_NAME_LABEL}
        body[role]["labels"] = kept | labels
    body["driverServiceIngressList"] = [_service(cr, spec)]
    return apache
