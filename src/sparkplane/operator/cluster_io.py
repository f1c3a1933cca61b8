"""The SparkCluster kind for the generic loop: its StatefulSets in, ``decide_cluster`` out.

Owns the index of the StatefulSets the operator created for clusters (from their informer's
events) and the live read before concluding that one vanished (only while the cluster is
``RunningHealthy``, where a missing StatefulSet means ``Failed``). Decisions come from the pure
:func:`~sparkplane.operator.cluster.decide_cluster`; writing, conflict retry and fencing are the
loop's (:mod:`sparkplane.operator.loop`). Called by the runner. Writes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from sparkplane.kube import Kube
from sparkplane.operator import states as st
from sparkplane.operator.cluster import C, decide_cluster
from sparkplane.operator.decision import Decision
from sparkplane.operator.loop import Key, Watch
from sparkplane.operator.naming import OPERATOR_NAME_LABEL

Obj = dict[str, Any]
CLUSTER = "SparkCluster"


class ClusterAdapter:
    """SparkClusters: StatefulSets in, :func:`decide_cluster` out."""

    kind = CLUSTER
    api_version = "spark.apache.org/v1"

    def __init__(self, kube: Kube, operator_name: str, clock: Callable[[], datetime]) -> None:
        self.kube, self.operator_name, self.clock = kube, operator_name, clock
        self._lock = threading.Lock()
        self._sets: dict[tuple[str, str], Obj] = {}

    def watches(self) -> Sequence[Watch]:
        selector = f"{OPERATOR_NAME_LABEL}={self.operator_name}"
        return (Watch("apps/v1", "StatefulSet", selector, self._on_statefulset),)

    def _on_statefulset(self, event: str, obj: Obj) -> Iterable[Key]:
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        with self._lock:
            if event == "DELETED":
                self._sets.pop((namespace, name), None)
            else:
                self._sets[(namespace, name)] = obj
        return tuple(
            (CLUSTER, namespace, str(ref["name"]))
            for ref in meta.get("ownerReferences") or []
            if ref.get("kind") == CLUSTER
        )

    def resync(self) -> None:
        return None

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Decision:
        namespace, name = str(cr["metadata"]["namespace"]), str(cr["metadata"]["name"])
        running = st.current_summary(cr.get("status"), cluster=True) == C.RUNNING_HEALTHY
        found: dict[str, Obj | None] = {}
        for role in ("master", "worker"):
            with self._lock:
                cached = self._sets.get((namespace, f"{name}-{role}"))
            if cached is None and running:
                cached = self.kube.get_or_none(
                    "apps/v1", "StatefulSet", f"{name}-{role}", namespace
                )
            found[role] = cached
        return decide_cluster(
            cr, found, self.clock(), self.operator_name, create_error=create_error
        )
