"""The SparkCluster kind for the generic loop: its StatefulSets and pods in, ``decide_cluster`` out.

Owns the indexes of the StatefulSets the operator created for clusters and of their pods
(from their informers' events; a pod belongs to the cluster whose ``<name>-master`` or
``<name>-worker`` StatefulSet owns it), and the live read before concluding that a
StatefulSet vanished (only while the cluster is ``RunningHealthy``, where a missing
StatefulSet means ``Failed``). The pods (those of the current StatefulSets, by owner uid) let
``decide_cluster`` fail a cluster whose master or workers crash-loop. Decisions come from the pure
:func:`~sparkplane.operator.core.cluster.decide_cluster`; writing, conflict retry and fencing are
the loop's (:mod:`sparkplane.operator.runtime.loop`). Called by the runner. Writes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from sparkplane.kube import Kube
from sparkplane.operator.core import states as st
from sparkplane.operator.core.cluster import C, decide_cluster
from sparkplane.operator.core.decision import Decision
from sparkplane.operator.core.naming import CLUSTER_NAME_LABEL, OPERATOR_NAME_LABEL
from sparkplane.operator.core.settings import Limits
from sparkplane.operator.kinds.adapter import Key, Watch
from sparkplane.vocab import APACHE_API_VERSION, SPARK_CLUSTER

Obj = dict[str, Any]
CLUSTER = SPARK_CLUSTER


class ClusterAdapter:
    """SparkClusters: StatefulSets in, :func:`decide_cluster` out."""

    kind = CLUSTER
    api_version = APACHE_API_VERSION

    def __init__(
        self,
        kube: Kube,
        operator_name: str,
        clock: Callable[[], datetime],
        limits: Limits | None = None,
    ) -> None:
        self.kube, self.operator_name, self.clock = kube, operator_name, clock
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._sets: dict[tuple[str, str], Obj] = {}
        self._pods: dict[tuple[str, str], dict[str, Obj]] = {}  # by (namespace, StatefulSet)

    def watches(self) -> Sequence[Watch]:
        selector = f"{OPERATOR_NAME_LABEL}={self.operator_name}"
        return (
            Watch("apps/v1", "StatefulSet", selector, self._on_statefulset),
            Watch("v1", "Pod", f"{selector},{CLUSTER_NAME_LABEL}", self._on_pod),
        )

    def _on_pod(self, event: str, pod: Obj) -> Iterable[Key]:
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        keys: list[Key] = []
        for ref in meta.get("ownerReferences") or []:
            owner = str(ref.get("name"))
            if ref.get("kind") != "StatefulSet" or not owner.endswith(("-master", "-worker")):
                continue
            with self._lock:
                bucket = self._pods.setdefault((namespace, owner), {})
                if event == "DELETED":
                    bucket.pop(name, None)
                else:
                    bucket[name] = pod
                if not bucket:
                    self._pods.pop((namespace, owner), None)
            keys.append((CLUSTER, namespace, owner.rsplit("-", 1)[0]))
        return tuple(keys)

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
        pods: dict[str, list[Obj]] = {}
        for role in ("master", "worker"):
            with self._lock:
                cached = self._sets.get((namespace, f"{name}-{role}"))
                indexed = list(self._pods.get((namespace, f"{name}-{role}"), {}).values())
            if cached is None and running:
                cached = self.kube.get_or_none(
                    "apps/v1", "StatefulSet", f"{name}-{role}", namespace
                )
            found[role] = cached
            # only the pods of this StatefulSet, not those of an earlier one of the same name
            uid = ((cached or {}).get("metadata") or {}).get("uid")
            pods[role] = [p for p in indexed if uid and _owner_uid(p) == uid]
        return decide_cluster(
            cr,
            found,
            self.clock(),
            self.operator_name,
            create_error=create_error,
            pods=pods,
            limits=self.limits,
        )


def _owner_uid(pod: Obj) -> str | None:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return next((str(r.get("uid")) for r in refs if r.get("kind") == "StatefulSet"), None)
