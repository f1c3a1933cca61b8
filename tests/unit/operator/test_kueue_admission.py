"""A queued SparkApplication (label ``kueue.x-k8s.io/queue-name``): ``decide`` creates the
attempt's Workload before any pod (``AdmissionPending``), starts the driver once Kueue admits it
(the admitted counts pinned, the pod-set updates applied), suspends and requeues it when Kueue
evicts it, deletes Workloads no attempt holds, and fails at once where Kueue is not served;
Kubeflow's v1beta2 resource goes the same way (its Workload owned by it)."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from sparkplane.operator.core.decision import CreateResources, DeleteResources, HoldExecutors
from sparkplane.operator.core.reconciler import (
    KUEUE_ADMISSION_PENDING,
    KUEUE_ADMITTED,
    KUEUE_EVICTED,
    KUEUE_QUOTA_EXCEEDED,
    KUEUE_QUOTA_HELD,
    RESUMED,
)
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.operator.core.states import SUSPEND_BY_KUEUE, SUSPEND_REASON
from sparkplane.operator.kinds.app_adapter import AppAdapter
from sparkplane.operator.kinds.kubeflow_io import KUBEFLOW_APP, KubeflowAdapter
from sparkplane.operator.runtime.actions import fold
from sparkplane.vocab import (
    EXEC_ID_LABEL,
    KUBEFLOW_API_VERSION,
    KUEUE_API_VERSION,
    QUEUE_NAME_LABEL,
    QUOTA_GATE,
    QUOTA_RELEASED_ANNOTATION,
    WORKLOAD,
)
from tests.unit.operator.opfixtures import UID, Walk, at, driver, executor, make_cr
from tests.unit.operator.test_kubeflow import kf_app

TOLERATION = {"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}


def queued_cr(**conf: str) -> dict[str, Any]:
    cr = make_cr(conf={"spark.executor.instances": "2", **conf})
    cr["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team"}
    return cr


def kinds(decision: Any, kind: type) -> list[Any]:
    return [a for a in decision.actions if isinstance(a, kind)]


def workload(
    name: str = "pi-0",
    *,
    admitted: int | None = None,
    evicted: str = "",
    updates: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The Workload as Kueue leaves it: pending, admitted (``admitted`` executors) or evicted."""
    conditions = [{"type": "QuotaReserved", "status": "False", "message": "insufficient cpu"}]
    status: dict[str, Any] = {"conditions": conditions}
    if admitted is not None:
        status["conditions"] = [
            {"type": "QuotaReserved", "status": "True"},
            {"type": "Admitted", "status": "True"},
        ]
        status["admission"] = {
            "clusterQueue": "shared",
            "podSetAssignments": [
                {"name": "driver", "count": 1},
                {"name": "executor", "count": admitted},
            ],
        }
        status["admissionChecks"] = [{"name": "check", "podSetUpdates": updates or []}]
    if evicted:
        status["conditions"].append(
            {"type": "Evicted", "status": "True", "reason": "Preempted", "message": evicted}
        )
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": WORKLOAD,
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "ownerReferences": [{"kind": "SparkApplication", "name": "pi", "uid": UID}],
        },
        "status": status,
    }


def properties(create: CreateResources) -> str:
    maps = [
        o
        for o in create.objects
        if o["kind"] == "ConfigMap" and "spark.properties" in o.get("data", {})
    ]
    return str(maps[0]["data"]["spark.properties"])


def test_a_queued_app_creates_its_workload_before_any_pod_and_waits() -> None:
    walk = Walk(queued_cr())
    decision = walk.step(0, kueue=True)
    assert walk.states == ["Submitted", "AdmissionPending"]
    (create,) = kinds(decision, CreateResources)
    (obj,) = create.objects  # the Workload only: no pod, no ConfigMap
    assert (obj["kind"], obj["metadata"]["name"], obj["spec"]["queueName"]) == (
        WORKLOAD,
        "pi-0",
        "team",
    )
    assert [(s["name"], s["count"]) for s in obj["spec"]["podSets"]] == [
        ("driver", 1),
        ("executor", 2),
    ]
    assert obj["metadata"]["ownerReferences"][0]["uid"] == UID
    assert obj["metadata"]["labels"]["spark.operator/name"]
    event = fold(decision.transitions)
    assert event is not None and event.reason == KUEUE_ADMISSION_PENDING
    # Kueue has not admitted it: nothing changes
    waiting = walk.step(5, kueue=True, workloads=(workload(),))
    assert waiting.status is None and waiting.actions == ()
    # the Workload vanished (deleted by someone, or a crash before the create): made again
    again = walk.step(6, kueue=True)
    assert walk.state == "AdmissionPending" and again.status is None
    assert [o["kind"] for a in kinds(again, CreateResources) for o in a.objects] == [WORKLOAD]


