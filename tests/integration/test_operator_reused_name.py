"""Issue 27: a SparkApplication created under the name of one just deleted really runs, and never
inherits its predecessor's outcome, whatever the predecessor did (Apache's spark-versions e2e
deletes an app and creates the next under the same name).

The predecessor succeeded (its driver released: only the operator's remembered tombstone is
left), failed (its driver retained: a live pod of the same name until the garbage collector
removes it), or was still running when deleted. Each time the new resource must get a driver of
its own (another uid, controlled by the new resource's uid) and walk its own history. KWOK plays
the drivers (``sim.sparkplane.io/*``); the operator runs in-process with its shipped RBAC.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import (
    API,
    history,
    running_operator,
    spark_app,
    wait_state,
)

pytestmark = pytest.mark.integration
TERMINAL = ("ResourceReleased", "TerminatedWithoutReleaseResources")
KEEP = {"resourceRetainPolicy": "Always"}
#: (what the predecessor does, its tolerations, the state it is deleted in)
BEFORE = {
    "succeeded": ({"outcome": "Succeeded"}, {}, TERMINAL),
    "failed": ({"outcome": "Failed"}, KEEP, TERMINAL),
    "running": ({}, {}, ("RunningHealthy",)),
}


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[Operator]:
    install_crds(kube)
    with running_operator(kube, namespace) as op:
        yield op


def _driver(kube: Kube, namespace: str) -> dict[str, Any] | None:
    return kube.get_or_none("v1", "Pod", "again-0-driver", namespace)


@pytest.mark.parametrize("before", sorted(BEFORE))
def test_a_reused_name_runs_anew(
    kube: Kube, namespace: str, operator: Operator, before: str
) -> None:
    sim, tolerations, deleted_in = BEFORE[before]
    old = kube.create(spark_app("again", sim=sim, tolerations=tolerations), namespace=namespace)
    done = wait_state(kube, namespace, "again", *deleted_in, timeout=60)
    old_driver = _driver(kube, namespace)
    old_driver_uid = (old_driver or {}).get("metadata", {}).get("uid")
    kube.delete(API, "SparkApplication", "again", namespace)
    wait_for(
        lambda: kube.get_or_none(API, "SparkApplication", "again", namespace) is None,
        timeout=30,
        what="the first SparkApplication gone",
    )

    # the same name at once; it runs a while and succeeds, its driver retained for reading
    sim_new = {"outcome": "Succeeded", "run-for": "3s"}
    new = kube.create(spark_app("again", sim=sim_new, tolerations=KEEP), namespace=namespace)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    cr = wait_state(kube, namespace, "again", *TERMINAL, timeout=90)
    states = history(cr)
    assert states == [
        "Submitted",
        "DriverRequested",
        "DriverStarted",
        "DriverReady",
        "RunningHealthy",
        "Succeeded",
        "TerminatedWithoutReleaseResources",
    ], (before, history(done), states)
    driver = _driver(kube, namespace)
    assert driver is not None
    owners = [r["uid"] for r in driver["metadata"]["ownerReferences"]]
    assert owners == [new["metadata"]["uid"]]
    assert driver["metadata"]["uid"] != old_driver_uid
    assert driver["status"]["phase"] == "Succeeded"
    # its Events name the new resource's uid, never the old one's
    events = [
        e
        for e in kube.list("v1", "Event", namespace)
        if e["involvedObject"].get("name") == "again"
        and e["involvedObject"].get("kind") == "SparkApplication"
    ]
    assert {e["involvedObject"].get("uid") for e in events} >= {new["metadata"]["uid"]}
