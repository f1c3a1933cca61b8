"""Lifecycle of native apps on the real control plane: get/list, wait, watch, logs, UI, events,
preemption, kill (garbage collection), TTL clean-up."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from sparkplane import AppPhase, Reason, SparkPlane
from sparkplane.errors import AppNotFoundError, TimeoutExpired
from sparkplane.kube import Kube
from sparkplane.usecases.kill import remaining_objects
from tests.integration.helpers import wait_for

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture
def sp(kube: Kube, namespace: str):
    client = SparkPlane(kube, namespace)
    yield client
    for tracker in client._trackers.values():
        tracker.stop()


def _spec(namespace: str, *, run_for: str = "3s", outcome: str = "Succeeded", **extra) -> dict:
    doc = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
    doc["metadata"]["namespace"] = namespace
    ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann.update({"sim.sparkplane.io/run-for": run_for, "sim.sparkplane.io/outcome": outcome})
    ann.update(extra)
    return doc


def test_get_list_and_wait_until_finished(sp: SparkPlane, namespace: str):
    submitted = sp.submit(_spec(namespace, run_for="2s"))
    app = sp.get(submitted.name)
    assert app.mode.value == "native" and app.driver_pod == submitted.driver_pod
    assert [a.name for a in sp.list()] == [submitted.name]
    seen: list[str] = []
    done = sp.wait(submitted, timeout=60, on_change=lambda a: seen.append(a.state.phase))
    assert done.state.phase is AppPhase.SUCCEEDED
    assert AppPhase.RUNNING in seen or AppPhase.PENDING in seen
    assert sp.get(submitted.name).state.phase is AppPhase.SUCCEEDED


def test_failed_app_reports_exit_code_reason(sp: SparkPlane, namespace: str):
    submitted = sp.submit(
        _spec(
            namespace,
            run_for="1s",
            outcome="Failed",
            **{"sim.sparkplane.io/reason": "OOMKilled", "sim.sparkplane.io/exit-code": "137"},
        )
    )
    done = sp.wait(submitted, timeout=60)
    assert done.state.phase is AppPhase.FAILED
    assert done.state.reason == Reason.OOM_KILLED


def test_wait_times_out_with_the_current_state(sp: SparkPlane, namespace: str):
    submitted = sp.submit(_spec(namespace, run_for="1h"))
    with pytest.raises(TimeoutExpired, match="did not reach finished"):
        sp.wait(submitted, timeout=3)


def test_image_pull_backoff_is_reported(sp: SparkPlane, namespace: str):
    submitted = sp.submit(
        _spec(namespace, **{"sim.sparkplane.io/waiting-reason": "ImagePullBackOff"})
    )
    app = sp.wait(submitted, lambda s: s.reason == Reason.IMAGE_PULL_BACK_OFF, timeout=30)
    assert app.state.phase is AppPhase.PENDING


def test_watch_streams_state_changes(sp: SparkPlane, namespace: str):
    phases: list[AppPhase] = []

    def consume() -> None:
        for app in sp.watch(namespace, timeout=30):
            phases.append(app.state.phase)
            if app.state.phase is AppPhase.SUCCEEDED:
                return

    reader = threading.Thread(target=consume)
    sp.tracker(namespace)  # start the shared cache before submitting
    reader.start()
    sp.submit(_spec(namespace, run_for="2s"))
    reader.join(timeout=40)
    assert phases[-1] is AppPhase.SUCCEEDED
    assert AppPhase.RUNNING in phases


def test_logs_tail_follow_and_gone_driver(sp: SparkPlane, kube: Kube, namespace: str):
    submitted = sp.submit(_spec(namespace, run_for="3s"))
    sp.wait(submitted, "running", timeout=30)
    lines = list(sp.logs(submitted.name))
    assert any("Pi is roughly" in line for line in lines)
    assert list(sp.logs(submitted.name, tail=1)) == lines[-1:]
    followed = list(sp.logs(submitted.name, follow=True))  # returns once the pod has ended
    assert followed
    app = sp.get(submitted.name)
    kube.delete("v1", "Pod", submitted.driver_pod, namespace)
    wait_for(
        lambda: kube.get_or_none("v1", "Pod", submitted.driver_pod, namespace) is None,
        timeout=30,
        what="driver deleted",
    )
    with pytest.raises(AppNotFoundError, match="is gone"):
        list(sp.logs(app))


def test_ui_address_waits_for_the_ingress_load_balancer(sp: SparkPlane, kube: Kube, namespace: str):
    submitted = sp.submit(_spec(namespace))
    app = sp.get(submitted.name)
    ingress = kube.list("networking.k8s.io/v1", "Ingress", namespace)[0]
    assert sp.ui(app).via == "port-forward"  # no address yet

    def publish() -> None:  # what an ingress controller does
        time.sleep(1.5)
        kube.patch(
            "networking.k8s.io/v1",
            "Ingress",
            ingress["metadata"]["name"],
            {"status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}},
            namespace,
            subresource="status",
        )

    threading.Thread(target=publish).start()
    address = sp.ui(app, wait=20)
    assert address.via == "ingress"
    assert address.url and address.url.startswith("http")


def test_events_are_in_time_order(sp: SparkPlane, namespace: str):
    submitted = sp.submit(_spec(namespace, run_for="1s"))
    sp.wait(submitted, timeout=60)
    events = wait_for(lambda: sp.events(submitted.name), timeout=30, what="events")
    assert any(e.reason == "Scheduled" for e in events)
    stamps = [e.time for e in events]
    assert None not in stamps and stamps == sorted(stamps)  # type: ignore[type-var]


def test_kill_wait_leaves_nothing_behind(sp: SparkPlane, kube: Kube, namespace: str):
    submitted = sp.submit(_spec(namespace, run_for="1h"))
    app = sp.wait(submitted, "running", timeout=30)
    uid = app.owner["metadata"]["uid"]
    assert remaining_objects(kube, namespace, {uid})  # ConfigMap, Services, Ingress
    sp.kill(submitted.name, wait=True, timeout=90)
    assert kube.get_or_none("v1", "Pod", submitted.driver_pod, namespace) is None
    assert remaining_objects(kube, namespace, {uid}) == []
    for api, kind in (("v1", "ConfigMap"), ("v1", "Service"), ("networking.k8s.io/v1", "Ingress")):
        left = kube.list(api, kind, namespace, label_selector=f"spark-app-selector={app.app_id}")
        assert left == [], kind


def test_killed_app_reports_killed(sp: SparkPlane, namespace: str):
    submitted = sp.submit(_spec(namespace, run_for="1h"))
    sp.wait(submitted, "running", timeout=30)
    tracker = sp.tracker(namespace)
    sp.kill(submitted.name)
    wait_for(
        lambda: (a := tracker.get(namespace, submitted.name)) and a.state.reason == Reason.KILLED,
        timeout=30,
        what="state Killed",
    )


def test_gc_deletes_only_expired_finished_drivers(sp: SparkPlane, kube: Kube, namespace: str):
    short = sp.submit(_spec(namespace, run_for="0s"), ttl=timedelta(seconds=1))
    keep = sp.submit(_spec(namespace, run_for="0s"), ttl=timedelta(hours=1))
    running = sp.submit(_spec(namespace, run_for="1h"))
    for s in (short, keep):
        sp.wait(s, timeout=60)
    time.sleep(1.5)
    planned = sp.gc(older_than=None, dry_run=True)
    assert {d.name for d in planned if d.delete} == {short.driver_pod}
    assert kube.get_or_none("v1", "Pod", short.driver_pod, namespace) is not None  # dry run
    sp.gc(older_than=None)
    wait_for(
        lambda: kube.get_or_none("v1", "Pod", short.driver_pod, namespace) is None,
        timeout=30,
        what="expired driver deleted",
    )
    assert kube.get_or_none("v1", "Pod", keep.driver_pod, namespace) is not None
    assert kube.get_or_none("v1", "Pod", running.driver_pod, namespace) is not None


def test_higher_priority_app_preempts_a_lower_one(
    sp: SparkPlane, namespace: str, small_node: str, priority_classes: tuple[str, str]
):
    node, (low, high) = small_node, priority_classes

    def pinned(priority: str) -> dict:
        doc = _spec(namespace, run_for="1h")
        doc["spec"]["driver"] = {"cores": 2, "memory": "1g"}
        # the whole small node: not the example's 200m request (sized for the real node)
        doc["spec"]["sparkConf"].pop("spark.kubernetes.driver.request.cores", None)
        doc["spec"]["priorityClassName"] = priority
        doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
        doc["spec"]["tolerations"] = [
            {"key": f"sparkplane.io/{node}", "operator": "Exists", "effect": "NoSchedule"}
        ]
        return doc

    victim = sp.submit(pinned(low))
    sp.wait(victim, "running", timeout=30)
    urgent = sp.submit(pinned(high))
    assert sp.wait(urgent, "running", timeout=60).state.phase is AppPhase.RUNNING
    # the DisruptionTarget condition may be seen before the scheduler's event names the preemptor
    lost = sp.wait(victim, lambda s: s.reason == Reason.PREEMPTED and bool(s.preemptor), timeout=60)
    assert lost.state.phase is AppPhase.FAILED
    assert lost.state.preemptor  # the scheduler named the preemptor (uid or ns/name)
