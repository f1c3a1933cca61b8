"""Pinned versions of the dev cluster's components (each keys its own binary cache directory).

Kubernetes v1.36 matches the KWOK release (built against k8s libraries v0.36.1) and builds with
Go 1.26 without a toolchain switch; etcd 3.6 is what kwokctl pairs with Kubernetes 1.34-1.36
(3.5 before 3.5.13 breaks watch progress requests on Kubernetes >= 1.35).
"""

from __future__ import annotations

from sparkplane.version import SPARK_VERSION

KUBERNETES = "1.36.4"
ETCD = "3.6.16"
KWOK = "0.8.0"
GO_MINIMUM = (1, 26)

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")

# The real node (``dev-cluster up --real-node``): versions verified on this machine kind
# (../shared/reference/real-node.md).
CONTAINERD = "2.2.9"
RUNC = "1.4.3"
CNI_PLUGINS = "1.9.1"
COREDNS = "1.14.2"  # kubeadm 1.36's pin
NODE_BINARIES = ("kubelet", "kube-proxy")
CNI_PLUGIN_NAMES = ("bridge", "host-local", "loopback", "portmap")
SPARK = SPARK_VERSION
"""The Spark image's version (sparkplane's, whose History Server runs the image by default): the
pyspark wheel of this version is its distribution."""
PAUSE = "3.10.1"
"""The sandbox image containerd 2.2 pins (registry.k8s.io/pause:<PAUSE>)."""