def test_admitted_the_driver_runs_with_the_admitted_count_and_the_pod_set_updates() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    updates = [
        {
            "name": "driver",
            "labels": {"team": "a"},
            "nodeSelector": {"pool": "spark"},
            "tolerations": [TOLERATION],
        },
        {
            "name": "executor",
            "labels": {"team": "a"},
            "annotations": {"cost": "7"},
            "nodeSelector": {"pool": "spark"},
            "tolerations": [TOLERATION],
        },
    ]
    decision = walk.step(3, kueue=True, workloads=(workload(admitted=2, updates=updates),))
    assert walk.states[-2:] == ["AdmissionPending", "DriverRequested"]
    (create,) = kinds(decision, CreateResources)
    pod = next(o for o in create.objects if o["kind"] == "Pod")
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["spec"]["nodeSelector"]["pool"] == "spark"
    assert TOLERATION in pod["spec"]["tolerations"]
    props = properties(create)
    assert "spark.executor.instances=2" in props
    assert "spark.kubernetes.executor.label.team=a" in props
    assert "spark.kubernetes.executor.annotation.cost=7" in props
    assert "spark.kubernetes.executor.node.selector.pool=spark" in props
    template = next(
        o
        for o in create.objects
        if o["kind"] == "ConfigMap" and o is not pod and "spark.properties" not in o.get("data", {})
    )
    assert "NoSchedule" in str(template["data"])  # the executors' tolerations, in their template
    event = fold(decision.transitions)
    assert event is not None and event.reason == KUEUE_ADMITTED
    assert "admitted by ClusterQueue shared" in event.message


def test_dynamic_allocation_reserves_max_executors_and_runs_with_what_was_admitted() -> None:
    walk = Walk(
        queued_cr(
            **{
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.shuffleTracking.enabled": "true",
                "spark.dynamicAllocation.maxExecutors": "4",
                "spark.dynamicAllocation.initialExecutors": "3",
            }
        )
    )
    (create,) = kinds(walk.step(0, kueue=True), CreateResources)
    assert create.objects[0]["spec"]["podSets"][1]["count"] == 4
    started = walk.step(3, kueue=True, workloads=(workload(admitted=4),))
    props = properties(kinds(started, CreateResources)[0])
    assert "spark.dynamicAllocation.maxExecutors=4" in props
    assert "spark.dynamicAllocation.initialExecutors=3" in props


def test_an_eviction_suspends_the_app_then_requeues_it_as_a_new_attempt() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    admitted = workload(admitted=2)
    walk.step(1, kueue=True, workloads=(admitted,))
    walk.step(2, driver(), executor(1), executor(2), kueue=True, workloads=(admitted,))
    assert walk.state in ("RunningHealthy", "RunningWithPartialCapacity")

    gone = workload(admitted=2, evicted="Preempted to accommodate a higher priority Workload")
    decision = walk.step(10, driver(), executor(1), kueue=True, workloads=(gone,))
    assert walk.state == "Suspended"
    current = walk.cr["status"]["currentState"]
    assert current[SUSPEND_REASON] == SUSPEND_BY_KUEUE and "Preempted" in current["message"]
    (release,) = kinds(decision, DeleteResources)
    assert ("v1", "Pod", "pi-0-driver") in release.refs
    assert not kinds(decision, CreateResources)  # released first: requeued on a later pass
    event = fold(decision.transitions)
    assert event is not None and event.reason == KUEUE_EVICTED

    # the driver still terminating: held, its Workload (its quota) kept until it is gone
    terminating = copy.deepcopy(driver())
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:11Z"
    held = walk.step(11, terminating, kueue=True, workloads=(gone,))
    assert held.status is None and not held.actions and held.requeue_after is not None

    # gone: a new attempt, queued again; the evicted Workload deleted
    requeued = walk.step(12, kueue=True, workloads=(gone,))
    assert walk.states[-3:] == ["Suspended", "ScheduledToRestart", "AdmissionPending"]
    (create,) = kinds(requeued, CreateResources)
    assert [o["metadata"]["name"] for o in create.objects] == ["pi-1"]
    (delete,) = kinds(requeued, DeleteResources)
    assert delete.refs == ((KUEUE_API_VERSION, WORKLOAD, "pi-0"),)
    event = fold(requeued.transitions)
    assert event is not None and event.reason == KUEUE_ADMISSION_PENDING
    assert "requeued after Kueue's eviction" in event.message
    info = walk.cr["status"]["currentAttemptSummary"]["attemptInfo"]
    assert (info["id"], info["restartCounter"]) == (1, 0)  # not a restart

    # re-admitted: the new attempt's driver
    walk.step(20, kueue=True, workloads=(workload("pi-1", admitted=2),))
    assert walk.state == "DriverRequested"


