"""Render the minimal RBAC of an identity: ServiceAccount, Roles or ClusterRoles, bindings.

Owns :func:`render` (the objects, in apply order), :func:`to_yaml` (with every rule commented
with why it is granted) and :func:`to_json`. Called by ``sparkplane rbac`` (which prints or
server-side applies them) and by :mod:`sparkplane.security.deploy` (``deploy/rbac/*.yaml``).
The rules themselves live in :mod:`sparkplane.security.rules`. Pure: no I/O, no client.

Names follow Kubernetes' own ``system:`` convention (colons are valid in RBAC names):
Role/ClusterRole ``sparkplane:<identity>``, bindings ``sparkplane:<identity>:<sa-ns>:<sa>``,
so two service accounts of one identity never overwrite each other's bindings.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from sparkplane.errors import Problem, ValidationError
from sparkplane.security.rules import POLICIES, Identity, Policy, Rule
from sparkplane.vocab import is_dns1123_label, is_dns1123_subdomain

RBAC_API = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class RbacObject:
    """One object to apply; ``reasons`` holds the why of each entry of ``body["rules"]``."""

    body: dict[str, Any]
    reasons: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def render(
    identity: Identity | str,
    namespace: str,
    *,
    service_account: str | None = None,
    namespaces: Sequence[str] = (),
    cluster_wide: bool = False,
) -> list[RbacObject]:
    """The objects that give ``identity`` exactly its rules.

    The service account lives in ``namespace``. Its namespaced rules are granted in
    ``namespaces`` (default: ``namespace`` alone), or in every namespace with ``cluster_wide``
    (operator, staging and gc only). Raises :class:`ValidationError` listing every problem.
    """
    policy = _policy(identity)
    account = service_account or policy.default_service_account
    targets = _dedupe(namespaces) or (namespace,)
    _check(policy, namespace, account, targets, namespaces, cluster_wide)
    ident = policy.identity.value
    labels = {
        "app.kubernetes.io/part-of": "sparkplane",
        "app.kubernetes.io/managed-by": "sparkplane",
        "app.kubernetes.io/component": ident,
    }
    subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    binding_name = f"sparkplane:{ident}:{namespace}:{account}"
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": account, "namespace": namespace, "labels": dict(labels)},
    }
    roles: list[RbacObject] = []
    bindings: list[RbacObject] = []

    def grant(role_name: str, rules: tuple[Rule, ...], ns: str | None, bind_name: str) -> None:
        kind = "Role" if ns else "ClusterRole"
        meta: dict[str, Any] = {"name": role_name, "labels": dict(labels)}
        bmeta: dict[str, Any] = {"name": bind_name, "labels": dict(labels)}
        if ns:
            meta = {"name": role_name, "namespace": ns, "labels": dict(labels)}
            bmeta = {"name": bind_name, "namespace": ns, "labels": dict(labels)}
        role: dict[str, Any] = {"apiVersion": RBAC_API, "kind": kind, "metadata": meta}
        role["rules"] = [r.body() for r in rules]
        roles.append(RbacObject(role, tuple(r.why for r in rules)))
        bindings.append(
            RbacObject(
                {
                    "apiVersion": RBAC_API,
                    "kind": f"{kind}Binding",
                    "metadata": bmeta,
                    "subjects": [dict(subject)],
                    "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role_name},
                }
            )
        )

    if cluster_wide:
        grant(f"sparkplane:{ident}", policy.namespaced, None, binding_name)
    else:
        for ns in targets:
            grant(f"sparkplane:{ident}", policy.namespaced, ns, binding_name)
    if policy.own_namespace:
        grant(
            f"sparkplane:{ident}:leader-election",
            policy.own_namespace,
            namespace,
            f"sparkplane:{ident}:leader-election:{account}",
        )
    if policy.cluster:
        grant(
            f"sparkplane:{ident}:cluster",
            policy.cluster,
            None,
            f"sparkplane:{ident}:cluster:{namespace}:{account}",
        )
    return [RbacObject(sa), *roles, *bindings]


def bodies(objects: Iterable[RbacObject]) -> list[dict[str, Any]]:
    """The plain API bodies, e.g. to apply them."""
    return [o.body for o in objects]


def to_json(objects: Iterable[RbacObject]) -> str:
    """A ``v1`` List of the objects (``kubectl apply -f`` accepts it); JSON has no comments."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies(objects)}, indent=2)


def to_yaml(objects: Iterable[RbacObject], *, header: str = "") -> str:
    """Multi-document YAML; each rule is preceded by a comment saying why it is granted."""
    docs: list[str] = []
    for obj in objects:
        body = {k: v for k, v in obj.body.items() if k != "rules"}
        text = _dump(body)
        if "rules" in obj.body:
            text += "rules:\n"
            for rule_body, why in zip(obj.body["rules"], obj.reasons, strict=True):
                text += _comment(why) + _dump([rule_body])
        docs.append(text)
    head = "".join(_comment(line) for line in header.splitlines()) if header else ""
    return head + "---\n".join(docs)


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def _comment(text: str) -> str:
    lines = textwrap.wrap(text, width=96, break_on_hyphens=False, break_long_words=False) or [""]
    return "".join(f"# {line}\n".replace("# \n", "#\n") for line in lines)


def _policy(identity: Identity | str) -> Policy:
    try:
        return POLICIES[Identity(identity)]
    except ValueError:
        known = ", ".join(i.value for i in Identity)
        raise ValidationError(
            [Problem("identity", f"unknown identity {identity!r}", f"one of: {known}")],
            subject="RBAC request",
        ) from None


def _dedupe(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _check(
    policy: Policy,
    namespace: str,
    account: str,
    targets: tuple[str, ...],
    requested: Sequence[str],
    cluster_wide: bool,
) -> None:
    problems: list[Problem] = []
    for field, ns in [("namespace", namespace)] + [("namespaces", t) for t in targets]:
        if not is_dns1123_label(ns):
            problems.append(Problem(field, f"{ns!r} is not a valid namespace name"))
    if not is_dns1123_subdomain(account):
        problems.append(
            Problem("service_account", f"{account!r} is not a valid service account name")
        )
    ident = policy.identity.value
    if cluster_wide and not policy.cluster_wide_allowed:
        problems.append(
            Problem(
                "cluster_wide",
                f"the {ident} identity has no cluster-wide variant",
                "it works in one namespace by design; create one identity per namespace",
            )
        )
    if cluster_wide and requested:
        problems.append(
            Problem("namespaces", "cluster-wide already covers every namespace; name none")
        )
    if not policy.cluster_wide_allowed and set(targets) != {namespace}:
        problems.append(
            Problem(
                "namespaces",
                f"the {ident} identity acts only in its own namespace ({namespace})",
                "create one identity per namespace instead",
            )
        )
    if problems:
        raise ValidationError(problems, subject="RBAC request")
