"""The admission side of the tenant pod policy: ValidatingAdmissionPolicies and a tenant's objects.

Owns :func:`policies` (two ``admissionregistration.k8s.io/v1`` ValidatingAdmissionPolicies with
their bindings, in CEL, enforced by the API server itself, so they hold the pods a Spark driver
creates as well as the operator's) and :func:`tenant_objects` (what ``sparkplane tenant setup``
applies for one namespace: the Namespace's labels and annotations, Pod Security Admission's
``enforce`` label, the client and driver roles of :mod:`sparkplane.security.rules` and two
ResourceQuotas). The rules, their opt-out labels and the namespace annotations are those of
:mod:`sparkplane.security.podpolicy`.

``sparkplane-tenant-pods`` (pods, CREATE) refuses in namespaces labelled
``sparkplane.io/tenant=enabled``: privileged containers, host namespaces, hostPath volumes, added
capabilities, ``allowPrivilegeEscalation: true``, system priority classes (each unless the
namespace carries its ``policy.sparkplane.io/allow-<check>=true`` label), service accounts the
namespace does not designate, Secrets it does not list; and, for requests by a designated driver
identity: a token not bound to a pod, a pod not controlled by the requesting pod (its uid, from
the token's ``authentication.kubernetes.io/pod-uid``), not labelled ``spark-role=executor``, or
mounting ConfigMaps or PVCs that are not its own (``spark-exec-*``, ``<pod>-pvc-*``) or listed.
``sparkplane-tenant-driver-writes`` refuses a driver's update or delete of a pod, and delete of
a ConfigMap, Service or PVC, that its pod does not own. ``sparkplane-tenant-driver-statefulsets``
refuses a driver's StatefulSet writes unless the namespace opts in
(``policy.sparkplane.io/allow-driver-statefulsets=true``, ``tenant setup --allow
driver-statefulsets``): the pods a StatefulSet makes escape the driver checks above.

Pure: no I/O. ``python -m sparkplane.security.admission [DIR]`` writes ``deploy/policy/``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from sparkplane import deployfiles
from sparkplane.errors import Problem, ValidationError
from sparkplane.security import podpolicy as pp
from sparkplane.security.rbac import bodies, render
from sparkplane.security.rules import DRIVER, Identity
from sparkplane.vocab import TENANT_LABEL, is_dns1123_label, is_dns1123_subdomain

API = "admissionregistration.k8s.io/v1"
PODS_POLICY = "sparkplane-tenant-pods"
WRITES_POLICY = "sparkplane-tenant-driver-writes"
STATEFULSETS_POLICY = "sparkplane-tenant-driver-statefulsets"
#: what ``tenant setup --allow`` takes: the pod policy's checks and the StatefulSet opt-in.
TENANT_OPT_OUTS = (*pp.CHECK_NAMES, pp.DRIVER_STATEFULSETS)
QUOTA = "sparkplane-tenant"
SYSTEM_PRIORITY_QUOTA = "sparkplane-no-system-priority"
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
PSA_LEVELS = ("baseline", "restricted", "privileged")
#: opt-outs that Pod Security's baseline level refuses as well: they need ``privileged``.
_BEYOND_BASELINE = frozenset({"privileged", "host-namespaces", "host-path"})
DEFAULT_QUOTA: Mapping[str, str] = {"pods": "200"}
LABELS = {"app.kubernetes.io/part-of": "sparkplane", "app.kubernetes.io/managed-by": "sparkplane"}

Obj = dict[str, Any]
_EMPTY = "''"  # the CEL empty string
_HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")


def _q(text: str) -> str:
    """A CEL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _opt(path: str, default: str) -> str:
    """``path`` if set, else ``default`` (CEL has no null-safe access on typed objects)."""
    parent, _, leaf = path.rpartition(".")
    return f"(has({parent}.{leaf}) ? {path} : {default})" if parent else path


def _list_annotation(key: str) -> str:
    return (
        f"{_q(key)} in variables.annotations ? "
        f"variables.annotations[{_q(key)}].split(',').map(n, n.trim()) : []"
    )


