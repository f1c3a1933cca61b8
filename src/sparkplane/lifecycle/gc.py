"""TTL clean-up of finished native applications (the seed's CronJob idea, done properly).

Deleting a finished driver pod (Background propagation) lets the garbage collector remove its
ConfigMaps, Services and Ingress. The TTL is per app (annotation or label
``sparkplane.io/ttl-seconds-after-finished``, set by ``submit --ttl``) or the default given here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube
from sparkplane.lifecycle.apps import is_native_driver
from sparkplane.lifecycle.ttl import TtlDecision, plan_cleanup

Obj = dict[str, Any]


def collect_garbage(
    kube: Kube,
    namespace: str | None,
    *,
    default_ttl: timedelta | None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[TtlDecision]:
    """Plan (and unless ``dry_run`` carry out) the deletion of expired finished drivers."""
    pods = [
        p
        for p in kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
        if is_native_driver(p)
    ]
    decisions = plan_cleanup(pods, now or datetime.now(UTC), default_ttl)
    if not dry_run:
        for d in decisions:
            if d.delete:
                try:
                    kube.delete("v1", "Pod", d.name, d.namespace, propagation="Background")
                except NotFoundError:
                    pass
    return decisions


def gc_cronjob(
    namespace: str,
    *,
    older_than: str = "24h",
    schedule: str = "*/10 * * * *",
    image: str = "sparkplane:latest",
    service_account: str = "sparkplane-gc",
    all_namespaces: bool = False,
) -> Obj:
    """A CronJob running ``sparkplane gc`` in-cluster (RBAC: ``sparkplane rbac gc``)."""
    scope = ["-A"] if all_namespaces else ["-n", namespace]
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "sparkplane-gc",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "sparkplane-gc"},
        },
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 1,
                    "ttlSecondsAfterFinished": 3600,
                    "template": {
                        "metadata": {"labels": {"app.kubernetes.io/name": "sparkplane-gc"}},
                        "spec": {
                            "serviceAccountName": service_account,
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "gc",
                                    "image": image,
                                    "args": [
                                        "sparkplane",
                                        "gc",
                                        *scope,
                                        "--older-than",
                                        older_than,
                                        "--in-cluster",
                                    ],
                                    "resources": {
                                        "requests": {"cpu": "50m", "memory": "96Mi"},
                                        "limits": {"memory": "256Mi"},
                                    },
                                }
                            ],
                        },
                    },
                }
            },
        },
    }
