"""Kubeflow's ``status`` of a v1alpha1 SparkConnect, written from the one state machine's.

The operator runs a SparkConnect's server through the same :func:`~.reconciler.decide` as a
SparkApplication (:mod:`sparkplane.spec.kubeflow_connect`); the Apache-shaped status it evolves
is kept in ``status.sparkplane`` (as for a v1beta2 SparkApplication, :mod:`.kubeflow_status`)
and :func:`connect_status` writes beside it what Kubeflow's SparkConnect controller writes
(``api/v1alpha1/sparkconnect_types.go``, facts only): ``state`` (``Ready`` once the server
pod is Ready — its readiness probe is the gRPC port — else ``NotReady``; ``Completed`` or
``Failed`` once the state machine has ended it), the ``ServerPodReady`` condition (reasons
``ServerPodReady``, ``ServerPodNotReady``, ``Restarting``, ``Completed``,
``RestartLimitExceeded``; its ``lastTransitionTime`` moves only when its status or reason
does), ``server`` {``podName``, ``podIp``, ``serviceName``}, ``executors`` (executor pods
of the current server per lowercased phase), ``restartAttempts``, ``lastRestartTime``,
``observedGeneration``, ``startTime`` and ``lastUpdateTime`` (only when something else
changed, as Kubeflow: no write for nothing). Pure: the caller passes the time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparkplane.operator.core import states as st
from sparkplane.operator.core.kubeflow_status import INTERNAL, outcome
from sparkplane.operator.core.naming import OperatorIds, attempt_driver_pod_name, attempt_of
from sparkplane.spec.kubeflow_connect import server_pod_name, service_name
from sparkplane.vocab import APP_SELECTOR_LABEL, DRIVER_ROLE, EXECUTOR_ROLE, ROLE_LABEL

Obj = dict[str, Any]
A = st.AppStateSummary
READY, NOT_READY, FAILED, COMPLETED = "Ready", "NotReady", "Failed", "Completed"
CONDITION = "ServerPodReady"
UPDATED = "lastUpdateTime"


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("labels") or {}


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def state_and_reason(
    internal: Mapping[str, Any], server: Mapping[str, Any] | None
) -> tuple[str, str, str]:
    """(state, condition reason, condition message) for the Apache status ``internal`` and
    the current server pod (None: not created, or not seen yet)."""
    current = st.current_summary(internal)
    if isinstance(current, A) and current in st.APP_TERMINATED:
        ended, message, _ = outcome(internal)
        if ended == "COMPLETED":
            return COMPLETED, "Completed", "Server pod completed"
        return FAILED, "RestartLimitExceeded", message or "Server pod failed"
    if current == A.SCHEDULED_TO_RESTART:
        return NOT_READY, "Restarting", "Server pod is restarting"
    if server is not None and _pod_ready(server):
        return READY, "ServerPodReady", "Server pod is ready"
    why = str(((server or {}).get("status") or {}).get("message") or "")
    if server is None:  # not created yet: held by the backpressure says so
        why = str((internal.get("currentState") or {}).get("message") or "")
    return NOT_READY, "ServerPodNotReady", f"Server pod is not ready: {why}"


def _condition(before: Mapping[str, Any], state: str, reason: str, message: str, now: str) -> Obj:
    status = "True" if state == READY else "False"
    old: Mapping[str, Any] = next(
        (c for c in before.get("conditions") or [] if c.get("type") == CONDITION), {}
    )
    same = old.get("status") == status and old.get("reason") == reason
    return {
        "type": CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": old.get("lastTransitionTime") if same else now,
    }


def connect_status(
    cr: Mapping[str, Any],
    internal: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    now: str,
) -> Obj:
    """The whole ``.status`` of SparkConnect ``cr`` for the Apache status ``internal`` and
    the pods observed (its server pods and their executors); ``now`` in the API's format."""
    before = cr.get("status") or {}
    if not internal:
        return dict(before)
    meta = cr.get("metadata") or {}
    name = str(meta.get("name") or "")
    attempt = attempt_of(internal)
    app_id = OperatorIds.of(cr, attempt).app_id
    mine = [p for p in pods if _labels(p).get(APP_SELECTOR_LABEL) == app_id]
    server = next((p for p in mine if _labels(p).get(ROLE_LABEL) == DRIVER_ROLE), None)
    executors: dict[str, int] = {}
    for pod in mine:
        if _labels(pod).get(ROLE_LABEL) == EXECUTOR_ROLE:
            phase = str((pod.get("status") or {}).get("phase") or "Unknown").lower()
            executors[phase] = executors.get(phase, 0) + 1
    state, reason, message = state_and_reason(internal, server)
    server_status: Obj = {"serviceName": service_name(cr)}
    requested = A.DRIVER_REQUESTED.value in st.history_states(internal, with_previous=False)
    if server is not None or requested:
        pod_name = attempt_driver_pod_name(server_pod_name(name), attempt)
        server_status["podName"] = str(server["metadata"]["name"]) if server else pod_name
    ip = ((server or {}).get("status") or {}).get("podIP")
    if ip:
        server_status["podIp"] = str(ip)
    out: Obj = {
        "state": state,
        "conditions": [_condition(before, state, reason, message, now)],
        "server": server_status,
        "startTime": before.get("startTime") or now,
        INTERNAL: dict(internal),
    }
    if executors:
        out["executors"] = executors
    if meta.get("generation") is not None:
        out["observedGeneration"] = int(meta["generation"])
    if attempt:
        out["restartAttempts"] = attempt
        restarted = attempt_of(before.get(INTERNAL)) != attempt
        out["lastRestartTime"] = now if restarted else before.get("lastRestartTime") or now
    unchanged = {k: v for k, v in before.items() if k != UPDATED} == out
    out[UPDATED] = before.get(UPDATED) if unchanged and before.get(UPDATED) else now
    return out
