"""The spark.apache.org CustomResourceDefinitions, generated from the spec models.

Owns the conversion of a pydantic JSON schema into a Kubernetes *structural* schema (``$ref``
inlined, ``Optional`` → ``nullable``, free-form dicts such as pod templates →
``x-kubernetes-preserve-unknown-fields``, no defaults so stored objects stay as written) and the
CRDs: SparkApplication (``sparkapp``) and SparkCluster (``sparkcluster``), namespaced, with the
status subresource and printer columns (``v1`` stored; ``v1beta1`` and the seed's ``v1alpha1``
served with the same schema, no conversion webhook needed), and sparkplane's own
ScheduledSparkApplication (``sparkplane.io/v1alpha1``), and Kubeflow's SparkApplication and
ScheduledSparkApplication
(``sparkoperator.k8s.io/v1beta2``, Kubeflow's printer columns), and Kubeflow's SparkConnect
(``sparkoperator.k8s.io/v1alpha1``, its spec schema, status fields and printer columns). The
files under
``deploy/crds/`` are written from here and a test checks they do not drift.
Called by ``sparkplane operator install`` and the deploy generator. Pure.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from sparkplane.operator.core import scheduled_spec as sched
from sparkplane.operator.core.cluster_spec import SparkClusterSpec
from sparkplane.operator.core.scheduled_spec import (
    KubeflowScheduledSpec,
    ScheduledSparkApplicationSpec,
)
from sparkplane.spec.kubeflow import KubeflowSpec
from sparkplane.spec.kubeflow_connect import SparkConnectSpec
from sparkplane.spec.models import SparkApplicationSpec
from sparkplane.vocab import (
    APACHE_GROUP,
    APACHE_VERSION,
    KUBEFLOW_CONNECT_VERSION,
    KUBEFLOW_GROUP,
    KUBEFLOW_VERSION,
    SPARK_APPLICATION,
    SPARK_CLUSTER,
    SPARK_CONNECT,
)

GROUP = APACHE_GROUP
STORAGE_VERSION = APACHE_VERSION
VERSIONS = ("v1", "v1beta1", "v1alpha1")
Obj = dict[str, Any]
_DROP = ("title", "default", "examples")


def structural(schema: Obj, defs: Obj) -> Obj:
    """A structural OpenAPI v3 schema for one pydantic JSON-schema node."""
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return structural(merged, defs)
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        nullable = len(options) < len(schema["anyOf"])
        extra = {k: v for k, v in schema.items() if k != "anyOf"}
        out: Obj
        if len(options) == 1:
            out = structural({**options[0], **extra}, defs)
        else:
            types = {o.get("type") for o in options}
            if types == {"integer", "string"}:
                out = {"x-kubernetes-int-or-string": True}
            else:
                out = {"x-kubernetes-preserve-unknown-fields": True}
            if extra.get("description"):
                out["description"] = extra["description"]
        if nullable:
            out["nullable"] = True
        return out
    out = {k: v for k, v in schema.items() if k not in _DROP}
    kind = out.get("type")
    if kind == "object":
        props = out.pop("properties", None)
        extra = out.pop("additionalProperties", None)
        if props:
            out["properties"] = {k: structural(v, defs) for k, v in props.items()}
        elif isinstance(extra, dict) and extra:
            out["additionalProperties"] = structural(extra, defs)
        else:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if not out.get("required"):
            out.pop("required", None)
    elif kind == "array" and "items" in out:
        out["items"] = structural(out["items"], defs)
    elif "enum" in out and "type" not in out:
        out["type"] = "string"
    return out


def spec_schema(model: type[BaseModel], required: tuple[str, ...] = ()) -> Obj:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    out = structural(raw, raw.get("$defs", {}))
    out.pop("$defs", None)
    if required:
        out["required"] = sorted({*out.get("required", []), *required})
    return out


def _crd(
    kind: str,
    plural: str,
    short: str | None,
    spec: Obj,
    columns: list[Obj],
    *,
    group: str = GROUP,
    versions: tuple[str, ...] = VERSIONS,
    storage: str = STORAGE_VERSION,
) -> Obj:
    schema = {
        "type": "object",
        "description": _DESCRIPTIONS.get(
            group, f"{kind} of the Apache Spark Kubernetes Operator API (sparkplane)."
        ),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "required": ["spec"],
    }
    served = [
        {
            "name": version,
            "served": True,
            "storage": version == storage,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {"status": {}},
            "additionalPrinterColumns": columns,
        }
        for version in versions
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"app.kubernetes.io/part-of": "sparkplane"},
        },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                **({"shortNames": [short]} if short else {}),
            },
            "conversion": {"strategy": "None"},
            "versions": served,
        },
    }


_DESCRIPTIONS = {
    sched.GROUP: f"{sched.KIND} (sparkplane): SparkApplications on a cron schedule.",
    KUBEFLOW_GROUP: "SparkApplication of Kubeflow's Spark operator API, served by sparkplane's "
    "operator (docs/migrating-from-kubeflow.md).",
}
API_APPROVED = "api-approved.kubernetes.io"
KUBEFLOW_APPROVAL = "unapproved, Kubeflow's sparkoperator.k8s.io API served by sparkplane"
_STATE = ".status.currentState.currentStateSummary"
_AGE: Obj = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def application_crd() -> Obj:
    """The SparkApplication CRD."""
    columns: list[Obj] = [
        {"name": "Current State", "type": "string", "jsonPath": _STATE},
        {
            "name": "Attempt",
            "type": "integer",
            "jsonPath": ".status.currentAttemptSummary.attemptInfo.id",
            "priority": 1,
        },
        _AGE,
    ]
    spec = spec_schema(SparkApplicationSpec, required=("runtimeVersions",))
    return _crd(SPARK_APPLICATION, "sparkapplications", "sparkapp", spec, columns)


def cluster_crd() -> Obj:
    """The SparkCluster CRD."""
    columns: list[Obj] = [{"name": "Current State", "type": "string", "jsonPath": _STATE}, _AGE]
    return _crd(
        SPARK_CLUSTER, "sparkclusters", "sparkcluster", spec_schema(SparkClusterSpec), columns
    )


def scheduled_crd() -> Obj:
    """The ScheduledSparkApplication CRD (sparkplane's own group, see ``scheduled_spec``)."""
    columns: list[Obj] = [
        {"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule"},
        {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"},
        {"name": "Last Run", "type": "date", "jsonPath": ".status.lastRun"},
        {"name": "Last Run Name", "type": "string", "jsonPath": ".status.lastRunName"},
        _AGE,
    ]
    spec = spec_schema(ScheduledSparkApplicationSpec, required=("schedule", "template"))
    return _crd(
        sched.KIND,
        "scheduledsparkapplications",
        "scheduledsparkapp",
        spec,
        columns,
        group=sched.GROUP,
        versions=(sched.VERSION,),
        storage=sched.VERSION,
    )


def kubeflow_application_crd() -> Obj:
    """Kubeflow's ``sparkoperator.k8s.io/v1beta2`` SparkApplication, with its printer columns.

    The spec keeps unknown fields (``x-kubernetes-preserve-unknown-fields``) so that a field
    sparkplane does not know is refused by name in the status, never pruned silently.
    """
    columns: list[Obj] = [
        {"name": "Status", "type": "string", "jsonPath": ".status.applicationState.state"},
        {"name": "Attempts", "type": "string", "jsonPath": ".status.executionAttempts"},
        {"name": "Start", "type": "string", "jsonPath": ".status.lastSubmissionAttemptTime"},
        {"name": "Finish", "type": "string", "jsonPath": ".status.terminationTime"},
        _AGE,
    ]
    spec = spec_schema(KubeflowSpec, required=("driver", "executor", "sparkVersion"))
    spec["x-kubernetes-preserve-unknown-fields"] = True
    # Kubeflow's `sparkapp` short name stays Apache's: kubectl would resolve it to either
    return _kubeflow_crd(SPARK_APPLICATION, "sparkapplications", spec, columns)


def _kubeflow_crd(
    kind: str,
    plural: str,
    spec: Obj,
    columns: list[Obj],
    *,
    short: str | None = None,
    version: str = KUBEFLOW_VERSION,
) -> Obj:
    """A CRD of Kubeflow's ``sparkoperator.k8s.io`` group (``v1beta2`` unless told): no short
    name unless told (sparkplane's kinds keep theirs), and the approval annotation."""
    crd = _crd(
        kind,
        plural,
        short,
        spec,
        columns,
        group=KUBEFLOW_GROUP,
        versions=(version,),
        storage=version,
    )
    # the API server refuses a CRD of a *.k8s.io group without it (Kubeflow's carries a link)
    crd["metadata"]["annotations"] = {API_APPROVED: KUBEFLOW_APPROVAL}
    return crd


def kubeflow_scheduled_crd() -> Obj:
    """Kubeflow's ``sparkoperator.k8s.io/v1beta2`` ScheduledSparkApplication, with its printer
    columns; its template is a v1beta2 SparkApplication spec (unknown fields kept, as there)."""
    columns: list[Obj] = [
        {"name": "Schedule", "type": "string", "jsonPath": ".spec.schedule"},
        {"name": "TimeZone", "type": "string", "jsonPath": ".spec.timeZone"},
        {"name": "Suspend", "type": "boolean", "jsonPath": ".spec.suspend"},
        {"name": "Last Run", "type": "date", "jsonPath": ".status.lastRun"},
        {"name": "Last Run Name", "type": "string", "jsonPath": ".status.lastRunName"},
        _AGE,
    ]
    spec = spec_schema(KubeflowScheduledSpec, required=("schedule", "template"))
    spec["properties"]["template"]["x-kubernetes-preserve-unknown-fields"] = True
    # `scheduledsparkapp` stays sparkplane's: kubectl would resolve it to either
    return _kubeflow_crd(sched.KIND, "scheduledsparkapplications", spec, columns)


_TIME: Obj = {"type": "string", "format": "date-time"}
#: Kubeflow's SparkConnectStatus (``status.sparkplane``, the state machine's, is kept too).
CONNECT_STATUS: Obj = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "properties": {
        "state": {"type": "string"},
        "conditions": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {
                "type": "object",
                "required": ["lastTransitionTime", "message", "reason", "status", "type"],
                "properties": {
                    "type": {"type": "string"},
                    "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                    "reason": {"type": "string"},
                    "message": {"type": "string"},
                    "lastTransitionTime": _TIME,
                    "observedGeneration": {"type": "integer", "format": "int64"},
                },
            },
        },
        "server": {
            "type": "object",
            "properties": {
                "podName": {"type": "string"},
                "podIp": {"type": "string"},
                "serviceName": {"type": "string"},
            },
        },
        "executors": {"type": "object", "additionalProperties": {"type": "integer"}},
        "restartAttempts": {"type": "integer", "format": "int32"},
        "lastRestartTime": _TIME,
        "observedGeneration": {"type": "integer", "format": "int64"},
        "startTime": _TIME,
        "lastUpdateTime": _TIME,
    },
}


