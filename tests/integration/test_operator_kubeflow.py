"""Kubeflow's v1beta2 SparkApplication through sparkplane's operator on the KWOK dev cluster.

The operator acts as its service account with the shipped RBAC (no ``forbidden`` in its log);
the driver simulator plays Spark (its ``sim.sparkplane.io/*`` annotations reach the driver pod
through Kubeflow's ``driver.annotations``). Checked: the states Kubeflow reports on the way
(SUBMITTED → RUNNING → COMPLETED, then FAILED for a driver that fails with ``restartPolicy:
OnFailure`` and one retry: ``executionAttempts`` 2), Kubeflow's status fields, the driver pod
owned by the v1beta2 resource, Events on it, and ``timeToLiveSeconds`` deleting the resource.
The real-node twin (real Spark, Kubeflow's examples) is tests/realnode/test_kubeflow_conformance.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane import SparkPlane
from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.vocab import KUBEFLOW_API_VERSION
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator

APP = "SparkApplication"


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[Operator]:
    install_crds(kube)
    with running_operator(kube, namespace) as op:
        yield op


def _app(name: str, sim: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": APP,
        "metadata": {"name": name},
        "spec": {
            "type": "Scala",
            "image": "apache/spark:4.0.1",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "sparkVersion": "4.0.1",
            "driver": {
                "cores": 1,
                "memory": "512m",
                "annotations": {f"sim.sparkplane.io/{k}": v for k, v in sim.items()},
            },
            "executor": {"instances": 1, "cores": 1, "memory": "512m"},
            **spec,
        },
    }


def _watch(kube: Kube, namespace: str, name: str, until: str, timeout: float = 60) -> Any:
    """Every ``applicationState.state`` the resource had, from its creation until ``until``.

    Read from a watch stream that starts at the creation's resourceVersion, so each status
    write is seen; polling misses a state the operator holds for less than one poll on a
    loaded machine.
    """
    created = kube.get(KUBEFLOW_API_VERSION, APP, name, namespace)
    seen: list[str] = []
    state = ((created.get("status") or {}).get("applicationState") or {}).get("state", "")
    if state:
        seen.append(state)
    if state == until:
        return seen, created
    deadline = time.monotonic() + timeout
    version = created["metadata"]["resourceVersion"]
    while time.monotonic() < deadline:
        for event in kube.watch(
            KUBEFLOW_API_VERSION,
            APP,
            namespace,
            resource_version=version,
            field_selector=f"metadata.name={name}",
            timeout_seconds=max(1, int(deadline - time.monotonic())),
        ):
            cr = event.object
            version = cr["metadata"]["resourceVersion"]
            if event.type not in ("ADDED", "MODIFIED"):
                continue
            state = ((cr.get("status") or {}).get("applicationState") or {}).get("state", "")
            if state and (not seen or seen[-1] != state):
                seen.append(state)
            if state == until:
                return seen, cr
    raise AssertionError(f"{name} did not reach {until} in {timeout:.0f} s (seen {seen})")


def test_states_status_and_ttl(kube: Kube, namespace: str, operator: Operator) -> None:
    kube.create(
        _app("ok", {"outcome": "Succeeded", "run-for": "3s"}, timeToLiveSeconds=4),
        namespace=namespace,
    )
    seen, cr = _watch(kube, namespace, "ok", "COMPLETED")
    assert seen[0] == "SUBMITTED" and "RUNNING" in seen, seen
    status = cr["status"]
    assert status["driverInfo"]["podName"] == "ok-driver"  # Kubeflow's name
    assert status["sparkApplicationId"] == "ok-0" and status["executionAttempts"] == 1
    assert status["terminationTime"] and status["lastSubmissionAttemptTime"]
    driver = kube.get("v1", "Pod", "ok-driver", namespace)
    assert driver["metadata"]["labels"]["sparkoperator.k8s.io/app-name"] == "ok"
    owner = driver["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["uid"]) == (KUBEFLOW_API_VERSION, cr["metadata"]["uid"])
    operator.events.flush()
    events = [
        e for e in kube.list("v1", "Event", namespace) if e["involvedObject"].get("name") == "ok"
    ]
    assert events and events[0]["involvedObject"]["apiVersion"] == KUBEFLOW_API_VERSION
    wait_for(
        lambda: kube.get_or_none(KUBEFLOW_API_VERSION, APP, "ok", namespace) is None,
        timeout=60,
        what="timeToLiveSeconds deleting the resource",
    )


def test_application_failure_retried_once(kube: Kube, namespace: str, operator: Operator) -> None:
    policy = {"type": "OnFailure", "onFailureRetries": 1, "onFailureRetryInterval": 1}
    kube.create(
        _app("bad", {"outcome": "Failed", "run-for": "1s"}, restartPolicy=policy),
        namespace=namespace,
    )
    seen, cr = _watch(kube, namespace, "bad", "FAILED", timeout=90)
    assert set(seen) <= {"SUBMITTED", "RUNNING", "FAILING", "PENDING_RERUN", "FAILED"}, seen
    assert cr["status"]["executionAttempts"] == 2, cr["status"]
    assert cr["status"]["applicationState"]["errorMessage"], cr["status"]


def test_suspend_and_resume(kube: Kube, namespace: str, operator: Operator) -> None:
    """Kubeflow v2.4's ``spec.suspend``: created suspended → SUSPENDED with no pod; resumed
    (``SparkPlane.resume``) → RUNNING; suspended running → SUSPENDED, its pods released."""
    sp = SparkPlane(kube, namespace)
    kube.create(_app("held", {"run-for": "600s"}, suspend=True), namespace=namespace)
    _watch(kube, namespace, "held", "SUSPENDED")
    selector = "sparkoperator.k8s.io/app-name=held"
    assert not kube.list("v1", "Pod", namespace, label_selector=selector)
    assert sp.resume("held").mode.value == "kubeflow"
    _watch(kube, namespace, "held", "RUNNING")
    sp.suspend("held")
    _watch(kube, namespace, "held", "SUSPENDED")
    wait_for(
        lambda: not kube.list("v1", "Pod", namespace, label_selector=selector),
        timeout=60,
        what="held's pods released",
    )
