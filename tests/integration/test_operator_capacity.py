"""The operator's backpressure on the real control plane (issue 21 item 5), with a tiny limit.

One driver in flight at most (drivers created and not yet running). A driver that cannot be
scheduled (its node selector matches no node) fills the limit: apps created after it wait in
``Submitted`` and say so (``WaitingForCapacity``, the ``held`` gauge), while an app already
running keeps its status following its driver to the end. Once the blocker goes, the waiting
apps get their drivers one after the other and all end Succeeded.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core.capacity import FULL, CapacitySettings
from sparkplane.operator.core.reconciler import WAITING_FOR_CAPACITY
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import (
    API,
    history,
    pods,
    running_operator,
    spark_app,
    wait_state,
)

pytestmark = pytest.mark.integration
TERMINAL = ("ResourceReleased", "TerminatedWithoutReleaseResources")
TINY = CapacitySettings(initial=1, minimum=1, maximum=1, retry_seconds=0.5)
WAITING = ("w1", "w2", "w3")


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[Operator]:
    install_crds(kube)
    with running_operator(kube, namespace, capacity=TINY) as op:
        yield op


def current(kube: Kube, namespace: str, name: str) -> dict[str, str]:
    cr = kube.get(API, "SparkApplication", name, namespace)
    return dict((cr.get("status") or {}).get("currentState") or {})


def test_apps_beyond_a_tiny_limit_wait_visibly_while_running_apps_keep_updating(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    running = spark_app("running", sim={"outcome": "Succeeded", "run-for": "6s"})
    kube.create(running, namespace=namespace)
    wait_state(kube, namespace, "running", "RunningHealthy", timeout=60)

    nowhere = {"spark.kubernetes.driver.node.selector.sparkplane.io/nowhere": "true"}
    kube.create(spark_app("blocker", conf=nowhere), namespace=namespace)
    wait_state(kube, namespace, "blocker", "DriverRequested", timeout=30)
    for name in WAITING:
        app = spark_app(name, sim={"outcome": "Succeeded", "run-for": "1s"})
        kube.create(app, namespace=namespace)

    def all_held() -> bool:
        return all(
            current(kube, namespace, n).get("message") == f"{WAITING_FOR_CAPACITY}: {FULL}"
            for n in WAITING
        )

    wait_for(all_held, timeout=30, what="the apps beyond the limit say they wait")
    blocker = pods(kube, namespace, "spark-app-selector=blocker-0,spark-role=driver")
    assert blocker and not blocker[0]["spec"].get("nodeName")  # truly not scheduled
    snapshot = operator.capacity.snapshot()
    assert {k: snapshot[k] for k in ("limit", "in_flight", "held")} == {
        "limit": 1.0,
        "in_flight": 1.0,
        "held": 3.0,
    }
    assert 0.0 <= snapshot["watch_lag_seconds"] < 5.0  # its writes come back promptly here
    assert all(current(kube, namespace, n)["currentStateSummary"] == "Submitted" for n in WAITING)
    assert not pods(kube, namespace, "spark-role=driver,spark.operator/spark-app-name=w1")

    # the running app's status follows its driver while the others wait
    done = wait_state(kube, namespace, "running", *TERMINAL, timeout=60)
    assert "Succeeded" in history(done)
    assert all_held()

    kube.delete(API, "SparkApplication", "blocker", namespace)
    for name in WAITING:
        cr = wait_state(kube, namespace, name, *TERMINAL, timeout=60)
        assert "Succeeded" in history(cr), (name, history(cr))
        assert history(cr)[:2] == ["Submitted", "DriverRequested"]
    assert operator.capacity.snapshot()["held"] == 0.0
