"""The same lifecycle API for apps owned by SparkApplication resources: Apache's API
(spark.apache.org, served by our operator or Apache's) and Kubeflow's (sparkoperator.k8s.io).

The CRDs are installed for real; the resources' status is written the way each operator writes
it (through the status subresource), so these tests need no operator running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparkplane import AppPhase, Mode, Reason, SparkPlane
from sparkplane.errors import AppNotFoundError
from sparkplane.kube import Kube
from sparkplane.operator.deploy.crd import crds
from sparkplane.vocab import owner_reference
from tests.integration.helpers import wait_for

EXAMPLES = Path(__file__).parents[2] / "examples"


def _established(kube: Kube, name: str) -> bool:
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    conds = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conds)


@pytest.fixture(scope="module")
def crds_installed(kube: Kube) -> None:
    for crd in crds():  # Apache's and Kubeflow's v1beta2 SparkApplication
        kube.apply(crd)
        wait_for(
            lambda c=crd: _established(kube, c["metadata"]["name"]),
            timeout=30,
            what="CRD established",
        )
    for api in ("spark.apache.org/v1", "sparkoperator.k8s.io/v1beta2"):
        wait_for(lambda a=api: _served(kube, a), timeout=30, what=f"{api} served")


def _served(kube: Kube, api: str) -> bool:
    try:
        kube.discovery.resolve(api, "SparkApplication")
    except Exception:
        return False
    return True


def test_apache_api_apps_share_the_native_lifecycle(kube: Kube, namespace: str, crds_installed):
    sp = SparkPlane(kube, namespace)
    doc = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
    doc["metadata"]["namespace"] = namespace
    submitted = sp.submit(doc, mode=Mode.APACHE, submission_id="op-1")
    assert sp.submit(doc, mode=Mode.APACHE, submission_id="op-1").existing
    app = sp.get(submitted.name)
    assert app.mode is Mode.APACHE and app.state.phase is AppPhase.PENDING
    status = {
        "currentState": {
            "currentStateSummary": "RunningHealthy",
            "lastTransitionTime": "2026-11-21T10:00:00Z",
        },
        "stateTransitionHistory": {
            "0": {"currentStateSummary": "Submitted", "lastTransitionTime": "2026-11-21T09:59:00Z"},
            "1": {
                "currentStateSummary": "RunningHealthy",
                "lastTransitionTime": "2026-11-21T10:00:00Z",
            },
        },
    }
    kube.patch(
        "spark.apache.org/v1",
        "SparkApplication",
        submitted.name,
        {"status": status},
        namespace,
        subresource="status",
    )
    # a driver pod owned by the resource, as an operator creates it
    cr = kube.get("spark.apache.org/v1", "SparkApplication", submitted.name, namespace)
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{submitted.name}-0-driver",
                "labels": {"spark-role": "driver", "spark-app-selector": "spark-op1"},
                "ownerReferences": [owner_reference(cr)],
            },
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "x"}]},
        },
        namespace,
    )
    running = sp.get(submitted.name)
    assert running.state.phase is AppPhase.RUNNING
    assert running.driver_pod == f"{submitted.name}-0-driver"
    listed = {a.name: a for a in sp.list()}
    assert listed[submitted.name].mode is Mode.APACHE  # the owned driver is not a native app
    assert len(listed) == 1
    sp.kill(submitted.name, wait=True, timeout=60)  # CR deleted; GC removes its driver pod
    assert kube.list("v1", "Pod", namespace) == []
    with pytest.raises(AppNotFoundError):
        sp.get(submitted.name)


def test_kubeflow_api_apps_are_listed_and_classified(kube: Kube, namespace: str, crds_installed):
    sp = SparkPlane(kube, namespace)
    kube.create(
        {
            "apiVersion": "sparkoperator.k8s.io/v1beta2",
            "kind": "SparkApplication",
            "metadata": {"name": "kf-pi"},
            "spec": {
                "type": "Scala",
                "mode": "cluster",
                "image": "spark:4.0.1",
                "mainClass": "org.apache.spark.examples.SparkPi",
                "sparkVersion": "4.0.1",
                "driver": {"cores": 1},
                "executor": {"instances": 1},
            },
        },
        namespace,
    )
    kube.patch(
        "sparkoperator.k8s.io/v1beta2",
        "SparkApplication",
        "kf-pi",
        {
            "status": {
                "applicationState": {
                    "state": "FAILED",
                    "errorMessage": "driver container OOMKilled",
                },
                "sparkApplicationId": "spark-kf",
            }
        },
        namespace,
        subresource="status",
    )
    app = sp.get("kf-pi")
    assert app.mode is Mode.KUBEFLOW
    assert app.state.phase is AppPhase.FAILED and app.state.reason == Reason.OOM_KILLED
    tracked = sp.tracker(namespace)
    assert (
        wait_for(lambda: tracked.get(namespace, "kf-pi"), timeout=10, what="tracked").mode
        is Mode.KUBEFLOW
    )
    tracked.stop()
