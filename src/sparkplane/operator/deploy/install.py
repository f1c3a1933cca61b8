"""Install the CRDs (and optionally the in-cluster operator) with server-side apply.

Owns ``install_crds`` (apply both CRDs, wait until the API server serves them) and
``apply_objects`` (apply any generated manifests, e.g. ``deploy.operator_manifests``).
Server-side apply, because the CRDs are too large for client-side apply's annotation.
Called by ``sparkplane operator install`` and the integration tests' session fixture.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from sparkplane.errors import KubeError
from sparkplane.kube import Kube
from sparkplane.operator.deploy.crd import crds

FIELD_MANAGER = "sparkplane-operator-install"


def apply_objects(kube: Kube, objects: Iterable[dict[str, Any]]) -> list[str]:
    """Server-side apply each object; returns ``Kind name`` of each."""
    done = []
    for obj in objects:
        kube.apply(obj, field_manager=FIELD_MANAGER)
        done.append(f"{obj['kind']} {obj['metadata']['name']}")
    return done


def install_crds(kube: Kube, *, timeout: float = 60.0) -> list[str]:
    """Apply the SparkApplication and SparkCluster CRDs and wait until they are Established."""
    objects = crds()
    done = apply_objects(kube, objects)
    deadline = time.monotonic() + timeout
    for crd in objects:
        name = crd["metadata"]["name"]
        while True:
            got = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            conditions = (got.get("status") or {}).get("conditions") or []
            if any(
                c.get("type") == "Established" and c.get("status") == "True" for c in conditions
            ):
                break
            if time.monotonic() > deadline:
                raise KubeError(f"CustomResourceDefinition {name} not Established after {timeout}s")
            time.sleep(0.2)
    return done
