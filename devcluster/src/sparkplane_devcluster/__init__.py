"""The local dev cluster: a real Kubernetes control plane built from Go modules.

etcd, kube-apiserver (RBAC on, default admission), kube-controller-manager (garbage collector,
job, cronjob, namespace, service-account controllers...), kube-scheduler and KWOK simulating
nodes and the kubelet. Used by ``sparkplane dev-cluster``, the demo and the integration tests.

A distribution of its own (sparkplane-devcluster, ``devcluster/`` in the repository), so that
``pip install sparkplane`` does not ship it: it imports sparkplane (the gateway, RBAC, the CLI's
console), and sparkplane never imports it (an import-linter contract); ``sparkplane
dev-cluster`` is its :mod:`sparkplane_devcluster.cli`, found through the ``sparkplane.cli``
entry-point group.
"""

from sparkplane_devcluster.cluster import DevCluster, DevClusterSettings

__all__ = ["DevCluster", "DevClusterSettings"]