def test_spec_suspend_while_queued_releases_the_workload_and_a_resume_is_not_a_requeue() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    walk.cr = copy.deepcopy(walk.cr)
    walk.cr["spec"]["suspend"] = True
    decision = walk.step(1, kueue=True, workloads=(workload(),))
    assert walk.state == "Suspended"
    deleted = [r for a in kinds(decision, DeleteResources) for r in a.refs if r[1] == WORKLOAD]
    assert deleted == [(KUEUE_API_VERSION, WORKLOAD, "pi-0")]
    walk.cr["spec"]["suspend"] = False
    resumed = walk.step(2, kueue=True)
    assert walk.states[-2:] == ["ScheduledToRestart", "AdmissionPending"]
    assert fold(resumed.transitions).reason == RESUMED  # type: ignore[union-attr]


def test_the_workload_is_deleted_once_the_finished_driver_is_released() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    admitted = workload(admitted=2)
    walk.step(1, kueue=True, workloads=(admitted,))
    walk.step(2, driver(), kueue=True, workloads=(admitted,))
    done = walk.step(5, driver(phase="Succeeded"), kueue=True, workloads=(admitted,))
    assert not [r for a in kinds(done, DeleteResources) for r in a.refs if r[1] == WORKLOAD]
    released = walk.step(6, kueue=True, workloads=(admitted,))
    assert [r for a in kinds(released, DeleteResources) for r in a.refs if r[1] == WORKLOAD]


def test_without_kueue_a_queued_app_fails_saying_why_and_creates_nothing() -> None:
    walk = Walk(queued_cr())
    decision = walk.step(0)
    assert walk.states == ["Submitted", "Failed", "ResourceReleased"]
    assert not kinds(decision, CreateResources)
    message = walk.cr["status"]["stateTransitionHistory"]["1"]["message"]
    assert QUEUE_NAME_LABEL in message and "install Kueue" in message


def test_an_unqueued_app_never_makes_a_workload() -> None:
    walk = Walk(make_cr())
    decision = walk.step(0, kueue=True)
    assert walk.states == ["Submitted", "DriverRequested"]
    assert WORKLOAD not in {o["kind"] for a in kinds(decision, CreateResources) for o in a.objects}


class PriorityClasses:
    """The only reads the adapter makes of a cluster for a new Workload: priority classes
    (here none exist); counts its LISTs."""

    def __init__(self) -> None:
        self.lists = 0

    def list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        assert (api_version, kind) == ("scheduling.k8s.io/v1", "PriorityClass")
        self.lists += 1
        return []


def test_a_queued_kubeflow_app_waits_for_its_workload_owned_by_the_v1beta2_resource() -> None:
    def clock() -> datetime:
        return at(0)

    classes = PriorityClasses()
    apps = AppAdapter(classes, ReconcileSettings(), clock, kueue=True)  # type: ignore[arg-type]
    adapter = KubeflowAdapter(apps)
    cr = kf_app()
    cr["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team"}
    first = adapter.decide(cr)
    assert first.status is not None and first.status["applicationState"]["state"] == "SUBMITTED"
    (create,) = kinds(first, CreateResources)
    (made,) = create.objects
    assert made["kind"] == WORKLOAD
    assert {r["apiVersion"] for r in made["metadata"]["ownerReferences"]} == {KUBEFLOW_API_VERSION}
    assert made["spec"]["priority"] == 0 and classes.lists == 1  # no class named: the default
    cr["status"] = first.status

    admitted = workload(admitted=1)
    admitted["metadata"]["ownerReferences"] = made["metadata"]["ownerReferences"]
    assert list(apps._on_workload("ADDED", admitted)) == [(KUBEFLOW_APP, "ns1", "pi")]
    started = adapter.decide(cr)
    pods = [o for a in kinds(started, CreateResources) for o in a.objects if o["kind"] == "Pod"]
    assert [p["metadata"]["name"] for p in pods] == ["pi-driver"]  # Kubeflow's driver name
    assert started.status is not None and started.status["applicationState"]["state"] == "SUBMITTED"