def _allowed(check: pp.Check) -> str:
    label = _q(check.opt_out)
    return f"({label} in variables.labels && variables.labels[{label}] == 'true')"


def _listed(var: str, name: str) -> str:
    """``name`` is in ``variables.<var>``, or starts with a listed ``prefix*``."""
    return (
        f"variables.{var}.exists(a, a == {name} || "
        f"(a.endsWith('*') && {name}.startsWith(a.substring(0, size(a) - 1))))"
    )


def _no_container_flag(flag: str) -> str:
    return (
        "variables.containers.all(c, !has(c.securityContext) || "
        f"!has(c.securityContext.{flag}) || !c.securityContext.{flag})"
    )


def _refs_ok(kind: str, ok: Any) -> str:
    """Every reference of a pod to a Secret (``kind="secret"``) or ConfigMap passes ``ok``."""
    if kind == "secret":
        vol, proj, key_ref, env_ref = "secret", "secret", "secretKeyRef", "secretRef"
        vol_name = "v.secret.secretName"
    else:
        vol, proj, key_ref, env_ref = "configMap", "configMap", "configMapKeyRef", "configMapRef"
        vol_name = "v.configMap.name"
    return (
        f"variables.volumes.all(v, (!has(v.{vol}) || {ok(_opt(vol_name, _EMPTY))}) && "
        "(!has(v.projected) || !has(v.projected.sources) || v.projected.sources.all(s, "
        f"!has(s.{proj}) || {ok(_opt(f's.{proj}.name', _EMPTY))}))) && "
        "variables.containers.all(c, (!has(c.env) || c.env.all(e, !has(e.valueFrom) || "
        f"!has(e.valueFrom.{key_ref}) || {ok(_opt(f'e.valueFrom.{key_ref}.name', _EMPTY))})) && "
        f"(!has(c.envFrom) || c.envFrom.all(f, !has(f.{env_ref}) || "
        f"{ok(_opt(f'f.{env_ref}.name', _EMPTY))})))"
    )


def _variables(*, pods: bool) -> list[Obj]:
    ns = "namespaceObject.metadata"
    out = [
        {"name": "labels", "expression": f"has({ns}.labels) ? {ns}.labels : {{}}"},
        {"name": "annotations", "expression": f"has({ns}.annotations) ? {ns}.annotations : {{}}"},
        {
            "name": "driverAccounts",
            "expression": f"({_list_annotation(pp.DRIVER_SERVICE_ACCOUNTS)})"
            f".map(n, 'system:serviceaccount:' + {ns}.name + ':' + n)",
        },
        {"name": "isDriver", "expression": "request.userInfo.username in variables.driverAccounts"},
        {
            "name": "podUid",
            "expression": f"has(request.userInfo.extra) && {_q(pp.POD_UID_EXTRA)} in "
            f"request.userInfo.extra && size(request.userInfo.extra[{_q(pp.POD_UID_EXTRA)}]) > 0"
            f" ? request.userInfo.extra[{_q(pp.POD_UID_EXTRA)}][0] : ''",
        },
    ]
    if pods:
        out += [
            {
                "name": "containers",
                "expression": "object.spec.containers + (has(object.spec.initContainers) ? "
                "object.spec.initContainers : [])",
            },
            {
                "name": "volumes",
                "expression": "has(object.spec.volumes) ? object.spec.volumes : []",
            },
            {"name": "serviceAccounts", "expression": _list_annotation(pp.SERVICE_ACCOUNTS)},
            {"name": "secrets", "expression": _list_annotation(pp.SECRETS)},
            {"name": "executorVolumes", "expression": _list_annotation(pp.EXECUTOR_VOLUMES)},
            {
                "name": "podName",
                "expression": "has(object.metadata.name) ? object.metadata.name : ''",
            },
        ]
    return out


def _validation(expression: str, message: str) -> Obj:
    return {"expression": expression, "message": message, "reason": "Forbidden"}


def _check_message(check: pp.Check) -> str:
    return f"{check.field}: {check.message} (opt-out: namespace label {check.opt_out}=true)"


