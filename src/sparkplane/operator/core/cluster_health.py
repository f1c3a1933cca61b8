"""When a SparkCluster's pods have failed for good: the rule ``decide_cluster`` fails clusters by.

Owns the crash rule (docs/operator.md, "SparkCluster"): a master or worker pod has failed for
good when its Spark container (``master``/``worker``) is not running and either has restarted
at least :data:`CRASH_RESTARTS` times after exiting non-zero (it crash-loops: a bad option, a
port taken, a JVM that cannot start), or waits on an image that can never be had
(``InvalidImageName``, ``ErrImageNeverPull``), or the pod itself is ``Failed``. The cluster has
failed when its master has, or when so many workers have that fewer than ``minWorkers`` can
run. Transient trouble (one restart, an image still being pulled, a pod pending on resources)
is not failure: the cluster then simply is not Ready yet.

Called by :func:`sparkplane.operator.core.cluster.decide_cluster`. Pure: pods in, a message out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparkplane.vocab import POD_FAILED

Obj = dict[str, Any]

#: Restarts after a non-zero exit before a crash-looping container counts as failed for good
#: (two of the kubelet's back-offs: not a blip).
CRASH_RESTARTS = 2
NEVER_STARTS = frozenset({"InvalidImageName", "ErrImageNeverPull"})


def _container_status(pod: Mapping[str, Any], role: str) -> Obj | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return next((s for s in statuses if s.get("name") == role), None)


def crash(pod: Mapping[str, Any], role: str) -> str | None:
    """Why ``pod``'s ``role`` container has failed for good, or None if it has not."""
    name = (pod.get("metadata") or {}).get("name", "?")
    status = pod.get("status") or {}
    if status.get("phase") == POD_FAILED:
        why = status.get("reason") or status.get("message") or "no reason given"
        return f"pod {name} failed: {why}"
    cs = _container_status(pod, role)
    if cs is None or cs.get("ready"):
        return None
    state = cs.get("state") or {}
    if state.get("running"):
        return None  # (re)started: it may yet become Ready
    waiting = state.get("waiting") or {}
    if waiting.get("reason") in NEVER_STARTS:
        return f"pod {name}: {waiting['reason']}: {waiting.get('message') or ''}".rstrip(": ")
    restarts = int(cs.get("restartCount") or 0)
    ended = state.get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
    code = int(ended.get("exitCode") or 0)
    if restarts < CRASH_RESTARTS or code == 0:
        return None
    reason = ended.get("reason") or "Error"
    return f"pod {name}: container {role} exited {code} ({reason}) and restarted {restarts} times"


def failure(
    pods: Mapping[str, Sequence[Mapping[str, Any]]],
    workers_wanted: int,
    min_workers: int,
) -> str | None:
    """Why the cluster has failed for good, given its pods by role, or None.

    ``workers_wanted`` is the worker StatefulSet's ``replicas``; the workers fail the cluster
    when the ones that have not crashed are fewer than ``min_workers``.
    """
    for pod in pods.get("master") or ():
        why = crash(pod, "master")
        if why:
            return f"The master failed: {why}"
    crashed = [why for pod in pods.get("worker") or () if (why := crash(pod, "worker"))]
    if crashed and workers_wanted - len(crashed) < min_workers:
        return (
            f"{len(crashed)} of {workers_wanted} worker(s) failed, fewer than minWorkers "
            f"({min_workers}) can run: {crashed[0]}"
        )
    return None
