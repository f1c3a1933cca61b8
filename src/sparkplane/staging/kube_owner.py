"""The Kubernetes owner lookup of the clean-up loop: do pods matching a bundle's labels exist?

Built by ``sparkplane staging serve`` when it has cluster credentials and handed to the server
as its :data:`~sparkplane.staging.cleanup.OwnerChecker`; the server and the clean-up rules never
import Kubernetes themselves. Goes through the gateway (``sparkplane.kube``): one pod list with
a label selector and ``limit=1`` per distinct owner and round. Needs ``list`` on pods in the
owners' namespaces (``sparkplane rbac staging``). Errors propagate: the clean-up keeps the
bundle and asks again next round.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.kube import Kube
from sparkplane.staging.cleanup import OwnerChecker


def label_selector(labels: Mapping[str, str]) -> str:
    """``k1=v1,k2=v2`` (sorted) for a pod list; labels were validated on upload."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def pod_owner_checker(kube: Kube) -> OwnerChecker:
    """An owner checker asking the API server for pods with all of a bundle's labels."""

    def owner_exists(namespace: str, labels: dict[str, str]) -> bool:
        if not labels:
            return True  # never delete on an empty selector (it would match every pod)
        page = kube.list_page(
            "v1", "Pod", namespace, label_selector=label_selector(labels), limit=1
        )
        return bool(page.get("items"))

    return owner_exists
