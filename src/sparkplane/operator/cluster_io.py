"""The I/O half of SparkCluster reconciliation (the runner's workers call :func:`reconcile`).

Reads the cluster's StatefulSets (cache first; a live read before concluding one vanished),
calls the pure :func:`~sparkplane.operator.cluster.decide_cluster`, runs its actions and writes
``.status`` through the status subresource, retrying on 409 Conflict, as for applications.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkplane.errors import ConflictError, NotFoundError
from sparkplane.operator import actions
from sparkplane.operator import states as st
from sparkplane.operator.cluster import C, Obj, decide_cluster

if TYPE_CHECKING:
    from sparkplane.operator.runner import Key, Operator


def reconcile(op: Operator, key: Key) -> float | None:
    """The I/O half for one SparkCluster (called by the runner's workers)."""
    cr = op.current(key)
    if cr is None or (cr.get("metadata") or {}).get("deletionTimestamp"):
        return None
    _, namespace, name = key
    for _ in range(5):
        found: dict[str, Obj | None] = {}
        for role in ("master", "worker"):
            cached = next(
                (
                    i.get(namespace, f"{name}-{role}")
                    for i in op.statefulsets
                    if i.get(namespace, f"{name}-{role}")
                ),
                None,
            )
            if (
                cached is None
                and st.current_summary(cr.get("status"), cluster=True) == C.RUNNING_HEALTHY
            ):
                cached = op.kube.get_or_none("apps/v1", "StatefulSet", f"{name}-{role}", namespace)
            found[role] = cached
        decision = decide_cluster(cr, found, op.clock(), op.name)
        try:
            actions.run(op.kube, decision.actions, op.requests)
        except actions.CreateRejected as exc:
            decision = decide_cluster(cr, found, op.clock(), op.name, create_error=str(exc))
            actions.run(op.kube, decision.actions, op.requests)
        if decision.status is not None:
            try:
                written = op.kube.replace({**cr, "status": decision.status}, subresource="status")
            except ConflictError:
                cr = op.kube.get("spark.apache.org/v1", "SparkCluster", name, namespace)
                continue
            except NotFoundError:
                return None
            written.setdefault("apiVersion", cr.get("apiVersion"))
            written.setdefault("kind", "SparkCluster")
            op.remember(key, written)
            for transition in decision.transitions:
                op.metrics.observe(transition)
                op.events.record(written, transition)
        return decision.requeue_after
    raise ConflictError(f"SparkCluster {namespace}/{name}: status kept changing")
