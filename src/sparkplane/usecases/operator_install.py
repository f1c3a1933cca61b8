"""``operator install``: the CRDs (and, optionally, the in-cluster operator) on a cluster.

Server-side applies the SparkApplication/SparkCluster CRDs and waits until they are served; with
``operator``, also the operator's RBAC and Deployment, cluster-wide or for the ``watch``
namespaces. The manifests are :mod:`sparkplane.operator.deploy`'s (the same as ``deploy/``).
Called by :meth:`sparkplane.SparkPlane.install_operator`; never prints.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparkplane.kube import Kube
from sparkplane.operator.deploy import manifests as deploy
from sparkplane.operator.deploy.install import apply_objects, install_crds


def install(
    kube: Kube,
    *,
    operator: bool = False,
    watch: Sequence[str] = (),
    operator_namespace: str = deploy.DEFAULT_NAMESPACE,
    image: str = deploy.DEFAULT_IMAGE,
) -> list[str]:
    """Apply the CRDs (and the operator); ``Kind name`` of everything applied, in order."""
    done = install_crds(kube)
    if operator:
        objects = (
            deploy.namespaced(list(watch), operator_namespace, image)
            if watch
            else deploy.cluster_wide(operator_namespace, image)
        )
        done += apply_objects(kube, objects)
    return done