def gated(
    n: int, *, phase: str = "Pending", gate: bool = True, released: bool = False
) -> dict[str, Any]:
    """Executor ``n`` of attempt 0 as Spark creates it from the admitted template
    (``released``: the operator removed its gate and marked it)."""
    pod = executor(n, ready=False)
    pod["metadata"]["uid"] = f"e-{n}"
    pod["metadata"]["resourceVersion"] = f"{n}00"
    pod["metadata"]["labels"][EXEC_ID_LABEL] = str(n)
    pod["status"] = {"phase": phase}
    if gate:
        pod["spec"] = {"schedulingGates": [{"name": "other.example/gate"}, {"name": QUOTA_GATE}]}
    if released:
        pod["metadata"]["annotations"] = {QUOTA_RELEASED_ANNOTATION: "true"}
    return pod


def test_executors_are_created_gated_and_released_up_to_the_admitted_count() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    admitted = (workload(admitted=2),)
    started = walk.step(3, kueue=True, workloads=admitted)
    template = next(
        o
        for o in kinds(started, CreateResources)[0].objects
        if o["kind"] == "ConfigMap" and "spark.properties" not in o.get("data", {})
    )
    assert QUOTA_GATE in str(template["data"])  # every executor starts behind the gate
    # the app's own code raised spark.executor.instances to 4: Spark asks for 4 executors
    running = walk.step(
        9, driver(), *(gated(n) for n in (1, 2, 3, 4)), kueue=True, workloads=admitted
    )
    (hold,) = kinds(running, HoldExecutors)
    # no annotations yet: each release makes the map, on the pod exactly as observed
    assert hold.release == (("pi-x-exec-1", "e-1", 1, "100"), ("pi-x-exec-2", "e-2", 1, "200"))
    assert hold.remove == ()
    ((reason, message, warning),) = running.notices
    assert (reason, warning) == (KUEUE_QUOTA_HELD, False)
    assert "2 executors wait" in message and "the 2 executors Kueue admitted" in message
    # released: the two run; nothing more to do while the others wait
    pods = tuple(gated(n, phase="Running", gate=False, released=True) for n in (1, 2))
    steady = walk.step(12, driver(), *pods, gated(3), gated(4), kueue=True, workloads=admitted)
    assert kinds(steady, HoldExecutors) == [] and steady.notices[0][0] == KUEUE_QUOTA_HELD
    # executor 1 ends (dynamic allocation gave it back): executor 3 takes its place
    ended = (gated(1, phase="Succeeded", gate=False), pods[1])
    freed = walk.step(20, driver(), *ended, gated(3), gated(4), kueue=True, workloads=admitted)
    assert kinds(freed, HoldExecutors)[0].release == (("pi-x-exec-3", "e-3", 1, "300"),)


def test_executors_that_bypassed_the_gate_past_the_admission_are_removed() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    admitted = (workload(admitted=2),)
    walk.step(3, kueue=True, workloads=admitted)
    # the driver removed the gate of its executors itself (drivers may update their pods)
    ungated = [gated(n, phase="Running", gate=False) for n in (1, 2, 3, 4)]
    decision = walk.step(9, driver(), *ungated, kueue=True, workloads=admitted)
    (hold,) = kinds(decision, HoldExecutors)
    assert hold.release == () and hold.remove == (("pi-x-exec-4", "e-4"), ("pi-x-exec-3", "e-3"))
    ((reason, message, warning),) = decision.notices
    assert reason == KUEUE_QUOTA_EXCEEDED and warning
    assert "pi-x-exec-4, pi-x-exec-3" in message


def test_an_executor_that_bypassed_the_gate_never_displaces_a_released_one() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    admitted = (workload(admitted=2),)
    walk.step(3, kueue=True, workloads=admitted)
    # the operator released 1 and 3 (2 was not yet seen then); the driver ungates 2 itself
    pods = (
        gated(1, phase="Running", gate=False, released=True),
        gated(2, phase="Pending", gate=False),
        gated(3, phase="Running", gate=False, released=True),
        gated(4),
    )
    decision = walk.step(9, driver(), *pods, kueue=True, workloads=admitted)
    (hold,) = kinds(decision, HoldExecutors)
    assert hold.release == () and hold.remove == (("pi-x-exec-2", "e-2"),)


def test_an_unqueued_apps_executors_are_never_held() -> None:
    walk = Walk(make_cr(conf={"spark.executor.instances": "2"}))
    walk.step(0)
    decision = walk.step(9, driver(), *(gated(n) for n in (1, 2, 3)))
    assert kinds(decision, HoldExecutors) == [] and decision.notices == ()