def _pod_validations() -> list[Obj]:
    checks = {
        pp.PRIVILEGED.name: _no_container_flag("privileged"),
        pp.HOST_NAMESPACES.name: " && ".join(
            f"!(has(object.spec.{k}) && object.spec.{k})"
            for k in ("hostNetwork", "hostPID", "hostIPC")
        ),
        pp.HOST_PATH.name: "variables.volumes.all(v, !has(v.hostPath))",
        pp.CAPABILITIES.name: "variables.containers.all(c, !has(c.securityContext) || "
        "!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "
        "size(c.securityContext.capabilities.add) == 0)",
        pp.PRIVILEGE_ESCALATION.name: _no_container_flag("allowPrivilegeEscalation"),
        pp.SYSTEM_PRIORITY.name: "!has(object.spec.priorityClassName) || "
        f"!(object.spec.priorityClassName in {list(pp.SYSTEM_PRIORITY_CLASSES)})",
    }
    out = [
        _validation(f"{_allowed(check)} || ({checks[check.name]})", _check_message(check))
        for check in pp.CHECKS
    ]
    account = _opt("object.spec.serviceAccountName", "'default'")
    own = list(pp.SPARKPLANE_IDENTITIES)
    out.append(
        _validation(
            f"!({account} in {own}) && {account} in variables.serviceAccounts",
            "spec.serviceAccountName: the pod's service account is not one this namespace "
            f"designates (namespace annotation {pp.SERVICE_ACCOUNTS}; never a sparkplane-* "
            "identity)",
        )
    )
    out.append(
        _validation(
            _refs_ok("secret", lambda n: _listed("secrets", n)),
            "spec.volumes/env/envFrom: the pod references a Secret this namespace does not "
            f"list for pods (namespace annotation {pp.SECRETS}; names, or prefix*)",
        )
    )
    out += _driver_validations()
    return out


def _driver_validations() -> list[Obj]:
    owned = (
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
        "r.uid == variables.podUid && has(r.controller) && r.controller)"
    )

    def own_cm(name: str) -> str:
        return (
            f"({name}.startsWith({_q(pp.EXECUTOR_CONFIGMAP_PREFIX)}) || "
            f"{name} == {_q(pp.ROOT_CA_CONFIGMAP)} || {_listed('executorVolumes', name)})"
        )

    claim = "v.persistentVolumeClaim.claimName"
    pvcs = (
        "variables.volumes.all(v, !has(v.persistentVolumeClaim) || "
        f"(variables.podName != '' && {claim}.startsWith(variables.podName + '-pvc-')) || "
        f"{_listed('executorVolumes', claim)})"
    )
    return [
        _validation(
            "!variables.isDriver || variables.podUid != ''",
            "a driver identity creates pods only with its pod-bound token (userInfo extra "
            f"{pp.POD_UID_EXTRA}); this token is not bound to a pod",
        ),
        _validation(
            f"!variables.isDriver || ({owned})",
            "metadata.ownerReferences: a driver creates only its own executors: the pod must "
            "be controlled by the requesting driver pod (its uid)",
        ),
        _validation(
            "!variables.isDriver || (has(object.metadata.labels) && 'spark-role' in "
            "object.metadata.labels && object.metadata.labels['spark-role'] == 'executor')",
            "metadata.labels: a driver creates only executors (label spark-role=executor)",
        ),
        _validation(
            f"!variables.isDriver || ({_refs_ok('configMap', own_cm)} && {pvcs})",
            "spec.volumes/env/envFrom: a driver's executor mounts only its own ConfigMap "
            f"({pp.EXECUTOR_CONFIGMAP_PREFIX}*), its own PVCs (<pod>-pvc-*) and what the "
            f"namespace lists (annotation {pp.EXECUTOR_VOLUMES})",
        ),
    ]


def _policy(name: str, rules: list[Obj], variables: list[Obj], validations: list[Obj]) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "variables": variables,
            "validations": validations,
        },
    }


def _binding(policy: str) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy, "labels": dict(LABELS)},
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {TENANT_LABEL: pp.TENANT_ENABLED}}
            },
        },
    }


def _rule(resources: list[str], operations: list[str], group: str = "") -> Obj:
    return {
        "apiGroups": [group],
        "apiVersions": ["v1"],
        "operations": operations,
        "resources": resources,
    }


