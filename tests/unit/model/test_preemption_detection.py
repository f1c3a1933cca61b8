"""find_preemption and the scheduler's Preempted message formats."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sparkplane.model.preemption import (
    Preemption,
    find_preemption,
    parse_preempted_message,
    resolve_preemptor,
)

NS = "spark-jobs"
VICTIM = {
    "kind": "Pod",
    "metadata": {"name": "routine-driver", "namespace": NS, "uid": "victim-uid"},
    "spec": {"nodeName": "worker-2"},
    "status": {"phase": "Running"},
}
PREEMPTOR_UID = "5f6d3c1e-8a7b-4e2f-9c0d-1a2b3c4d5e6f"


def event(reason: str, message: str, when: str, **extra: Any) -> dict[str, Any]:
    return {
        "involvedObject": {"kind": "Pod", "name": "routine-driver", "namespace": NS},
        "reason": reason,
        "message": message,
        "lastTimestamp": when,
        **extra,
    }


def test_current_message_format_gives_uid_and_node() -> None:
    fields = parse_preempted_message(f"Preempted by pod {PREEMPTOR_UID} on node worker-2")
    assert fields == {"uid": PREEMPTOR_UID, "node": "worker-2"}


def test_old_message_format_gives_namespace_and_name() -> None:
    fields = parse_preempted_message("Preempted by spark-jobs/urgent-driver on node worker-2")
    assert fields == {"namespace": NS, "name": "urgent-driver", "node": "worker-2"}


def test_unrelated_message_gives_nothing() -> None:
    assert parse_preempted_message("Stopping container spark-kubernetes-driver") == {}


def test_newest_preempted_event_wins_and_events_v1_shape_is_read() -> None:
    old = event(
        "Preempted", "Preempted by spark-jobs/first on node worker-2", "2025-03-01T10:00:00Z"
    )
    new = {
        "apiVersion": "events.k8s.io/v1",
        "regarding": {"kind": "Pod", "name": "routine-driver", "namespace": NS},
        "related": {"kind": "Pod", "name": "second", "namespace": NS, "uid": PREEMPTOR_UID},
        "reason": "Preempted",
        "action": "Preempting",
        "note": f"Preempted by pod {PREEMPTOR_UID} on node worker-2",
        "eventTime": "2025-03-01T10:05:00.123456Z",
        "reportingController": "default-scheduler",
    }
    found = find_preemption(VICTIM, [new, old])
    assert found is not None
    assert found.preemptor == f"{NS}/second"
    assert found.preemptor_uid == PREEMPTOR_UID
    assert found.node == "worker-2"
    assert found.source == "event"
    assert found.at == datetime(2025, 3, 1, 10, 5, 0, 123456, tzinfo=UTC)
    assert found.victim == f"{NS}/routine-driver"


def test_uid_only_preemptor_is_resolved_from_pods() -> None:
    found = find_preemption(
        VICTIM,
        [event("Preempted", f"Preempted by pod {PREEMPTOR_UID} on node w", "2025-03-01T10:00:00Z")],
    )
    assert found is not None
    assert found.preemptor == PREEMPTOR_UID
    pods = [
        {"metadata": {"name": "noise", "namespace": NS, "uid": "x"}},
        {"metadata": {"name": "urgent-driver", "namespace": "prod", "uid": PREEMPTOR_UID}},
    ]
    assert resolve_preemptor(found, pods).preemptor == "prod/urgent-driver"
    assert resolve_preemptor(found, []).preemptor == PREEMPTOR_UID


def test_condition_used_when_no_event() -> None:
    pod = {
        **VICTIM,
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": "default-scheduler: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": "2025-03-01T10:05:00Z",
                }
            ],
        },
    }
    found = find_preemption(pod, [])
    assert found == Preemption(
        victim=f"{NS}/routine-driver",
        source="condition",
        message="default-scheduler: preempting to accommodate a higher priority pod",
        at=datetime(2025, 3, 1, 10, 5, tzinfo=UTC),
        node="worker-2",
    )


def test_kubelet_critical_pod_preemption() -> None:
    pod = {**VICTIM, "status": {"phase": "Failed", "reason": "Preempting", "message": "x"}}
    found = find_preemption(pod, [])
    assert found is not None
    assert found.source == "kubelet"


def test_other_events_are_not_preemption() -> None:
    events = [
        event("Killing", "Stopping container spark-kubernetes-driver", "2025-03-01T10:00:00Z"),
        event("FailedScheduling", "0/3 nodes are available", "2025-03-01T10:00:01Z"),
        event("Evicted", "The node was low on resource: memory.", "2025-03-01T10:00:02Z"),
    ]
    assert find_preemption(VICTIM, events) is None


def test_same_name_other_uid_is_not_this_pod() -> None:
    ev = event("Preempted", "Preempted by ns/x on node w", "2025-03-01T10:00:00Z")
    ev["involvedObject"]["uid"] = "a-previous-pod-with-the-same-name"
    assert find_preemption(VICTIM, [ev]) is None
