"""TTL clean-up of finished native applications (the seed's CronJob idea, done properly).

Deleting a finished driver pod (Background propagation) lets the garbage collector remove its
ConfigMaps, Services, Ingress and NetworkPolicy. The TTL is per app (annotation or label
``sparkplane.io/ttl-seconds-after-finished``, set by ``submit --ttl``) or the default given here.
Also deletes half-made apps: unfinished driver pods past a grace period (``--grace``, 5
minutes) whose announced ConfigMaps, Services, Ingresses or PVCs never came (a submitter killed
half-way). Never a finished app, nor one whose submitter recorded that every dependent was
created: Spark deletes its own Services when it stops (the rule: ``lifecycle.halfmade``).
Also ends Spark Connect sessions past their idle timeout or maximum lifetime
(:func:`sparkplane.usecases.session.session_expiry`): the CronJob is what ends them when no
client runs; and the newest sessions beyond their namespace's cap (a ResourceQuota entry,
:func:`sparkplane.usecases.session.over_limit`), which a race past ``session create``'s check
or a client that does not check can start.
Across all namespaces, system namespaces (:data:`PROTECTED_NAMESPACES`, ``kube-*``) are never
touched unless named explicitly with ``-n``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sparkplane.errors import KubeError, NotFoundError
from sparkplane.history.logs import archive_driver
from sparkplane.history.logs import prune as prune_archive
from sparkplane.kube import Kube
from sparkplane.model.apps import is_native_driver
from sparkplane.model.halfmade import (
    CHECKED_KINDS,
    DEFAULT_GRACE,
    Ref,
    dependents_of,
    half_made,
    may_be_half_made,
    owned_by,
)
from sparkplane.model.ttl import TtlDecision, plan_cleanup
from sparkplane.settings import Settings
from sparkplane.usecases.session import over_limit, session_expiry
from sparkplane.vocab import DRIVER_SELECTOR

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
    settings: Settings,
) -> list[TtlDecision]:
    """Plan (and unless ``dry_run`` carry out) the deletion of expired finished drivers and of
    half-made ones older than ``grace``, archiving each driver's logs where ``settings`` say
    first. ``namespace=None`` skips protected namespaces."""
    when = now or datetime.now(UTC)
    pods = [
        p
        for p in kube.list("v1", "Pod", namespace, label_selector=DRIVER_SELECTOR)
        if is_native_driver(p)
        and (namespace is not None or not protected(p["metadata"].get("namespace", "")))
    ]
    decisions = plan_cleanup(pods, when, default_ttl)
    for i, (pod, decision) in enumerate(zip(pods, decisions, strict=True)):
        ended = session_expiry(kube, pod, when) if not decision.delete else None
        if ended is not None:
            decisions[i] = TtlDecision(decision.namespace, decision.name, True, ended)
        elif not decision.delete:
            found = _half_made(kube, pod, when, grace)
            if found is not None:
                decisions[i] = TtlDecision(decision.namespace, decision.name, True, found)
    ending = {(d.namespace, d.name) for d in decisions if d.delete}
    beyond = over_limit(kube, pods, ending)  # sessions past their namespace's cap
    decisions = [
        TtlDecision(d.namespace, d.name, True, beyond[(d.namespace, d.name)])
        if (d.namespace, d.name) in beyond
        else d
        for d in decisions
    ]
    if not dry_run:
        for d in decisions:
            if d.delete:
                archive_driver(kube, d.namespace, d.name, "expired (gc)", settings=settings)
                try:
                    kube.delete("v1", "Pod", d.name, d.namespace, propagation="Background")
                except NotFoundError:
                    pass
        scope = None if namespace is None else [namespace]  # archived logs (and event logs)
        prune_archive(when, settings=settings, kube=kube, namespaces=scope)  # past their retention
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
