"""``tenant setup``: hold one namespace to the tenant pod policy (docs/security.md).

Owns :func:`setup`: server-side apply, in order, the cluster's three ValidatingAdmissionPolicies
and their bindings (idempotent; one set serves every tenant), the Namespace with its policy
labels and annotations and Pod Security Admission's ``enforce`` label, the client and driver
roles and the ResourceQuotas that :func:`sparkplane.security.admission.tenant_objects` renders.
Needs an admin's rights (it creates cluster-scoped policies and RBAC). Called by
:meth:`sparkplane.SparkPlane.tenant_setup`, which the CLI calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkplane.kube import Kube
from sparkplane.security.admission import TenantSettings, tenant_objects

TENANT_FIELD_MANAGER = "sparkplane-tenant"


def setup(
    kube: Kube,
    settings: TenantSettings,
    *,
    with_policies: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Apply every object of the tenant (raises ValidationError before anything is sent)."""
    objects = tenant_objects(settings, with_policies=with_policies)
    applied = []
    for obj in objects:
        applied.append(kube.apply(obj, field_manager=TENANT_FIELD_MANAGER))
        if progress is not None:
            meta = obj["metadata"]
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            progress(f"applied {obj['kind']} {where}{meta['name']}")
    return applied
