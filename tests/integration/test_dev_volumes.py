"""The dev cluster's static volumes: a claim with no storage class binds (as deploy/staging/'s)."""

from __future__ import annotations

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for


def test_a_claim_without_a_class_binds(kube: Kube, namespace: str) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "20Gi"}},
            },
        }
    )

    def bound() -> str | None:
        claim = kube.get("v1", "PersistentVolumeClaim", "data", namespace)
        if claim.get("status", {}).get("phase") == "Bound":
            return str(claim["spec"]["volumeName"])
        return None

    volume = wait_for(bound, timeout=60, what="the claim bound to a dev volume")
    assert volume.startswith("sparkplane-dev-pv-")
