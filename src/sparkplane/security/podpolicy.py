"""The tenant pod policy: what a pod in a tenant namespace may ask for, as data and as a check.

Owns the catalogue (:data:`CHECKS`: each rule, the namespace label that opts out of it, and the
message naming the field), the namespace keys a platform admin reads and changes
(:data:`TENANT_LABEL`, :data:`ALLOW_PREFIX`, :data:`SERVICE_ACCOUNTS`...), and
:func:`check_pod`, the same rules in Python. The API server enforces them with the
ValidatingAdmissionPolicy rendered by :mod:`sparkplane.security.admission` (also on the pods a
Spark driver creates); the operator runs :func:`check_pod` on every pod (and StatefulSet pod
template) it is about to create, so it refuses a SparkApplication or SparkCluster before
creating anything (issue 26: the operator must not be a confused deputy).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from sparkplane.errors import Problem

"""Namespace label (value ``enabled``) that the admission policy bindings select."""
TENANT_ENABLED = "enabled"
POLICY_DOMAIN = "policy.sparkplane.io"
ALLOW_PREFIX = f"{POLICY_DOMAIN}/allow-"
"""Namespace label prefix of the opt-outs: ``policy.sparkplane.io/allow-<check>: "true"``."""
SERVICE_ACCOUNTS = f"{POLICY_DOMAIN}/service-accounts"
"""Namespace annotation: the service accounts pods may run as (comma-separated)."""
DRIVER_SERVICE_ACCOUNTS = f"{POLICY_DOMAIN}/driver-service-accounts"
"""Namespace annotation: the identities held to "a driver creates only its own executors"."""
SECRETS = f"{POLICY_DOMAIN}/secrets"
"""Namespace annotation: the Secrets pods may reference (names; ``prefix*`` for a prefix)."""
EXECUTOR_VOLUMES = f"{POLICY_DOMAIN}/executor-volumes"
"""Namespace annotation: ConfigMaps and PVCs a driver's executors may mount besides their own."""
DRIVER_STATEFULSETS = "driver-statefulsets"
"""Tenant opt-in (namespace label ``policy.sparkplane.io/allow-driver-statefulsets=true``): a
driver may create executor StatefulSets (``spark.kubernetes.allocation.pods.allocator=
statefulset``); their pods are created by the StatefulSet controller, so they meet only the
namespace-wide checks, not the driver ones."""

SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")
#: sparkplane's own identities: a pod must never run as one of them (their tokens could then be
#: read by whoever wrote the pod), whatever the namespace designates.
SPARKPLANE_IDENTITIES = (
    "sparkplane-client",
    "sparkplane-operator",
    "sparkplane-staging",
    "sparkplane-gc",
)
EXECUTOR_CONFIGMAP_PREFIX = "spark-exec-"  # Spark's executor ConfigMap spark-exec-<id>-conf-map
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"  # in every projected service-account token volume
#: userInfo.extra keys the API server adds for a token bound to a pod.
POD_UID_EXTRA = "authentication.kubernetes.io/pod-uid"
POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name"


@dataclass(frozen=True)
class Check:
    """One default rule of the pod policy; ``name`` is also its opt-out label's suffix."""

    name: str
    field: str
    message: str

    @property
    def opt_out(self) -> str:
        """The namespace label that turns this check off (value ``"true"``)."""
        return f"{ALLOW_PREFIX}{self.name}"

    def problem(self, field: str | None = None) -> Problem:
        hint = f"or a platform admin labels the namespace {self.opt_out}=true"
        return Problem(field or self.field, self.message, hint)


PRIVILEGED = Check(
    "privileged",
    "spec.containers[*].securityContext.privileged",
    "privileged containers are refused by the tenant pod policy",
)
HOST_NAMESPACES = Check(
    "host-namespaces",
    "spec.hostNetwork/hostPID/hostIPC",
    "the host's network, PID and IPC namespaces are refused by the tenant pod policy",
)
HOST_PATH = Check(
    "host-path", "spec.volumes[*].hostPath", "hostPath volumes are refused by the tenant pod policy"
)
CAPABILITIES = Check(
    "capabilities",
    "spec.containers[*].securityContext.capabilities.add",
    "added capabilities are refused by the tenant pod policy",
)
PRIVILEGE_ESCALATION = Check(
    "privilege-escalation",
    "spec.containers[*].securityContext.allowPrivilegeEscalation",
    "allowPrivilegeEscalation: true is refused by the tenant pod policy",
)
SYSTEM_PRIORITY = Check(
    "system-priority",
    "spec.priorityClassName",
    f"the system priority classes ({', '.join(SYSTEM_PRIORITY_CLASSES)}) are refused by the "
    "tenant pod policy",
)
CHECKS: tuple[Check, ...] = (
    PRIVILEGED,
    HOST_NAMESPACES,
    HOST_PATH,
    CAPABILITIES,
    PRIVILEGE_ESCALATION,
    SYSTEM_PRIORITY,
)
CHECK_NAMES = tuple(c.name for c in CHECKS)

Obj = Mapping[str, Any]


def split_names(value: str | None) -> tuple[str, ...]:
    """A comma-separated annotation value as names (blanks dropped)."""
    return tuple(n.strip() for n in (value or "").split(",") if n.strip())


def name_allowed(name: str, allowed: Iterable[str]) -> bool:
    """``name`` is listed, or starts with the prefix of a listed ``prefix*``."""
    return any(name == a or (a.endswith("*") and name.startswith(a[:-1])) for a in allowed)


