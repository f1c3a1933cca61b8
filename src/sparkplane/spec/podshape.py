"""The shape of the raw Kubernetes objects a spec embeds: pod templates, StatefulSet, Service.

A CRD that keeps these fields open (``x-kubernetes-preserve-unknown-fields``) lets
``containers: "x"`` through; the builders then merge into a string and fail somewhere deep.
These models check, before anything is built, that every field the builders read or merge has
the type Kubernetes gives it (a list of objects, a map of strings, an object...), and name the
field when it does not. Unknown fields pass (Kubernetes judges them when the object is
created). Used as validators by the spec models (``driverSpec``/``executorSpec``
``podTemplateSpec``, a SparkCluster's ``masterSpec``/``workerSpec``). Pure.
"""

from __future__ import annotations

from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

Objs = list[dict[str, Any]] | None
Obj = dict[str, Any] | None


class _Open(BaseModel):
    """Known fields typed, unknown fields kept (camelCase on the wire)."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


class ObjectMeta(_Open):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: Objs = None
    finalizers: list[str] | None = None


class Container(_Open):
    name: str | None = None
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: Objs = None
    env_from: Objs = None
    ports: Objs = None
    volume_mounts: Objs = None
    volume_devices: Objs = None
    resources: Obj = None
    security_context: Obj = None
    readiness_probe: Obj = None
    liveness_probe: Obj = None
    startup_probe: Obj = None
    lifecycle: Obj = None


class DnsConfig(_Open):
    nameservers: list[str] | None = None
    searches: list[str] | None = None
    options: Objs = None


class PodSpec(_Open):
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    ephemeral_containers: list[Container] | None = None
    volumes: Objs = None
    tolerations: Objs = None
    image_pull_secrets: Objs = None
    host_aliases: Objs = None
    topology_spread_constraints: Objs = None
    readiness_gates: Objs = None
    resource_claims: Objs = None
    node_selector: dict[str, str] | None = None
    affinity: Obj = None
    security_context: Obj = None
    dns_config: DnsConfig | None = None


class PodTemplate(_Open):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


class LabelSelector(_Open):
    match_labels: dict[str, str] | None = None
    match_expressions: Objs = None


class StatefulSetSpec(_Open):
    selector: LabelSelector | None = None
    template: PodTemplate | None = None
    volume_claim_templates: Objs = None


class ServiceSpec(_Open):
    ports: Objs = None
    selector: dict[str, str] | None = None


def _where(error: Any) -> str:
    return ".".join(str(part) for part in error["loc"] if not str(part).startswith("function"))


def check(model: type[BaseModel], value: Any) -> Any:
    """``value`` unchanged if it has ``model``'s shape, else ValueError naming each field."""
    if value is None:
        return value
    try:
        model.model_validate(value)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{_where(e) or '(the object)'}: {_expected(e)}" for e in exc.errors()[:5]
        )
        raise ValueError(f"not a Kubernetes {_NAMES[model]}: {problems}") from None
    return value


def _expected(error: Any) -> str:
    kind = str(error.get("type", ""))
    wanted = {
        "list_type": "must be a list",
        "dict_type": "must be an object",
        "model_type": "must be an object",
        "model_attributes_type": "must be an object",
        "string_type": "must be a string",
    }.get(kind)
    given = type(error.get("input")).__name__
    return f"{wanted} (got {given})" if wanted else str(error.get("msg"))


_NAMES: dict[type[BaseModel], str] = {
    PodTemplate: "PodTemplateSpec",
    StatefulSetSpec: "StatefulSetSpec",
    ServiceSpec: "ServiceSpec",
    ObjectMeta: "ObjectMeta",
}
