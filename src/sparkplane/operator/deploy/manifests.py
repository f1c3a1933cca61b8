"""In-cluster install manifests: least-privilege RBAC and the operator Deployment.

Owns two variants, both generated here and written to ``deploy/operator/`` (a test checks the
files do not drift):

* **cluster-wide**: a ClusterRole + ClusterRoleBinding so one operator watches every namespace;
* **namespaced**: a Role + RoleBinding in each watched namespace and nothing cluster-scoped, so
  a namespace admin can install it once the CRDs exist (``deploy/crds/``, applied by someone
  allowed to create CRDs).

The rules are :data:`sparkplane.security.rules.OPERATOR`'s, exactly what the operator calls:
read/watch its custom resources and write their status, delete them (``ttlAfterStopMillis``),
create/delete the driver objects, watch pods and StatefulSets, list its ConfigMaps and Services
(the sweeper, the log archive), post Events, and hold its Lease (in its own namespace only). Pure.
"""

from __future__ import annotations

from typing import Any

import yaml

from sparkplane.operator.core.settings import LIMIT_SETTINGS, Limits
from sparkplane.security.rules import OPERATOR, OPERATOR_LEASE
from sparkplane.version import SPARKPLANE_IMAGE

Obj = dict[str, Any]
NAME = "sparkplane-operator"
DEFAULT_IMAGE = SPARKPLANE_IMAGE  # the image the dev cluster builds; the chart's appVersion
DEFAULT_NAMESPACE = "spark-operator"
LEASE = OPERATOR_LEASE
LOG_ARCHIVE = "kube"  # in-cluster components archive logs as ConfigMaps (docs/history.md)
_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "sparkplane"}


def workload_rules() -> list[Obj]:
    """What the operator needs in every namespace it watches: the ``namespaced`` rules of
    :data:`sparkplane.security.rules.OPERATOR` (one catalogue, each rule with its reason)."""
    return [r.body() for r in OPERATOR.namespaced]


CLUSTER_READS = f"{NAME}-cluster"  # the namespaced install's ClusterRole (cluster_rules)


def cluster_rules() -> list[Obj]:
    """Cluster-scoped reads (Kueue's ResourceFlavors and WorkloadPriorityClasses, the
    PriorityClasses): the ``cluster`` rules of :data:`sparkplane.security.rules.OPERATOR`, in a
    ClusterRole whatever it watches."""
    return [r.body() for r in OPERATOR.cluster]


def lease_rules() -> list[Obj]:
    """Leader election, in the operator's own namespace only."""
    return [r.body() for r in OPERATOR.own_namespace]


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


DEFAULT_RESOURCES: Obj = {
    "requests": {"cpu": "500m", "memory": "256Mi"},
    "limits": {"memory": "1Gi"},
}


def deployment(
    namespace: str,
    args: list[str],
    image: str = DEFAULT_IMAGE,
    *,
    replicas: int = 2,
    metrics_port: int | None = 9090,
    resources: Obj | None = None,
    log_archive: str = LOG_ARCHIVE,
    archive_secret: str = "",
) -> Obj:
    """The operator Deployment (two replicas; the Lease picks the active one). ``log_archive``
    is its ``SPARKPLANE_LOG_ARCHIVE``: ``kube`` (ConfigMaps in the apps' namespaces),
    ``s3://bucket/prefix`` or ``off``; ``archive_secret``: a Secret whose keys become its
    environment (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``: the S3 store's)."""
    labels = {"app.kubernetes.io/name": NAME}
    container: Obj = {
        "name": "operator",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["operator", "run", "--in-cluster", *args],
        "env": [
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "SPARKPLANE_LOG_ARCHIVE", "value": log_archive},
        ],
    }
    if archive_secret:
        container["envFrom"] = [{"secretRef": {"name": archive_secret}}]
    pod_meta: Obj = {"labels": {**_LABELS}}
    if metrics_port is not None:
        container["ports"] = [{"name": "metrics", "containerPort": metrics_port}]
        pod_meta["annotations"] = {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(metrics_port),
            "prometheus.io/path": "/metrics",
        }
    container["resources"] = resources if resources is not None else DEFAULT_RESOURCES
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME, namespace),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": pod_meta,
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                },
            },
        },
    }


def namespace_object(name: str) -> Obj:
    """A Namespace the install needs (the operator's own, or a watched one)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name)}


def _common(namespace: str, with_namespace: bool = True) -> list[Obj]:
    own = [namespace_object(namespace)]
    return [
        *(own if with_namespace else []),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, namespace)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _meta(f"{NAME}-lease", namespace),
            "rules": lease_rules(),
        },
        _binding("RoleBinding", f"{NAME}-lease", namespace, "Role", namespace),
    ]


def run_args(
    namespace: str,
    watched: list[str] | None,
    *,
    workers: int = 8,
    metrics_port: int | None = 9090,
    limits: Limits | None = None,
    selector: str = "",
    dynamic_config: bool = False,
) -> list[str]:
    """The ``operator run`` flags of the in-cluster Deployment (the bounds always spelled out;
    ``selector``: only custom resources with these labels, when given; ``dynamic_config``: apply
    the dynamic-configuration ConfigMap)."""
    args = [f"--lease-namespace={namespace}", f"--workers={workers}"]
    if metrics_port is not None:
        args.append(f"--metrics-port={metrics_port}")
    if watched:
        args += [f"--namespace={ns}" for ns in watched]
    else:
        args.append("--all-namespaces")
    if selector:
        args.append(f"--selector={selector}")
    if dynamic_config:
        args.append("--dynamic-config")
    bounds = limits or Limits()
    args += [f"{flag}={getattr(bounds, name)}" for name, (flag, _) in LIMIT_SETTINGS.items()]
    return args


def cluster_wide(
    namespace: str = DEFAULT_NAMESPACE, image: str = DEFAULT_IMAGE, *, with_namespace: bool = True
) -> list[Obj]:
    """The operator watching every namespace (needs a ClusterRole)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": _meta(NAME),
        "rules": workload_rules() + cluster_rules(),
    }
    return [
        *_common(namespace, with_namespace),
        role,
        _binding("ClusterRoleBinding", NAME, None, "ClusterRole", namespace),
        deployment(namespace, run_args(namespace, None), image),
    ]


def namespaced(
    watched: list[str],
    namespace: str = DEFAULT_NAMESPACE,
    image: str = DEFAULT_IMAGE,
    *,
    with_namespace: bool = True,
) -> list[Obj]:
    """The operator watching ``watched`` only; nothing cluster-scoped but its Namespace and
    a ClusterRole of cluster-scoped reads (:func:`cluster_rules`)."""
    out = _common(namespace, with_namespace)
    out.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(CLUSTER_READS),
            "rules": cluster_rules(),
        }
    )
    out.append(_binding("ClusterRoleBinding", CLUSTER_READS, None, "ClusterRole", namespace))
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
    out.append(deployment(namespace, run_args(namespace, watched), image))
    return out


def dump(objects: list[Obj]) -> str:
    header = "# Generated by sparkplane.operator.deploy (`operator manifests`). Do not edit.\n"
    return header + yaml.safe_dump_all(objects, sort_keys=False)
