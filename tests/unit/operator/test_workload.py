"""The Kueue Workload of a SparkApplication (pure): pod sets from the rendered driver and the
executor conf, what an admission says, the admitted ceiling pinned into the conf."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.operator.core import workload as wl
from sparkplane.operator.core.driver import build_attempt, owner_ref
from sparkplane.vocab import QUEUE_NAME_LABEL
from tests.unit.operator.opfixtures import make_cr


def queued(**conf: str) -> dict[str, Any]:
    cr = make_cr(conf=conf)
    cr["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team-a"}
    return cr


def workload_of(cr: dict[str, Any]) -> dict[str, Any]:
    built = build_attempt(cr, "op")
    conf = cr["spec"]["sparkConf"]
    return wl.build_workload(
        cr, built.app_id, built.driver_pod, conf, non_jvm=False, owner=owner_ref(cr)
    )


def test_driver_and_executors_are_reserved_in_the_named_queue() -> None:
    cr = queued(
        **{
            "spark.executor.instances": "3",
            "spark.executor.memory": "1g",
            "spark.executor.cores": "2",
        }
    )
    w = workload_of(cr)
    assert w["spec"]["queueName"] == "team-a" and w["metadata"]["namespace"] == "ns1"
    driver, executor = w["spec"]["podSets"]
    assert (driver["name"], driver["count"]) == ("driver", 1)
    requests = driver["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests["memory"] == "1408Mi"  # 1g + 384m, as the driver pod requests
    assert (executor["name"], executor["count"]) == ("executor", 3)
    container = executor["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "2", "memory": "1408Mi"}
    assert w["metadata"]["ownerReferences"][0]["kind"] == "SparkApplication"


def test_dynamic_allocation_reserves_max_executors() -> None:
    conf = {"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "5"}
    assert wl.executor_count(conf) == 5
    assert wl.executor_count({}) == wl.DEFAULT_INSTANCES


def test_an_app_without_a_queue_has_no_workload() -> None:
    cr = make_cr()
    assert wl.queue_name(cr) is None
    with pytest.raises(ValueError, match=QUEUE_NAME_LABEL):
        wl.build_workload(cr, "x", {"spec": {}}, {}, non_jvm=False, owner={})


def admitted(count: int, **extra: Any) -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
            "admission": {
                "podSetAssignments": [
                    {"name": "driver", "count": 1},
                    {"name": "executor", "count": count},
                ]
            },
            **extra,
        }
    }


def test_admission_counts_and_pod_set_updates_are_read() -> None:
    update = {
        "name": "executor",
        "labels": {"l": "1"},
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "t", "operator": "Exists"}],
    }
    got = wl.admission(admitted(2, admissionChecks=[{"name": "c", "podSetUpdates": [update]}]))
    assert got is not None and got.executors == 2
    pod = wl.with_pod_set_update(
        {"metadata": {"labels": {"spark-role": "executor"}}, "spec": {}}, got.updates["executor"]
    )
    assert pod["metadata"]["labels"] == {"spark-role": "executor", "l": "1"}
    assert pod["spec"]["nodeSelector"] == {"pool": "a"}
    assert pod["spec"]["tolerations"] == [{"key": "t", "operator": "Exists"}]


def test_a_pending_or_evicted_workload_is_not_admitted() -> None:
    pending = {
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "message": "couldn't assign flavors"}
            ]
        }
    }
    assert wl.admission(pending) is None
    assert wl.pending_message(pending) == "couldn't assign flavors"
    evicted = admitted(2)
    evicted["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "message": "Preempted"}
    )
    assert wl.admission(evicted) is None and wl.pending_message(evicted) == "Preempted"


def test_the_admitted_count_is_pinned_into_the_conf() -> None:
    dyn = {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.maxExecutors": "50",
        "spark.dynamicAllocation.initialExecutors": "10",
        "spark.dynamicAllocation.minExecutors": "1",
    }
    pinned = wl.pinned_conf(dyn, 4)
    assert pinned["spark.dynamicAllocation.maxExecutors"] == "4"
    assert pinned["spark.dynamicAllocation.initialExecutors"] == "4"
    assert pinned["spark.dynamicAllocation.minExecutors"] == "1"
    assert wl.pinned_conf({"spark.executor.instances": "9"}, 3)["spark.executor.instances"] == "3"
