"""Kueue's ResourceFlavors on a queued app's pods (pure): the flavors an admission names
(``podSetAssignments[].flavors``) put their ``nodeLabels`` into the node selector and their
``tolerations`` onto the driver pod and the executors' template, as Kueue's own integrations
do (``pkg/podset/podset.go``), merged with the admission checks' ``podSetUpdates``; a flavor
not found holds the driver back (and says so), a conflict fails the attempt, nothing created."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.operator.core import workload as wl
from sparkplane.operator.core.decision import CreateResources
from sparkplane.operator.core.reconciler import KUEUE_FLAVOR_MISSING
from tests.unit.operator.opfixtures import Walk
from tests.unit.operator.test_kueue_admission import kinds, properties, queued_cr, workload

SPOT = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}


def flavor(name: str, labels: dict[str, str], *tolerations: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": labels}
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {"kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def on_flavors(w: dict[str, Any], driver: dict[str, str], executor: dict[str, str]) -> Any:
    """``w`` (admitted) with each pod set's resource -> flavor assignment."""
    for a in w["status"]["admission"]["podSetAssignments"]:
        a["flavors"] = driver if a["name"] == "driver" else executor
    return w


def test_admission_names_each_pod_sets_flavors_once() -> None:
    w = on_flavors(workload(admitted=2), {"cpu": "a", "memory": "a"}, {"cpu": "b", "memory": "c"})
    got = wl.admission(w)
    assert got is not None
    assert got.flavors == {"driver": ("a",), "executor": ("b", "c")}
    assert wl.flavor_names(got) == ("a", "b", "c")
    assert wl.unresolved_flavors(got, {"a": flavor("a", {}), "b": None}) == ("b", "c")


def test_flavors_node_labels_and_tolerations_merge_with_the_checks_updates() -> None:
    update = {"name": "executor", "nodeSelector": {"zone": "z1"}, "tolerations": [SPOT]}
    w = on_flavors(workload(admitted=2, updates=[update]), {"cpu": "od"}, {"cpu": "spot"})
    got = wl.admission(w)
    assert got is not None
    flavors = {
        "od": flavor("od", {"pool": "on-demand"}),
        "spot": flavor("spot", {"pool": "spot"}, SPOT),
    }
    merged = wl.with_flavors(got, flavors)
    assert merged.updates["driver"] == wl.PodSetUpdate(node_selector={"pool": "on-demand"})
    assert merged.updates["executor"].node_selector == {"pool": "spot", "zone": "z1"}
    assert merged.updates["executor"].tolerations == (SPOT,)  # once, as Kueue dedups them
    clash = {"name": "executor", "nodeSelector": {"pool": "gpu"}}
    w2 = on_flavors(workload(admitted=2, updates=[clash]), {"cpu": "od"}, {"cpu": "spot"})
    got2 = wl.admission(w2)
    assert got2 is not None
    with pytest.raises(wl.FlavorConflict, match="pool='spot' vs 'gpu'"):
        wl.with_flavors(got2, flavors)
    with pytest.raises(wl.FlavorConflict, match="nodeSelector"):
        wl.check_selector("driver", {"pool": "gpu"}, merged.updates["driver"])
    wl.check_selector("driver", {"pool": "on-demand", "x": "y"}, merged.updates["driver"])


def admitted_on_spot() -> dict[str, Any]:
    return on_flavors(workload(admitted=2), {"cpu": "on-demand"}, {"cpu": "spot", "memory": "spot"})


FLAVORS = {
    "on-demand": flavor("on-demand", {"pool": "on-demand"}),
    "spot": flavor("spot", {"pool": "spot"}, SPOT),
}


def test_the_driver_and_executors_carry_their_flavors() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    decision = walk.step(3, kueue=True, workloads=(admitted_on_spot(),), flavors=FLAVORS)
    assert walk.state == "DriverRequested"
    (create,) = kinds(decision, CreateResources)
    pod = next(o for o in create.objects if o["kind"] == "Pod")
    assert pod["spec"]["nodeSelector"]["pool"] == "on-demand"
    assert SPOT not in (pod["spec"].get("tolerations") or [])
    assert "spark.kubernetes.executor.node.selector.pool=spot" in properties(create)
    templates = [
        o
        for o in create.objects
        if o["kind"] == "ConfigMap" and "spark.properties" not in o.get("data", {})
    ]
    assert any("key: spot" in str(t["data"]) for t in templates)  # the executors' toleration


def test_a_missing_flavor_holds_the_driver_and_says_so() -> None:
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    missing = {**FLAVORS, "spot": None}
    decision = walk.step(3, kueue=True, workloads=(admitted_on_spot(),), flavors=missing)
    assert walk.state == "AdmissionPending" and not kinds(decision, CreateResources)
    message = walk.cr["status"]["currentState"]["message"]
    assert message.startswith(KUEUE_FLAVOR_MISSING) and "ResourceFlavor spot" in message
    assert [n[0] for n in decision.notices] == [KUEUE_FLAVOR_MISSING]
    assert decision.requeue_after is not None
    # not read at all (the adapter reads them only when the driver may be created): no pod
    unread = walk.step(4, kueue=True, workloads=(admitted_on_spot(),))
    assert not kinds(unread, CreateResources)
    # the flavor is back: the driver is created with it
    back = walk.step(9, kueue=True, workloads=(admitted_on_spot(),), flavors=FLAVORS)
    assert walk.state == "DriverRequested"
    assert [o["kind"] for a in kinds(back, CreateResources) for o in a.objects].count("Pod") == 1


def test_a_flavor_conflicting_with_the_apps_own_node_selector_fails_the_attempt() -> None:
    walk = Walk(queued_cr(**{"spark.kubernetes.node.selector.pool": "gpu"}))
    walk.step(0, kueue=True)
    decision = walk.step(3, kueue=True, workloads=(admitted_on_spot(),), flavors=FLAVORS)
    assert "SchedulingFailure" in walk.states and "DriverRequested" not in walk.states
    assert not [o for a in kinds(decision, CreateResources) for o in a.objects]
    history = walk.cr["status"]["stateTransitionHistory"].values()
    message = next(h["message"] for h in history if h["currentStateSummary"] == "SchedulingFailure")
    assert "pool='gpu' vs 'spot'" in message and "FailedToStart" in message


def test_a_driver_committed_but_never_created_is_created_with_its_flavors() -> None:
    """A crash between the ``DriverRequested`` write and the creates: the driver made again
    carries the flavors too, and waits like the first one if a flavor is gone."""
    walk = Walk(queued_cr())
    walk.step(0, kueue=True)
    admitted = admitted_on_spot()
    walk.step(3, kueue=True, workloads=(admitted,), flavors=FLAVORS)
    assert walk.state == "DriverRequested"
    gone = walk.step(4, kueue=True, workloads=(admitted,), flavors={}, driver_absent=True)
    assert walk.state == "DriverRequested" and not kinds(gone, CreateResources)
    assert [n[0] for n in gone.notices] == [KUEUE_FLAVOR_MISSING]
    again = walk.step(5, kueue=True, workloads=(admitted,), flavors=FLAVORS, driver_absent=True)
    pod = next(o for a in kinds(again, CreateResources) for o in a.objects if o["kind"] == "Pod")
    assert pod["spec"]["nodeSelector"]["pool"] == "on-demand"