def _containers(spec: Obj) -> list[tuple[str, Obj]]:
    out: list[tuple[str, Obj]] = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        if isinstance(items, list):
            out += [(f"spec.{key}[{i}]", c) for i, c in enumerate(items) if isinstance(c, Mapping)]
    return out


def _security(container: Obj) -> Obj:
    sc = container.get("securityContext")
    return sc if isinstance(sc, Mapping) else {}


def _volumes(spec: Obj) -> list[tuple[str, Obj]]:
    items = spec.get("volumes")
    if not isinstance(items, list):
        return []
    return [(f"spec.volumes[{i}]", v) for i, v in enumerate(items) if isinstance(v, Mapping)]


def check_pod(
    spec: Obj,
    *,
    allow: Iterable[str] = (),
    service_accounts: Iterable[str] | None = None,
    where: str = "",
) -> list[Problem]:
    """Every rule of the pod policy ``spec`` (a PodSpec) breaks, each naming its field.

    ``allow``: the names of the checks opted out of (:data:`CHECK_NAMES`). ``service_accounts``:
    the accounts the namespace designates (None: not known here, so only sparkplane's own
    identities are refused). ``where`` prefixes every field path (e.g. the object's name).
    """
    allowed = set(allow)
    found: list[Problem] = []

    def add(check: Check, field: str) -> None:
        if check.name not in allowed:
            found.append(check.problem(f"{where}{field}"))

    for path, c in _containers(spec):
        sc = _security(c)
        if sc.get("privileged") is True:
            add(PRIVILEGED, f"{path}.securityContext.privileged")
        if sc.get("allowPrivilegeEscalation") is True:
            add(PRIVILEGE_ESCALATION, f"{path}.securityContext.allowPrivilegeEscalation")
        caps = sc.get("capabilities")
        if isinstance(caps, Mapping) and caps.get("add"):
            add(CAPABILITIES, f"{path}.securityContext.capabilities.add")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key) is True:
            add(HOST_NAMESPACES, f"spec.{key}")
    for path, v in _volumes(spec):
        if "hostPath" in v:
            add(HOST_PATH, f"{path}.hostPath")
    if spec.get("priorityClassName") in SYSTEM_PRIORITY_CLASSES:
        add(SYSTEM_PRIORITY, "spec.priorityClassName")
    account = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
    if account in SPARKPLANE_IDENTITIES:
        found.append(
            Problem(
                f"{where}spec.serviceAccountName",
                f"a pod may not run as sparkplane's own identity {account!r}",
                "run Spark as the namespace's driver service account (sparkplane tenant setup)",
            )
        )
    elif service_accounts is not None and account not in set(service_accounts):
        found.append(
            Problem(
                f"{where}spec.serviceAccountName",
                f"service account {account!r} is not one the namespace designates for pods",
                f"use one of {sorted(set(service_accounts))} or add it to the namespace "
                f"annotation {SERVICE_ACCOUNTS}",
            )
        )
    return found


def pod_specs(obj: Obj) -> list[tuple[str, Obj]]:
    """The PodSpecs an object would run: a Pod's spec, a workload's ``spec.template.spec``."""
    kind = obj.get("kind")
    name = str((obj.get("metadata") or {}).get("name") or "")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []
    if kind == "Pod":
        return [(f"Pod {name}: ", spec)]
    template = spec.get("template")
    if isinstance(template, Mapping) and isinstance(template.get("spec"), Mapping):
        return [(f"{kind} {name}: template.", template["spec"])]
    return []


EXECUTOR_TEMPLATE_KEY = "podspec-configmap-key"  # Spark's executor pod template ConfigMap key


def executor_template(obj: Obj) -> Obj | None:
    """The executor pod template a driver's ``*-podspec-conf-map`` ConfigMap carries, if any."""
    if obj.get("kind") != "ConfigMap":
        return None
    text = (obj.get("data") or {}).get(EXECUTOR_TEMPLATE_KEY)
    if not isinstance(text, str):
        return None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return loaded if isinstance(loaded, Mapping) else None


def check_objects(objects: Iterable[Obj], *, allow: Iterable[str] = ()) -> list[Problem]:
    """:func:`check_pod` over every pod an object list would run, the executors of a driver's
    pod template included (the operator's check)."""
    allowed = tuple(allow)
    found: list[Problem] = []
    for obj in objects:
        for where, spec in pod_specs(obj):
            found += check_pod(spec, allow=allowed, where=where)
        template = executor_template(obj)
        if template is not None and isinstance(template.get("spec"), Mapping):
            found += check_pod(template["spec"], allow=allowed, where="executor pod template: ")
    return found


def pods_to_admit(objects: Iterable[Obj]) -> list[Obj]:
    """The pods to try on the API server (a dry run) before creating ``objects``: each Pod, and
    the first pod of each StatefulSet (its template as a Pod)."""
    out: list[Obj] = []
    for obj in objects:
        if obj.get("kind") == "Pod":
            out.append(obj)
        elif obj.get("kind") == "StatefulSet":
            template = (obj.get("spec") or {}).get("template") or {}
            meta = dict(template.get("metadata") or {})
            meta["name"] = f"{(obj.get('metadata') or {}).get('name')}-0"
            out.append(
                {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template.get("spec")}
            )
    return out
