"""Apache's own end-to-end expectations (apache/spark-kubernetes-operator ``tests/e2e``), written
from its published assertions and checked on the real node with real Spark 4.0.1 (issue 27).

Kept to two real SparkPi runs (CI time). The first is Apache's ``resource-retain-duration``
scenario: ``resourceRetainPolicy: Always`` and ``resourceRetainDurationMillis: 10000``, asserting
its state history ``Submitted … RunningHealthy, Succeeded, TerminatedWithoutReleaseResources,
ResourceReleased``, and, while retained, what Apache's ``spark-driver-pod`` and
``spark-driver-config-map`` assertions check (the driver labelled ``spark-app-name=spark``, its
``<app>-0-spark-drv-conf-map``). The second is Apache's ``spark-versions`` scenario 2: the
SparkApplication deleted and created again under the same name must really run — its own driver
(another uid, controlled by the new resource; a PySpark app this time, Apache's ``python``
scenario), its executor, its own ``Pi is roughly`` and a full state history — never the old
outcome (the operator still remembers the old driver's Succeeded
tombstone). KWOK covers the failed and still-running predecessors
(tests/integration/test_operator_reused_name.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core.states import history_states
from sparkplane.operator.deploy.install import install_crds
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator
from tests.realnode.sparkapps import pod_logs, spec
from tests.realnode.test_spark import PI_LINE

API = "spark.apache.org/v1"
NAME = "pi-again"
TERMINAL = ("TerminatedWithoutReleaseResources", "ResourceReleased")
RUN = ["Submitted", "DriverRequested", "DriverStarted", "DriverReady", "RunningHealthy"]


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[str]:
    install_crds(kube)
    with running_operator(kube, namespace, simulate=False):
        yield namespace


def _state(kube: Kube, namespace: str, *states: str, timeout: float) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        cr = kube.get_or_none(API, "SparkApplication", NAME, namespace)
        current = ((cr or {}).get("status") or {}).get("currentState") or {}
        return cr if current.get("currentStateSummary") in states else None

    found: dict[str, Any] = wait_for(
        check, timeout=timeout, what=f"{NAME} in {states}", interval=0.3
    )
    return found


def _app(namespace: str, tolerations: dict[str, Any], *, python: bool = False) -> dict[str, Any]:
    body = spec(NAME, namespace, executors=1, args=["8"], python=python)
    body["spec"]["applicationTolerations"] = tolerations
    return body


def _driver(kube: Kube, namespace: str) -> dict[str, Any] | None:
    return kube.get_or_none("v1", "Pod", f"{NAME}-0-driver", namespace)


@pytest.mark.timeout(900)  # two real Spark apps and a 10 s retention on 2 shared cores
def test_retain_duration_then_a_reused_name_really_runs(kube: Kube, operator: str) -> None:
    ns = operator
    retain = {"resourceRetainPolicy": "Always", "resourceRetainDurationMillis": 10000}
    started = time.monotonic()
    first = kube.create(_app(ns, retain), namespace=ns)
    kept = _state(kube, ns, "TerminatedWithoutReleaseResources", "ResourceReleased", timeout=300)
    assert history_states(kept["status"])[-1] == "TerminatedWithoutReleaseResources", kept["status"]
    old = _driver(kube, ns)
    assert old is not None, "retained driver pod"
    assert old["metadata"]["labels"]["spark-app-name"] == "spark"  # Apache leaves it unset
    assert old["metadata"]["labels"]["spark-role"] == "driver"
    assert kube.get_or_none("v1", "ConfigMap", f"{NAME}-0-spark-drv-conf-map", ns) is not None
    assert PI_LINE in pod_logs(kube, ns, old["metadata"]["name"])
    released = _state(kube, ns, "ResourceReleased", timeout=90)
    assert history_states(released["status"]) == [
        *RUN,
        "Succeeded",
        "TerminatedWithoutReleaseResources",
        "ResourceReleased",
    ]
    wait_for(lambda: _driver(kube, ns) is None, timeout=60, what="retained driver released")
    print(f"first app released after {time.monotonic() - started:.0f} s")

    # spark-versions scenario 2: delete, and create again under the same name at once
    kube.delete(API, "SparkApplication", NAME, ns)
    wait_for(
        lambda: kube.get_or_none(API, "SparkApplication", NAME, ns) is None,
        timeout=60,
        what="the first SparkApplication gone",
    )
    # (a PySpark app this time: Apache's python e2e, through the operator)
    second = kube.create(_app(ns, {"resourceRetainPolicy": "Always"}, python=True), namespace=ns)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]

    def executor() -> dict[str, Any] | None:  # Apache's spark-exec-pod assertion, while it runs
        driver = _driver(kube, ns)
        uid = (driver or {}).get("metadata", {}).get("uid")
        cr = kube.get(API, "SparkApplication", NAME, ns)
        states = history_states(cr.get("status") or {})
        if states and states[-1] in TERMINAL:  # ended without an executor: say why
            log = pod_logs(kube, ns, f"{NAME}-0-driver") if driver else ""
            raise AssertionError(f"{states} {cr['status']}\n{log[-3000:]}")
        pods = kube.list("v1", "Pod", ns, label_selector="spark-role=executor")
        return next(
            (p for p in pods if uid in {r["uid"] for r in p["metadata"]["ownerReferences"]}),
            None,
        )

    running = wait_for(executor, timeout=300, what="the new driver's executor", interval=0.5)
    labels = running["metadata"]["labels"]
    assert (labels["spark-role"], labels["spark-version"]) == ("executor", "4.0.1")
    done = _state(kube, ns, "TerminatedWithoutReleaseResources", "ResourceReleased", timeout=300)
    assert history_states(done["status"]) == [
        *RUN,
        "Succeeded",
        "TerminatedWithoutReleaseResources",
    ], done["status"]
    new = _driver(kube, ns)
    assert new is not None
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert [r["uid"] for r in new["metadata"]["ownerReferences"]] == [second["metadata"]["uid"]]
    assert new["status"]["phase"] == "Succeeded"
    assert PI_LINE in pod_logs(kube, ns, new["metadata"]["name"])
