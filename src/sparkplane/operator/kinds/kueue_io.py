"""Kueue's Workloads as the SparkApplication adapter observes them.

Owns :func:`served` (does the API server serve ``kueue.x-k8s.io`` Workloads? the runner watches
them only then) and :class:`WorkloadIndex`: the Workloads the operator made (its
``spark.operator/name`` label), keyed by the uid of the SparkApplication that controls them,
never its name (as the pod index: a resource deleted and created again never sees its
predecessor's Workloads). An event returns the application to reconcile, so Kueue's admission
or eviction wakes the app at once. The Workloads themselves are built and judged by the pure
:mod:`sparkplane.operator.core.workload`. Called by
:class:`~sparkplane.operator.kinds.app_adapter.AppAdapter` under its lock. Reads nothing itself
but :func:`served`, :func:`read_flavors` (the ResourceFlavors an admission names, read when
the driver may be created: a GET each, as Kueue's integrations read them at start) and
:func:`read_priority` (the priority class a Workload about to be created takes its priority
from: a GET of the one named, a LIST of PriorityClasses only when none is named).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sparkplane.kube import Kube
from sparkplane.operator.core.priority import ClassRef, global_default
from sparkplane.operator.core.workload import admission, flavor_names
from sparkplane.vocab import (
    KUEUE_API_VERSION,
    KUEUE_GROUP,
    PRIORITY_CLASS,
    RESOURCE_FLAVOR,
    SCHEDULING_API_VERSION,
    SPARK_APPLICATION,
    WORKLOAD,
    owner_refs,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def served(kube: Kube) -> bool:
    """Whether the API server serves Kueue's Workloads (False: Kueue is not installed)."""
    if kube.serves(KUEUE_API_VERSION, WORKLOAD):
        return True
    log.info("%s %s is not served: queued apps fail", KUEUE_API_VERSION, WORKLOAD)
    return False


def read_flavors(kube: Kube, workloads: Iterable[Obj]) -> dict[str, Obj | None]:
    """The ResourceFlavors (cluster-scoped) the admitted ``workloads`` name, by name (None: not
    found). Read, not watched: the operator needs them only at the moment it creates a driver
    (its role may ``get`` them, nothing more)."""
    names = sorted(
        {n for w in workloads if (found := admission(w)) is not None for n in flavor_names(found)}
    )
    return {n: kube.get_or_none(KUEUE_API_VERSION, RESOURCE_FLAVOR, n) for n in names}


def read_priority(kube: Kube, ref: ClassRef) -> Obj | None:
    """The priority class ``ref`` names (None: not found): a WorkloadPriorityClass
    (``kueue.x-k8s.io``) or a PriorityClass (``scheduling.k8s.io``), both cluster-scoped; for
    the default ref, the globalDefault PriorityClass of a LIST (None: none). Read when a
    Workload is about to be created, not watched (its role may ``get`` them, and ``list``
    PriorityClasses)."""
    if ref.is_default:
        return global_default(kube.list(SCHEDULING_API_VERSION, PRIORITY_CLASS))
    version = KUEUE_API_VERSION if ref.group == KUEUE_GROUP else SCHEDULING_API_VERSION
    return kube.get_or_none(version, ref.kind, ref.name)


@dataclass
class WorkloadIndex:
    """Workloads by the uid of their SparkApplication (see the module docstring)."""

    _by_app: dict[str, dict[str, Obj]] = field(default_factory=dict)  # app uid -> name -> wl

    def update(self, event: str, workload: Obj) -> tuple[str, str, str] | None:
        """Take one informer event; returns (apiVersion, namespace, name) of the application
        that controls the Workload, None for one no SparkApplication controls."""
        refs = [r for r in owner_refs(workload, SPARK_APPLICATION) if r.get("uid")]
        if not refs:
            return None
        ref = refs[0]
        meta = workload.get("metadata") or {}
        app_uid, name = str(ref["uid"]), str(meta.get("name") or "")
        bucket = self._by_app.setdefault(app_uid, {})
        if event == "DELETED":
            bucket.pop(name, None)
            if not bucket:
                self._by_app.pop(app_uid, None)
        else:
            bucket[name] = workload
        return (
            str(ref.get("apiVersion") or ""),
            str(meta.get("namespace") or ""),
            str(ref.get("name") or ""),
        )

    def of(self, app_uid: str) -> tuple[Obj, ...]:
        """The Workloads the application ``app_uid`` controls (every attempt's)."""
        return tuple(self._by_app.get(app_uid, {}).values())
