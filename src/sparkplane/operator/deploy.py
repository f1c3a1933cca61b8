"""In-cluster install manifests: least-privilege RBAC and the operator Deployment.

Owns two variants, both generated here and written to ``deploy/operator/`` (a test checks the
files do not drift):

* **cluster-wide**: a ClusterRole + ClusterRoleBinding so one operator watches every namespace;
* **namespaced**: a Role + RoleBinding in each watched namespace and nothing cluster-scoped, so
  a namespace admin can install it once the CRDs exist (``deploy/crds/``, applied by someone
  allowed to create CRDs).

The rules are exactly what the operator calls: read/watch its custom resources and write their
status, delete them (``ttlAfterStopMillis``), create/delete the driver objects, watch pods and
StatefulSets, post Events, and hold its Lease (in its own namespace only). Pure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sparkplane.operator.crd import crds

Obj = dict[str, Any]
NAME = "sparkplane-operator"
DEFAULT_IMAGE = "ghcr.io/sparkplane/sparkplane:0.1.0"
DEFAULT_NAMESPACE = "spark-operator"
LEASE = "sparkplane-operator-lock"
_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "sparkplane"}


def workload_rules() -> list[Obj]:
    """What the operator needs in every namespace it watches."""
    return [
        {
            "apiGroups": ["spark.apache.org"],
            "resources": ["sparkapplications", "sparkclusters"],
            "verbs": ["get", "list", "watch", "delete"],
        },
        {
            "apiGroups": ["spark.apache.org"],
            "resources": ["sparkapplications/status", "sparkclusters/status"],
            "verbs": ["get", "update", "patch"],
        },
        {
            "apiGroups": ["spark.apache.org"],
            "resources": ["sparkapplications"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["sparkplane.io"],
            "resources": ["scheduledsparkapplications"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["sparkplane.io"],
            "resources": ["scheduledsparkapplications/status"],
            "verbs": ["get", "update", "patch"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        },
        {
            "apiGroups": [""],
            "resources": ["configmaps", "services", "persistentvolumeclaims"],
            "verbs": ["get", "create", "delete"],
        },
        {
            "apiGroups": ["networking.k8s.io"],
            "resources": ["ingresses"],
            "verbs": ["get", "create", "delete"],
        },
        {
            "apiGroups": ["apps"],
            "resources": ["statefulsets"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        },
        {
            "apiGroups": ["autoscaling"],
            "resources": ["horizontalpodautoscalers"],
            "verbs": ["get", "create", "delete"],
        },
        {
            "apiGroups": ["policy"],
            "resources": ["poddisruptionbudgets"],
            "verbs": ["get", "create", "delete"],
        },
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    ]


def lease_rules() -> list[Obj]:
    """Leader election, in the operator's own namespace only."""
    return [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [LEASE],
            "verbs": ["get", "update"],
        },
    ]


def _meta(name: str, namespace: str | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": dict(_LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _subject(namespace: str) -> list[Obj]:
    return [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]


def _binding(kind: str, name: str, namespace: str | None, role_kind: str, operator_ns: str) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": _subject(operator_ns),
    }


def deployment(namespace: str, args: list[str], image: str = DEFAULT_IMAGE) -> Obj:
    """The operator Deployment (two replicas; the Lease picks the active one)."""
    labels = {"app.kubernetes.io/name": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME, namespace),
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": {**_LABELS}},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "operator",
                            "image": image,
                            "args": ["operator", "run", "--in-cluster", *args],
                            "env": [
                                {
                                    "name": "POD_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                }
                            ],
                            "ports": [{"name": "metrics", "containerPort": 9090}],
                            "resources": {
                                "requests": {"cpu": "500m", "memory": "256Mi"},
                                "limits": {"memory": "1Gi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                },
            },
        },
    }


def _common(namespace: str) -> list[Obj]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(f"{NAME}-lease", namespace),
            "rules": lease_rules(),
        },
        _binding("RoleBinding", f"{NAME}-lease", namespace, "Role", namespace),
    ]


def _run_args(namespace: str, watched: list[str] | None) -> list[str]:
    args = [f"--lease-namespace={namespace}", "--metrics-port=9090"]
    if watched:
        args += [f"--namespace={ns}" for ns in watched]
    else:
        args.append("--all-namespaces")
    return args


def cluster_wide(namespace: str = DEFAULT_NAMESPACE, image: str = DEFAULT_IMAGE) -> list[Obj]:
    """The operator watching every namespace (needs a ClusterRole)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(NAME),
        "rules": workload_rules(),
    }
    return [
        *_common(namespace),
        role,
        _binding("ClusterRoleBinding", NAME, None, "ClusterRole", namespace),
        deployment(namespace, _run_args(namespace, None), image),
    ]


def namespaced(
    watched: list[str], namespace: str = DEFAULT_NAMESPACE, image: str = DEFAULT_IMAGE
) -> list[Obj]:
    """The operator watching ``watched`` only; nothing cluster-scoped but its Namespace."""
    out = _common(namespace)
    for ns in watched:
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": _meta(NAME, ns),
                "rules": workload_rules(),
            }
        )
        out.append(_binding("RoleBinding", NAME, ns, "Role", namespace))
    out.append(deployment(namespace, _run_args(namespace, watched), image))
    return out


def dump(objects: list[Obj]) -> str:
    header = "# Generated by sparkplane.operator.deploy (`operator manifests`). Do not edit.\n"
    return header + yaml.safe_dump_all(objects, sort_keys=False)


def files() -> dict[str, str]:
    """Relative path under ``deploy/`` → content, for every generated file."""
    out = {f"crds/{crd['metadata']['name']}.yaml": dump([crd]) for crd in crds()}
    out["operator/cluster-wide.yaml"] = dump(cluster_wide())
    out["operator/namespaced.yaml"] = dump(namespaced(["spark-apps"]))
    return out


def write(root: Path) -> list[Path]:
    """Write every generated file under ``root`` (the repository's ``deploy/``)."""
    written = []
    for rel, text in files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
