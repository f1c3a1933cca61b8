"""classify_native: the state of a natively submitted app from its driver pod, executors, events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sparkplane.model import (
    AppPhase,
    AppState,
    Reason,
    classify_driver_pod,
    classify_native,
    is_finished,
)

NS = "spark-jobs"
DRIVER = "pyspark-pi-routine-bf20cae50b6a8253-driver"
DRIVER_UID = "3b10fa97-c847-4fce-b3e1-71f779cffbef"
URGENT_UID = "9d2e7c41-1f0b-4c55-a0f3-2b6c8e1d7a90"


def t(minute: int, second: int = 0) -> str:
    return f"2025-03-01T10:{minute:02d}:{second:02d}Z"


def at(minute: int, second: int = 0) -> datetime:
    return datetime(2025, 3, 1, 10, minute, second, tzinfo=UTC)


def driver(
    phase: str = "Running",
    *,
    state: dict[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    container: str = "spark-kubernetes-driver",
    restart_count: int = 0,
) -> dict[str, Any]:
    """A driver pod shaped like the one spark-submit creates."""
    container_state = state if state is not None else {"running": {"startedAt": t(0, 5)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": DRIVER,
            "namespace": NS,
            "uid": DRIVER_UID,
            "creationTimestamp": t(0),
            "labels": {"spark-role": "driver", "spark-app-selector": "spark-0245dc3d"},
            **(metadata or {}),
        },
        "spec": {
            "containers": [{"name": container, "image": "apache/spark:4.0.0"}],
            "nodeName": "worker-1",
            "restartPolicy": "Never",
            "priorityClassName": "routine",
        },
        "status": {
            "phase": phase,
            "startTime": t(0, 1),
            "conditions": conditions or [],
            "containerStatuses": [
                {
                    "name": container,
                    "image": "apache/spark:4.0.0",
                    "ready": phase == "Running",
                    "restartCount": restart_count,
                    "state": container_state,
                }
            ],
            **(status or {}),
        },
    }


def executor(n: int, phase: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": f"pythonpi-34b3597593d246a1-exec-{n}", "namespace": NS},
        "status": {"phase": phase},
    }


def test_running_driver_counts_executors_by_phase() -> None:
    execs = [executor(1, "Running"), executor(2, "Running"), executor(3, "Pending")]
    state = classify_native(driver(), execs, [])
    assert state.phase is AppPhase.RUNNING
    assert state.reason == Reason.NONE
    assert state.driver == DRIVER
    assert state.executors == {"pending": 1, "running": 2, "succeeded": 0, "failed": 0}
    assert state.since == at(0, 5)
    assert not is_finished(state)


def test_succeeded_pod_is_completed_since_container_finished() -> None:
    term = {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": t(7)}}
    state = classify_native(driver("Succeeded", state=term), [], [])
    assert (state.phase, state.reason, state.since) == (AppPhase.SUCCEEDED, "Completed", at(7))
    assert is_finished(state)


def test_failed_pod_reports_exit_code() -> None:
    term = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": t(3)}}
    state = classify_native(driver("Failed", state=term), [], [])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.ERROR)
    assert "exited with code 1" in state.message


def test_oom_killed_driver() -> None:
    term = {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": t(3)}}
    state = classify_native(driver("Failed", state=term), [], [])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.OOM_KILLED)


def test_driver_container_ended_while_a_sidecar_runs() -> None:
    pod = driver("Running", state={"terminated": {"exitCode": 0, "finishedAt": t(4)}})
    pod["status"]["containerStatuses"].append(
        {"name": "istio-proxy", "state": {"running": {"startedAt": t(0)}}}
    )
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.SUCCEEDED, Reason.COMPLETED)


def test_custom_driver_container_found_from_spec_order() -> None:
    term = {"terminated": {"exitCode": 2, "finishedAt": t(4)}}
    pod = driver("Failed", state=term, container="pyspark-pi")
    pod["status"]["containerStatuses"].insert(
        0, {"name": "log-shipper", "state": {"terminated": {"exitCode": 0}}}
    )
    state = classify_native(pod, [], [])
    assert "code 2" in state.message


def test_failed_init_container() -> None:
    pod = driver("Failed", state={"waiting": {"reason": "PodInitializing"}})
    pod["status"]["initContainerStatuses"] = [
        {"name": "spark-init", "state": {"terminated": {"exitCode": 3, "finishedAt": t(1)}}}
    ]
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.ERROR)
    assert "init container spark-init" in state.message


def test_unschedulable_driver() -> None:
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/3 nodes are available: 3 Insufficient cpu.",
        "lastTransitionTime": t(0, 2),
    }
    pod = driver("Pending", state={}, conditions=[cond])
    pod["status"]["containerStatuses"] = []
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.PENDING, Reason.UNSCHEDULABLE)
    assert state.message == "0/3 nodes are available: 3 Insufficient cpu."
    assert state.since == at(0, 2)


@pytest.mark.parametrize(
    "waiting_reason",
    ["ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError"],
)
def test_pending_container_problems_are_reasons(waiting_reason: str) -> None:
    message = 'Back-off pulling image "apache/spark:nope"'
    pod = driver("Pending", state={"waiting": {"reason": waiting_reason, "message": message}})
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.PENDING, waiting_reason)
    assert state.message == message


def test_plain_pending_since_creation() -> None:
    pod = driver("Pending", state={"waiting": {"reason": "ContainerCreating"}})
    assert classify_native(pod, [], []).reason == Reason.CONTAINER_CREATING
    pod["status"]["containerStatuses"] = []
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason, state.since) == (AppPhase.PENDING, Reason.NONE, at(0))


def preempted_event(message: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "Event",
        "metadata": {"name": f"{DRIVER}.17f1", "namespace": NS},
        "involvedObject": {"kind": "Pod", "name": DRIVER, "namespace": NS, "uid": DRIVER_UID},
        "reason": "Preempted",
        "message": message,
        "type": "Normal",
        "source": {"component": "default-scheduler"},
        "lastTimestamp": t(5),
        **extra,
    }


def test_preempted_running_driver_names_preemptor_from_related_object() -> None:
    cond = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
        "lastTransitionTime": t(5),
    }
    pod = driver("Running", conditions=[cond], metadata={"deletionTimestamp": t(5, 30)})
    related = {"kind": "Pod", "name": "pyspark-pi-driver-urgent", "namespace": NS}
    event = preempted_event(f"Preempted by pod {URGENT_UID} on node worker-1", related=related)
    state = classify_native(pod, [executor(1, "Running")], [event])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.PREEMPTED)
    assert state.preemptor == f"{NS}/pyspark-pi-driver-urgent"
    assert state.since == at(5)
    assert is_finished(state)


def test_preempted_with_old_message_format_and_no_related() -> None:
    event = preempted_event(f"Preempted by {NS}/pyspark-pi-driver-urgent on node worker-1")
    state = classify_native(driver("Running"), [], [event])
    assert state.reason == Reason.PREEMPTED
    assert state.preemptor == f"{NS}/pyspark-pi-driver-urgent"


def test_preempted_from_condition_only_has_no_preemptor() -> None:
    cond = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    term = {"terminated": {"exitCode": 143, "reason": "Error", "finishedAt": t(6)}}
    state = classify_native(driver("Failed", state=term, conditions=[cond]), [], [])
    assert (state.reason, state.preemptor) == (Reason.PREEMPTED, None)


def test_event_about_another_pod_is_ignored() -> None:
    event = preempted_event(f"Preempted by pod {URGENT_UID} on node worker-1")
    event["involvedObject"] = {"kind": "Pod", "name": "other-driver", "uid": "other-uid"}
    assert classify_native(driver("Running"), [], [event]).phase is AppPhase.RUNNING


def test_preempted_driver_already_deleted_is_found_from_events() -> None:
    event = preempted_event(f"Preempted by pod {URGENT_UID} on node worker-1")
    state = classify_native(None, [], [event], driver_name=DRIVER)
    assert (state.phase, state.reason, state.preemptor) == (
        AppPhase.FAILED,
        Reason.PREEMPTED,
        URGENT_UID,
    )


def test_volcano_eviction_because_of_preempt() -> None:
    event = {
        "involvedObject": {"kind": "Pod", "name": DRIVER, "namespace": NS},
        "reason": "Evict",
        "type": "Warning",
        "message": "Pod is evicted, because of preempt",
        "lastTimestamp": t(5),
    }
    state = classify_native(None, [], [event], driver_name=DRIVER)
    assert state.reason == Reason.PREEMPTED


def test_missing_driver_without_explanation() -> None:
    state = classify_native(None, [], [], driver_name=DRIVER)
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.DRIVER_MISSING)
    assert DRIVER in state.message


def test_kubelet_eviction_sets_status_reason() -> None:
    pod = driver(
        "Failed",
        state={"terminated": {"exitCode": 137, "reason": "Error", "finishedAt": t(8)}},
        status={"reason": "Evicted", "message": "The node was low on resource: memory."},
    )
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.EVICTED)
    assert "low on resource" in state.message


@pytest.mark.parametrize(
    ("disruption", "reason"),
    [
        ("EvictionByEvictionAPI", Reason.EVICTED),
        ("DeletionByTaintManager", Reason.EVICTED),
        ("TerminationByKubelet", Reason.EVICTED),
        ("DeletionByPodGC", Reason.NODE_LOST),
    ],
)
def test_disruption_target_reasons(disruption: str, reason: Reason) -> None:
    cond = {"type": "DisruptionTarget", "status": "True", "reason": disruption}
    pod = driver("Running", conditions=[cond], metadata={"deletionTimestamp": t(9)})
    assert classify_native(pod, [], []).reason == reason


def test_disruption_target_false_is_not_a_disruption() -> None:
    cond = {"type": "DisruptionTarget", "status": "False", "reason": "PreemptionByScheduler"}
    assert classify_native(driver("Running", conditions=[cond]), [], []).phase is AppPhase.RUNNING


def test_deleted_by_user_is_killed() -> None:
    pod = driver(
        "Running", metadata={"deletionTimestamp": t(4, 30), "deletionGracePeriodSeconds": 30}
    )
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason, state.since) == (AppPhase.FAILED, Reason.KILLED, at(4))


def test_failure_before_deletion_stays_a_failure() -> None:
    term = {"terminated": {"exitCode": 1, "finishedAt": t(2)}}
    meta = {"deletionTimestamp": t(9, 30), "deletionGracePeriodSeconds": 30}
    state = classify_native(driver("Failed", state=term, metadata=meta), [], [])
    assert state.reason == Reason.ERROR


def test_failure_caused_by_deletion_is_killed() -> None:
    term = {"terminated": {"exitCode": 143, "finishedAt": t(9, 5)}}
    meta = {"deletionTimestamp": t(9, 30), "deletionGracePeriodSeconds": 30}
    assert classify_native(driver("Failed", state=term, metadata=meta), [], []).reason == "Killed"


def test_succeeded_pod_being_deleted_is_still_a_success() -> None:
    term = {"terminated": {"exitCode": 0, "finishedAt": t(7)}}
    pod = driver("Succeeded", state=term, metadata={"deletionTimestamp": t(30)})
    assert classify_native(pod, [], []).phase is AppPhase.SUCCEEDED


def test_active_deadline_exceeded_is_timed_out() -> None:
    pod = driver(
        "Failed",
        state={"terminated": {"exitCode": 137, "finishedAt": t(10)}},
        status={"reason": "DeadlineExceeded", "message": "Pod was active on the node longer than"},
    )
    assert classify_native(pod, [], []).reason == Reason.TIMED_OUT


def test_state_is_frozen_and_prints_reason() -> None:
    state = AppState(AppPhase.FAILED, Reason.PREEMPTED)
    with pytest.raises(AttributeError):
        state.phase = AppPhase.RUNNING  # type: ignore[misc]
    assert str(state) == "Failed(Preempted)"
    assert str(AppState(AppPhase.RUNNING)) == "Running"


# -- a lost node is not an end (issue 26, finding 8) --------------------------------------------
NOT_READY = {"type": "Ready", "status": "False", "lastTransitionTime": t(6)}
CONTAINERS_READY = {"type": "ContainersReady", "status": "True", "lastTransitionTime": t(0, 5)}
TAINT_MANAGER = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
UNRESPONSIVE = {
    "reason": "NodeLost",
    "message": f"Node worker-1 which was running pod {DRIVER} is unresponsive",
}


def _lost(state: AppState) -> None:
    assert (state.phase, state.reason) == (AppPhase.RUNNING, Reason.UNKNOWN)
    assert not is_finished(state)
    assert "the driver may still run" in state.message


def test_node_controller_marking_the_driver_not_ready_is_not_an_end() -> None:
    state = classify_native(driver(conditions=[NOT_READY, CONTAINERS_READY]), [], [])
    _lost(state)
    assert "node worker-1 is not ready" in state.message and state.since == at(6)


def test_taint_manager_deletion_on_a_lost_node_keeps_waiting() -> None:
    pod = driver(
        conditions=[NOT_READY, CONTAINERS_READY, TAINT_MANAGER],
        metadata={"deletionTimestamp": t(11), "deletionGracePeriodSeconds": 30},
    )
    _lost(classify_native(pod, [], []))
    # the operator's view (classify_driver_pod) is unchanged: a disrupted driver is evicted
    assert classify_driver_pod(pod).reason == Reason.EVICTED
    # once the pod is gone, it is an end
    gone = classify_native(pod, [], [], deleted=True)
    assert (gone.phase, gone.reason) == (AppPhase.FAILED, Reason.EVICTED)


def test_node_lost_status_reason_and_phase_unknown_are_not_ends() -> None:
    state = classify_native(driver(status=UNRESPONSIVE), [], [])
    _lost(state)
    assert "is unresponsive" in state.message
    state = classify_native(driver("Unknown"), [], [])
    _lost(state)
    assert "phase Unknown" in state.message
    pending = classify_native(driver("Pending", state={}, status=UNRESPONSIVE), [], [])
    assert (pending.phase, pending.reason) == (AppPhase.PENDING, Reason.UNKNOWN)


def test_a_real_end_on_a_lost_node_is_still_an_end() -> None:
    term = {"terminated": {"exitCode": 0, "finishedAt": t(9)}}
    done = driver("Succeeded", state=term, conditions=[NOT_READY, CONTAINERS_READY])
    assert classify_native(done, [], []).phase is AppPhase.SUCCEEDED
    failed = driver("Failed", state={"terminated": {"exitCode": 1}}, status=UNRESPONSIVE)
    state = classify_native(failed, [], [])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.NODE_LOST)


def test_not_ready_for_the_pods_own_reasons_is_not_a_lost_node() -> None:
    probe = {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"}
    assert classify_native(driver(conditions=[NOT_READY, probe]), [], []).reason == Reason.NONE
    gates = {**NOT_READY, "reason": "ReadinessGatesNotReady"}
    state = classify_native(driver(conditions=[gates, CONTAINERS_READY]), [], [])
    assert (state.phase, state.reason) == (AppPhase.RUNNING, Reason.NONE)


# --- Kueue's Pod integration (a native app naming a queue; docs/queues.md) -----------------


def _gated(pod: dict[str, Any]) -> dict[str, Any]:
    pod["spec"].pop("nodeName", None)
    pod["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team"
    return pod


def test_a_driver_kueue_holds_is_pending_admission_naming_its_queue() -> None:
    pod = _gated(driver("Pending", state={"waiting": {"reason": "ContainerCreating"}}))
    pod["status"].pop("containerStatuses", None)
    pod["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.PENDING, Reason.ADMISSION_PENDING)
    assert "LocalQueue 'team'" in state.message and f"workloads -n {NS}" in state.message
    assert not is_finished(state)


def test_a_driver_kueue_stopped_is_evicted_by_kueue() -> None:
    when = t(3)
    pod = driver(
        conditions=[
            {
                "type": "TerminationTarget",
                "status": "True",
                "reason": "WorkloadEvictedDueToPreempted",
                "message": "Preempted to accommodate a workload (UID: x) due to prioritization",
                "lastTransitionTime": when,
            }
        ],
        metadata={"deletionTimestamp": t(3, 30), "deletionGracePeriodSeconds": 30},
    )
    state = classify_native(pod, [], [])
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.EVICTED)
    assert state.message.startswith("evicted by Kueue: Preempted to accommodate")
    assert state.since == at(3)


def test_a_driver_gone_after_kueue_stopped_it_is_evicted_by_kueue() -> None:
    stopped = {
        "reason": "Stopped",
        "message": "Preempted to accommodate a workload",
        "involvedObject": {"kind": "Pod", "name": DRIVER, "namespace": NS},
        "source": {"component": "pod-kueue-controller"},
        "lastTimestamp": t(4),
    }
    state = classify_native(None, [], [stopped], driver_name=DRIVER)
    assert (state.phase, state.reason) == (AppPhase.FAILED, Reason.EVICTED)
    assert state.message == "evicted by Kueue: Preempted to accommodate a workload"
