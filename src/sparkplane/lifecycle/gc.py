"""TTL clean-up of finished native applications (the seed's CronJob idea, done properly).

Deleting a finished driver pod (Background propagation) lets the garbage collector remove its
ConfigMaps, Services and Ingress. The TTL is per app (annotation or label
``sparkplane.io/ttl-seconds-after-finished``, set by ``submit --ttl``) or the default given here.
Also deletes half-made apps: unfinished driver pods past a grace period (``--grace``, 5
minutes) whose announced ConfigMaps, Services, Ingresses or PVCs never came (a submitter killed
half-way). Never a finished app, nor one whose submitter recorded that every dependent was
created: Spark deletes its own Services when it stops (the rule: ``lifecycle.halfmade``).
Across all namespaces, system namespaces (:data:`PROTECTED_NAMESPACES`, ``kube-*``) are never
touched unless named explicitly with ``-n``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sparkplane.errors import KubeError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.lifecycle.apps import is_native_driver
from sparkplane.lifecycle.archive_logs import archive_driver
from sparkplane.lifecycle.archive_logs import prune as prune_archive
from sparkplane.lifecycle.halfmade import (
    CHECKED_KINDS,
    DEFAULT_GRACE,
    Ref,
    dependents_of,
    half_made,
    may_be_half_made,
    owned_by,
)
from sparkplane.lifecycle.ttl import TtlDecision, plan_cleanup
from sparkplane.version import SPARKPLANE_IMAGE

Obj = dict[str, Any]
#: Never swept by ``gc -A``: the cluster's own namespaces and the operator's default one.
PROTECTED_NAMESPACES = frozenset(
    {"kube-system", "kube-public", "kube-node-lease", "spark-operator"}
)


def protected(namespace: str) -> bool:
    """True for a namespace ``gc`` across all namespaces leaves alone."""
    return namespace in PROTECTED_NAMESPACES or namespace.startswith("kube-")


def collect_garbage(
    kube: Kube,
    namespace: str | None,
    *,
    default_ttl: timedelta | None,
    dry_run: bool = False,
    now: datetime | None = None,
    grace: timedelta = DEFAULT_GRACE,
) -> list[TtlDecision]:
    """Plan (and unless ``dry_run`` carry out) the deletion of expired finished drivers and of
    half-made ones older than ``grace``. ``namespace=None`` skips protected namespaces."""
    when = now or datetime.now(UTC)
    pods = [
        p
        for p in kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
        if is_native_driver(p)
        and (namespace is not None or not protected(p["metadata"].get("namespace", "")))
    ]
    decisions = plan_cleanup(pods, when, default_ttl)
    for i, (pod, decision) in enumerate(zip(pods, decisions, strict=True)):
        if not decision.delete:
            found = _half_made(kube, pod, when, grace)
            if found is not None:
                decisions[i] = TtlDecision(decision.namespace, decision.name, True, found)
    if not dry_run:
        for d in decisions:
            if d.delete:
                archive_driver(kube, d.namespace, d.name, "expired (gc)")
                try:
                    kube.delete("v1", "Pod", d.name, d.namespace, propagation="Background")
                except NotFoundError:
                    pass
        scope = None if namespace is None else [namespace]  # archived logs (and event logs)
        prune_archive(when, kube=kube, namespaces=scope)  # past their retention
    return decisions


def _half_made(kube: Kube, pod: Obj, now: datetime, grace: timedelta) -> str | None:
    """The reason ``pod`` is half-made, or None (also when a dependent cannot be checked:
    never delete on a guess)."""
    refs = dependents_of(pod)
    if not refs or not may_be_half_made(pod, now, grace):
        return None
    meta = pod["metadata"]
    present: list[Ref] = []
    for ref in refs:
        if ref[1] not in CHECKED_KINDS:
            continue
        try:
            found = kube.get_or_none(ref[0], ref[1], ref[2], meta.get("namespace"))
        except KubeError:
            return None
        if owned_by(found, meta.get("uid", "")):
            present.append(ref)
    result = half_made(pod, present, now, grace=grace)
    return result.reason if result else None


def gc_bundle(
    namespace: str,
    *,
    older_than: str = "24h",
    schedule: str = "*/10 * * * *",
    image: str = SPARKPLANE_IMAGE,
    service_account: str = "sparkplane-gc",
    log_archive: str = "kube",
) -> list[Obj]:
    """Everything to deploy the clean-up in one namespace: its least-privilege RBAC
    (``sparkplane rbac gc``) and the CronJob running ``sparkplane gc`` under it."""
    from sparkplane.security.rbac import bodies, render

    rbac = bodies(render("gc", namespace, service_account=service_account))
    job = gc_cronjob(
        namespace,
        older_than=older_than,
        schedule=schedule,
        image=image,
        service_account=service_account,
        log_archive=log_archive,
    )
    return [*rbac, job]


DEPLOY_NAMESPACE = "spark-jobs"
DEPLOY_HEADER = (
    "# Generated by `python -m sparkplane.lifecycle.gc` (sparkplane.lifecycle.gc.gc_bundle);\n"
    "# do not edit. Same as: sparkplane gc --cronjob -n spark-jobs --older-than 24h, after\n"
    "# the Namespace (so that `kubectl apply -f deploy/gc/` works on an empty cluster)\n"
)


def deploy_yaml() -> str:
    """The text of ``deploy/gc/cronjob.yaml``: the Namespace, then :func:`gc_bundle`."""
    import yaml

    space = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DEPLOY_NAMESPACE}}
    return DEPLOY_HEADER + yaml.safe_dump_all(
        [space, *gc_bundle(DEPLOY_NAMESPACE)], sort_keys=False
    )


def gc_cronjob(
    namespace: str,
    *,
    older_than: str = "24h",
    schedule: str = "*/10 * * * *",
    image: str = SPARKPLANE_IMAGE,
    service_account: str = "sparkplane-gc",
    all_namespaces: bool = False,
    log_archive: str = "kube",
) -> Obj:
    """A CronJob running ``sparkplane gc`` in-cluster (RBAC: ``sparkplane rbac gc``); it
    archives the drivers it deletes to ``log_archive`` (``kube``: ConfigMaps; ``off``)."""
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
                                    "imagePullPolicy": "IfNotPresent",
                                    "args": [  # the image's entrypoint: `tini -- sparkplane`
                                        "gc",
                                        *scope,
                                        "--older-than",
                                        older_than,
                                        "--in-cluster",
                                    ],
                                    "env": [
                                        {"name": "SPARKPLANE_LOG_ARCHIVE", "value": log_archive}
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


def render_files() -> dict[str, str]:
    """The generated ``deploy/gc`` files."""
    return {"cronjob.yaml": deploy_yaml()}


if __name__ == "__main__":
    from sparkplane import deployfiles

    raise SystemExit(deployfiles.main(render_files, "deploy/gc", None))
