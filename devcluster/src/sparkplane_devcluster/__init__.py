"""The local dev cluster: a real Kubernetes control plane built from Go modules.

etcd, kube-apiserver (RBAC on, default admission), kube-controller-manager (garbage collector,
job, cronjob, namespace, service-account controllers...), kube-scheduler and KWOK simulating
nodes and the kubelet. Used by ``sparkplane dev-cluster``, the demo and the integration tests.
Nothing here is imported by the rest of sparkplane.
"""

from sparkplane_devcluster.cluster import DevCluster, DevClusterSettings

__all__ = ["DevCluster", "DevClusterSettings"]
