"""ScheduledSparkApplication on the real control plane: fast schedules, all three policies, suspend.

Four schedules run side by side under one in-process operator (and the driver simulator): runs
are SparkApplications owned by their schedule, finished ones beyond the history limits are
deleted, ``Forbid`` never overlaps a running app, ``Replace`` deletes it for the new run, and a
suspended schedule creates nothing until resumed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core.scheduled_spec import GROUP, KIND, VERSION
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.vocab import KUBEFLOW_API_VERSION
from sparkplane.vocab import SCHEDULED_BY_LABEL as SCHEDULE_LABEL
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import API, history, running_operator, spark_app

pytestmark = pytest.mark.integration
SCHED_API = f"{GROUP}/{VERSION}"


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[Operator]:
    install_crds(kube)
    with running_operator(kube, namespace) as op:
        yield op


def schedule(name: str, every: str, policy: str, sim: dict[str, str], **spec: Any) -> Any:
    template = spark_app("unused", sim=sim)["spec"]
    return {
        "apiVersion": SCHED_API,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {
            "schedule": f"@every {every}",
            "concurrencyPolicy": policy,
            "runMetadata": {"labels": {"acceptance": name}},
            "template": template,
            **spec,
        },
    }


def runs(kube: Kube, namespace: str, name: str) -> list[dict[str, Any]]:
    return kube.list(API, "SparkApplication", namespace, label_selector=f"{SCHEDULE_LABEL}={name}")


def status(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    return kube.get(SCHED_API, KIND, name, namespace).get("status") or {}


def test_schedules(kube: Kube, namespace: str, operator: Operator) -> None:
    done = {"outcome": "Succeeded", "run-for": "1s"}
    forever: dict[str, str] = {}
    for doc in (
        schedule("allow", "3s", "Allow", done, successfulRunHistoryLimit=2),
        schedule("forbid", "2s", "Forbid", forever),
        schedule("replace", "4s", "Replace", forever),
        schedule("paused", "2s", "Allow", done, suspend=True),
    ):
        kube.create(doc, namespace=namespace)

    # Allow: runs succeed one after another; two finished ones are kept, older ones deleted
    def two_kept() -> bool:
        kept = status(kube, namespace, "allow").get("pastSuccessfulRunNames") or []
        return len(kept) == 2

    wait_for(two_kept, timeout=60, what="allow: two successful runs kept")
    wait_for(
        lambda: len(runs(kube, namespace, "allow")) <= 3 and status(kube, namespace, "allow")
        .get("lastRunName") not in (status(kube, namespace, "allow").get("pastSuccessfulRunNames")),
        timeout=30,
        what="allow: older runs deleted",
    )  # fmt: skip
    for app in runs(kube, namespace, "allow"):
        assert app["metadata"]["ownerReferences"][0]["kind"] == KIND
        assert app["metadata"]["labels"]["acceptance"] == "allow"
    finished = [
        a for a in runs(kube, namespace, "allow") if history(a)[-1:] == ["ResourceReleased"]
    ]
    assert finished and all("Succeeded" in history(a) for a in finished)

    # Forbid: the first run never ends, so no second run ever starts
    forbid = runs(kube, namespace, "forbid")
    assert len(forbid) == 1
    assert (
        status(kube, namespace, "forbid")["lastRun"]
        > forbid[0]["metadata"]["annotations"]["sparkplane.io/scheduled-at"]
    )  # later due times came and were skipped

    # Replace: each due time deletes the running app and starts a new one
    first = wait_for(lambda: runs(kube, namespace, "replace"), timeout=20, what="replace: run")
    name = first[0]["metadata"]["name"]
    wait_for(
        lambda: kube.get_or_none(API, "SparkApplication", name, namespace) is None,
        timeout=30,
        what=f"replace: {name} deleted for the next run",
    )
    current = wait_for(
        lambda: [a for a in runs(kube, namespace, "replace") if a["metadata"]["name"] != name],
        timeout=20,
        what="replace: the next run",
    )
    assert len(current) == 1

    # suspend: nothing ran; resuming starts runs again without replaying the pause
    assert runs(kube, namespace, "paused") == []
    assert status(kube, namespace, "paused")["reason"] == "suspended"
    kube.patch(SCHED_API, KIND, "paused", {"spec": {"suspend": False}}, namespace)
    resumed = wait_for(lambda: runs(kube, namespace, "paused"), timeout=20, what="resumed run")
    time.sleep(1)
    assert len(runs(kube, namespace, "paused")) <= 2
    assert resumed[0]["spec"]["mainClass"] == "org.apache.spark.examples.SparkPi"


def test_kubeflows_scheduled_spark_application(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    """Kubeflow's ``sparkoperator.k8s.io/v1beta2`` ScheduledSparkApplication, served by the same
    operator (its shipped RBAC): runs are v1beta2 SparkApplications owned by the schedule, each
    reaching Kubeflow's COMPLETED; the history limit keeps one; the status is Kubeflow's."""
    from tests.integration.test_operator_kubeflow import _app

    template = _app("unused", {"outcome": "Succeeded", "run-for": "1s"})["spec"]
    kube.create(
        {
            "apiVersion": KUBEFLOW_API_VERSION,
            "kind": KIND,
            "metadata": {"name": "kf-every"},
            "spec": {"schedule": "@every 3s", "successfulRunHistoryLimit": 1, "template": template},
        },
        namespace=namespace,
    )

    def kf_status() -> dict[str, Any]:
        return kube.get(KUBEFLOW_API_VERSION, KIND, "kf-every", namespace).get("status") or {}

    def kf_runs() -> list[dict[str, Any]]:
        selector = f"{SCHEDULE_LABEL}=kf-every"
        return kube.list(
            KUBEFLOW_API_VERSION, "SparkApplication", namespace, label_selector=selector
        )

    def completed_kept() -> list[str] | None:
        kept = kf_status().get("pastSuccessfulRunNames") or []
        return kept if len(kept) == 1 else None

    [kept] = wait_for(completed_kept, timeout=90, what="kf-every: a COMPLETED run kept")
    run = kube.get(KUBEFLOW_API_VERSION, "SparkApplication", kept, namespace)
    assert run["status"]["applicationState"]["state"] == "COMPLETED"
    [owner] = run["metadata"]["ownerReferences"]
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == (
        KUBEFLOW_API_VERSION,
        KIND,
        "kf-every",
    )
    status = kf_status()
    assert status["scheduleState"] == "Scheduled" and status["lastRunName"]
    assert status["nextRun"] and status["lastRun"]
    wait_for(
        lambda: (
            len(kf_status().get("pastSuccessfulRunNames") or []) == 1
            and kf_status()["pastSuccessfulRunNames"] != [kept]
        ),
        timeout=60,
        what="kf-every: a newer COMPLETED run replaces the kept one",
    )
    wait_for(
        lambda: all(r["metadata"]["name"] != kept for r in kf_runs()),
        timeout=30,
        what="kf-every: the run beyond the history limit deleted",
    )
    assert not kube.list(API, "SparkApplication", namespace)  # no Apache runs for it