def policies() -> list[Obj]:
    """The three policies and their bindings (cluster-scoped; one set serves every tenant)."""
    pods = _policy(
        PODS_POLICY, [_rule(["pods"], ["CREATE"])], _variables(pods=True), _pod_validations()
    )
    old_owned = (
        "has(oldObject.metadata.ownerReferences) && "
        "oldObject.metadata.ownerReferences.exists(r, r.uid == variables.podUid)"
    )
    writes = _policy(
        WRITES_POLICY,
        [
            _rule(["pods"], ["UPDATE", "DELETE"]),
            _rule(["configmaps", "services", "persistentvolumeclaims"], ["DELETE"]),
        ],
        _variables(pods=False),
        [
            _validation(
                f"!variables.isDriver || (variables.podUid != '' && {old_owned})",
                "metadata.ownerReferences: a driver changes or deletes only objects its own "
                "pod owns",
            )
        ],
    )
    opt_in = _q(f"{pp.ALLOW_PREFIX}{pp.DRIVER_STATEFULSETS}")
    statefulsets = _policy(
        STATEFULSETS_POLICY,
        [_rule(["statefulsets", "statefulsets/scale"], ["CREATE", "UPDATE", "DELETE"], "apps")],
        _variables(pods=False),
        [
            _validation(
                f"!variables.isDriver || ({opt_in} in variables.labels && "
                f"variables.labels[{opt_in}] == 'true')",
                "kind: StatefulSet: a driver's executor StatefulSets "
                "(spark.kubernetes.allocation.pods.allocator=statefulset) make pods the driver "
                "checks of this namespace's policy do not hold; a platform admin opts in with "
                f"the namespace label {pp.ALLOW_PREFIX}{pp.DRIVER_STATEFULSETS}=true",
            )
        ],
    )
    return [
        pods,
        _binding(PODS_POLICY),
        writes,
        _binding(WRITES_POLICY),
        statefulsets,
        _binding(STATEFULSETS_POLICY),
    ]


@dataclass(frozen=True)
class TenantSettings:
    """What ``sparkplane tenant setup`` makes of one namespace."""

    namespace: str
    driver_service_account: str = DRIVER.default_service_account
    executor_service_accounts: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    executor_volumes: tuple[str, ...] = ()
    quota: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_QUOTA))
    pod_security: str | None = None
    """Pod Security Admission level; None: baseline, or privileged when an opt-out needs it."""

    @property
    def service_accounts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.driver_service_account, *self.executor_service_accounts)))

    @property
    def pod_security_level(self) -> str:
        if self.pod_security:
            return self.pod_security
        return "privileged" if _BEYOND_BASELINE & set(self.allow) else "baseline"


def parse_quota(text: str) -> dict[str, str]:
    """``pods=100,requests.cpu=20`` as a ResourceQuota ``hard`` map (raises ValidationError)."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValidationError(
                [Problem("--quota", f"{part!r} is not RESOURCE=AMOUNT", "e.g. pods=100")],
                subject="tenant setup",
            )
        out[key.strip()] = value.strip()
    return out


def _check(settings: TenantSettings) -> None:
    problems: list[Problem] = []
    if not is_dns1123_label(settings.namespace):
        problems.append(Problem("namespace", f"{settings.namespace!r} is not a namespace name"))
    for account in settings.service_accounts:
        if not is_dns1123_subdomain(account):
            problems.append(Problem("service_account", f"{account!r} is not a valid name"))
        elif account in pp.SPARKPLANE_IDENTITIES:
            problems.append(
                Problem(
                    "service_account",
                    f"{account!r} is a sparkplane identity; pods must never run as one",
                    "use the driver's own account (default spark-driver)",
                )
            )
    unknown = sorted(set(settings.allow) - set(TENANT_OPT_OUTS))
    if unknown:
        problems.append(
            Problem("allow", f"unknown check(s) {unknown}", f"one of {list(TENANT_OPT_OUTS)}")
        )
    if settings.pod_security and settings.pod_security not in PSA_LEVELS:
        problems.append(
            Problem("pod_security", f"{settings.pod_security!r}", f"one of {list(PSA_LEVELS)}")
        )
    for name in (*settings.secrets, *settings.executor_volumes):
        if "," in name or not name.strip():
            problems.append(Problem("secrets/executor_volumes", f"{name!r} is not a name"))
    if problems:
        raise ValidationError(problems, subject="tenant setup")


def namespace_object(settings: TenantSettings) -> Obj:
    """The Namespace with the policy's labels and annotations (server-side applied)."""
    labels = {
        TENANT_LABEL: pp.TENANT_ENABLED,
        PSA_ENFORCE: settings.pod_security_level,
        f"{PSA_ENFORCE}-version": "latest",
        **{f"{pp.ALLOW_PREFIX}{name}": "true" for name in sorted(set(settings.allow))},
    }
    annotations = {
        pp.SERVICE_ACCOUNTS: ",".join(settings.service_accounts),
        pp.DRIVER_SERVICE_ACCOUNTS: settings.driver_service_account,
        pp.SECRETS: ",".join(settings.secrets),
        pp.EXECUTOR_VOLUMES: ",".join(settings.executor_volumes),
    }
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": settings.namespace, "labels": labels, "annotations": annotations},
    }


