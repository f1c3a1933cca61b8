"""A queued app's Workload priority, as Kueue's integrations set it (operator/core/priority.py):
the label's WorkloadPriorityClass, else the driver's PriorityClass, else the cluster's
globalDefault, else 0; a named class that does not exist holds the Workload back, says why and
is looked at again."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.operator.core import priority as pr
from sparkplane.operator.core.decision import CreateResources
from sparkplane.operator.core.reconciler import (
    KUEUE_PRIORITY_CLASS_MISSING,
    PRIORITY_RECHECK_SECONDS,
)
from sparkplane.operator.kinds.kueue_io import read_priority
from sparkplane.vocab import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL, WORKLOAD
from tests.unit.operator.opfixtures import Walk, make_cr

WPC = pr.workload_class("urgent")
PC = pr.pod_class("batch-high")


def pod_set(name: str, priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"name": name, "count": 1, "template": {"spec": spec}}


def klass(name: str, value: int, *, default: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {"name": name}, "value": value}
    if default:
        out["globalDefault"] = True
    return out


def test_the_label_names_a_workload_priority_class_before_any_pod_priority_class() -> None:
    labels = {PRIORITY_CLASS_LABEL: "urgent"}
    ref = pr.wanted(labels, [pod_set("driver", "batch-high")])
    assert ref == WPC
    assert pr.priority_fields(ref, klass("urgent", 1000)) == {
        "priorityClassRef": {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "urgent",
        },
        "priority": 1000,
    }


def test_else_the_first_pod_set_naming_a_priority_class() -> None:
    ref = pr.wanted({}, [pod_set("driver"), pod_set("executor", "batch-high")])
    assert ref == PC
    assert pr.wanted({}, [pod_set("driver", "a"), pod_set("executor", "b")]).name == "a"
    assert pr.priority_fields(ref, klass("batch-high", 50)) == {
        "priorityClassRef": {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": "batch-high",
        },
        "priority": 50,
    }


def test_else_the_global_default_with_the_lowest_value_else_zero() -> None:
    assert pr.wanted({}, [pod_set("driver")]) == pr.DEFAULT
    found = pr.global_default(
        [klass("plain", 7), klass("d1", 30, default=True), klass("d2", 20, default=True)]
    )
    assert found is not None and found["metadata"]["name"] == "d2"
    assert pr.priority_fields(pr.DEFAULT, found) == {
        "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "d2"},
        "priority": 20,
    }
    assert pr.global_default([klass("plain", 7)]) is None
    assert pr.priority_fields(pr.DEFAULT, None) == {"priority": 0}


@pytest.mark.parametrize(
    ("ref", "names"),
    [
        (WPC, ("WorkloadPriorityClass 'urgent'", f"label {PRIORITY_CLASS_LABEL}")),
        (PC, ("PriorityClass 'batch-high'", "spec.driver.priorityClassName")),
    ],
)
def test_a_named_class_that_does_not_exist_is_refused_naming_the_source_and_the_fix(
    ref: pr.ClassRef, names: tuple[str, str]
) -> None:
    with pytest.raises(pr.PriorityClassMissing) as caught:
        pr.priority_fields(ref, None)
    message = str(caught.value)
    assert all(n in message for n in names) and "create the" in message, message


def queued(**labels: str) -> dict[str, Any]:
    cr = make_cr(conf={"spark.executor.instances": "1"})
    cr["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team", **labels}
    return cr


def created_workload(decision: Any) -> dict[str, Any]:
    (made,) = [
        o
        for a in decision.actions
        if isinstance(a, CreateResources)
        for o in a.objects
        if o["kind"] == WORKLOAD
    ]
    return dict(made)


def test_the_operator_asks_for_the_class_then_creates_the_workload_with_its_priority() -> None:
    walk = Walk(queued(**{PRIORITY_CLASS_LABEL: "urgent"}))
    asked = walk.step(0, kueue=True, priority={})
    assert asked.read_priority == WPC and not asked.actions
    decision = walk.step(0, kueue=True, priority={WPC: klass("urgent", 1000)})
    spec = created_workload(decision)["spec"]
    assert spec["priority"] == 1000 and spec["priorityClassRef"]["name"] == "urgent"
    assert walk.state == "AdmissionPending"


def test_the_drivers_priority_class_name_is_the_source_without_the_label() -> None:
    cr = queued()
    cr["spec"]["driverSpec"] = {"podTemplateSpec": {"spec": {"priorityClassName": "batch-high"}}}
    walk = Walk(cr)
    assert walk.step(0, kueue=True, priority={}).read_priority == PC
    spec = created_workload(walk.step(0, kueue=True, priority={PC: klass("batch-high", 50)}))[
        "spec"
    ]
    assert spec["priority"] == 50 and spec["priorityClassRef"]["kind"] == "PriorityClass"


def test_a_missing_class_holds_the_app_back_says_why_and_creating_it_unblocks() -> None:
    walk = Walk(queued(**{PRIORITY_CLASS_LABEL: "urgent"}))
    held = walk.step(0, kueue=True, priority={WPC: None})
    assert not held.actions and walk.state == "Submitted"
    message = walk.cr["status"]["currentState"]["message"]
    assert message.startswith(KUEUE_PRIORITY_CLASS_MISSING) and "pi-0" in message
    assert "WorkloadPriorityClass 'urgent'" in message and PRIORITY_CLASS_LABEL in message
    assert held.notices == ((KUEUE_PRIORITY_CLASS_MISSING, message, True),)
    assert held.requeue_after == PRIORITY_RECHECK_SECONDS
    again = walk.step(10, kueue=True, priority={WPC: None})
    assert again.status is None and not again.actions  # the message is written once

    made = walk.step(20, kueue=True, priority={WPC: klass("urgent", 1000)})
    assert created_workload(made)["spec"]["priority"] == 1000
    assert walk.state == "AdmissionPending"


class Reads:
    """What :func:`read_priority` asks of the cluster (a GET of the named class, a LIST of
    PriorityClasses only for the default), answered from ``classes``."""

    def __init__(self, *classes: tuple[str, dict[str, Any]]) -> None:
        self.classes = classes
        self.calls: list[tuple[str, ...]] = []

    def get_or_none(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", api_version, kind, name))
        return next(
            (c for v, c in self.classes if v == api_version and c["metadata"]["name"] == name),
            None,
        )

    def list(self, api_version: str, kind: str) -> list[dict[str, Any]]:
        self.calls.append(("list", api_version, kind))
        return [c for v, c in self.classes if v == api_version]


def test_the_operator_gets_the_named_class_and_lists_only_for_the_default() -> None:
    kube = Reads(
        ("kueue.x-k8s.io/v1beta2", klass("urgent", 1000)),
        ("scheduling.k8s.io/v1", klass("batch-high", 50)),
        ("scheduling.k8s.io/v1", klass("fallback", 5, default=True)),
    )
    assert read_priority(kube, WPC) == klass("urgent", 1000)  # type: ignore[arg-type]
    assert read_priority(kube, PC) == klass("batch-high", 50)  # type: ignore[arg-type]
    assert read_priority(kube, pr.pod_class("gone")) is None  # type: ignore[arg-type]
    assert read_priority(kube, pr.DEFAULT) == klass("fallback", 5, default=True)  # type: ignore[arg-type]
    assert kube.calls == [
        ("get", "kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", "urgent"),
        ("get", "scheduling.k8s.io/v1", "PriorityClass", "batch-high"),
        ("get", "scheduling.k8s.io/v1", "PriorityClass", "gone"),
        ("list", "scheduling.k8s.io/v1", "PriorityClass"),
    ]