def kubeflow_connect_crd() -> Obj:
    """Kubeflow's ``sparkoperator.k8s.io/v1alpha1`` SparkConnect: its spec (pod templates and
    the server's Service kept whole), its status fields and printer columns, its short name."""
    columns: list[Obj] = [
        _AGE,
        {"name": "Status", "type": "string", "jsonPath": ".status.state"},
        {"name": "PodName", "type": "string", "jsonPath": ".status.server.podName"},
    ]
    spec = spec_schema(SparkConnectSpec, required=("executor", "server", "sparkVersion"))
    crd = _kubeflow_crd(
        SPARK_CONNECT,
        "sparkconnects",
        spec,
        columns,
        short="sparkconn",
        version=KUBEFLOW_CONNECT_VERSION,
    )
    version = crd["spec"]["versions"][0]
    version["schema"]["openAPIV3Schema"]["properties"]["status"] = CONNECT_STATUS
    version["schema"]["openAPIV3Schema"]["description"] = (
        "SparkConnect (a Spark Connect server) of Kubeflow's Spark operator API, served by "
        "sparkplane's operator (docs/sessions.md)."
    )
    return crd


def crds() -> list[Obj]:
    return [
        application_crd(),
        cluster_crd(),
        scheduled_crd(),
        kubeflow_application_crd(),
        kubeflow_scheduled_crd(),
        kubeflow_connect_crd(),
    ]