def quotas(settings: TenantSettings) -> list[Obj]:
    """The tenant's quota, and one that admits no pod of a system priority class."""
    meta = {"namespace": settings.namespace, "labels": dict(LABELS)}
    out: list[Obj] = []
    if settings.quota:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": QUOTA, **meta},
                "spec": {"hard": dict(settings.quota)},
            }
        )
    out.append(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": SYSTEM_PRIORITY_QUOTA, **meta},
            "spec": {
                "hard": {"pods": "0"},
                "scopeSelector": {
                    "matchExpressions": [
                        {
                            "scopeName": "PriorityClass",
                            "operator": "In",
                            "values": list(pp.SYSTEM_PRIORITY_CLASSES),
                        }
                    ]
                },
            },
        }
    )
    return out if pp.SYSTEM_PRIORITY.name not in settings.allow else out[:1]


def tenant_objects(settings: TenantSettings, *, with_policies: bool = True) -> list[Obj]:
    """Everything ``tenant setup`` applies, in order: policies, Namespace, roles, quotas."""
    _check(settings)
    ns = settings.namespace
    objects: list[Obj] = list(policies()) if with_policies else []
    objects.append(namespace_object(settings))
    objects += bodies(render(Identity.CLIENT, ns))
    objects += bodies(render(Identity.DRIVER, ns, service_account=settings.driver_service_account))
    for account in settings.executor_service_accounts:
        if account != settings.driver_service_account:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": account, "namespace": ns, "labels": dict(LABELS)},
                }
            )
    objects += quotas(settings)
    return objects


def to_yaml(objects: Sequence[Obj], *, header: str = "") -> str:
    """Multi-document YAML (``kubectl apply -f`` accepts it)."""
    head = "".join(f"# {line}\n" for line in header.splitlines())
    docs = [
        yaml.safe_dump(o, sort_keys=False, default_flow_style=False, width=100) for o in objects
    ]
    return head + "---\n".join(docs)


def render_files() -> dict[str, str]:
    """``deploy/policy/``: the policies and bindings, for ``kubectl apply`` or the Helm chart."""
    header = (
        "Generated by `python -m sparkplane.security.admission` from "
        "src/sparkplane/security/admission.py; do not edit.\n"
        "Label a tenant namespace sparkplane.io/tenant=enabled (sparkplane tenant setup) to "
        "hold its pods to them."
    )
    return {"tenant-policy.yaml": to_yaml(policies(), header=header)}


def names(objects: Iterable[Obj]) -> list[str]:
    """``Kind namespace/name`` of each object (what a setup reports)."""
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        where = f"{meta['namespace']}/" if meta.get("namespace") else ""
        out.append(f"{obj['kind']} {where}{meta.get('name')}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Write the files into ``argv[0]`` (default ``deploy/policy``)."""
    return deployfiles.main(render_files, "deploy/policy", argv)


if __name__ == "__main__":
    raise SystemExit(main())
