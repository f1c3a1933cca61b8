"""The API objects a real node needs beside it (built and applied by :mod:`.realnode`).

The ``kubernetes`` Service's endpoint (the relay: the API server itself reconciles none), CoreDNS's
read-only rights (kube-proxy and the kubelet have theirs by default), and the taint that keeps
real workloads off the simulated nodes.
"""

from __future__ import annotations

from typing import Any

from sparkplane.errors import AlreadyExistsError, NotFoundError
from sparkplane_devcluster.node.plan import RELAY_PORT, SIMULATED_TAINT, NodePlan


def taint_simulated(kube: Any) -> None:
    """Keep real workloads off the fake nodes (apps that want one tolerate the taint)."""
    for node in kube.list("v1", "Node"):
        annotations = node["metadata"].get("annotations") or {}
        if annotations.get("kwok.x-k8s.io/node") != "fake":
            continue
        taints = node.get("spec", {}).get("taints") or []
        if any(t.get("key") == SIMULATED_TAINT["key"] for t in taints):
            continue
        kube.patch(
            "v1", "Node", node["metadata"]["name"], {"spec": {"taints": [*taints, SIMULATED_TAINT]}}
        )


def kubernetes_endpoint(kube: Any, plan: NodePlan) -> None:
    """The ``kubernetes`` Service's endpoint: the relay (the API server reconciles none)."""
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {
                "kubernetes.io/service-name": "kubernetes",
                "endpointslice.kubernetes.io/managed-by": "sparkplane-dev-cluster",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [plan.host_ip], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": RELAY_PORT, "protocol": "TCP"}],
    }
    try:
        kube.delete("discovery.k8s.io/v1", "EndpointSlice", "kubernetes", "default")
    except NotFoundError:
        pass
    kube.create(body)


def ensure_rbac(kube: Any) -> None:
    """CoreDNS's read-only rights (kube-proxy and the kubelet have theirs by default)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "sparkplane:coredns"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {
                "apiGroups": ["discovery.k8s.io"],
                "resources": ["endpointslices"],
                "verbs": ["list", "watch"],
            },
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "sparkplane:coredns"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "sparkplane:coredns",
        },
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "sparkplane:coredns"}
        ],
    }
    for obj in (role, binding):
        try:
            kube.create(obj)
        except AlreadyExistsError:
            pass
