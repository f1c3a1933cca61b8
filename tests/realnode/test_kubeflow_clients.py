"""Airflow's cncf-kubernetes provider, unchanged, against sparkplane's operator serving
``sparkoperator.k8s.io/v1beta2`` (issue 21, "Real clients, unchanged"), on the real node.

A real Airflow 3 (:mod:`tests.realnode.airflowd`) runs a DAG written only with
``apache-airflow-providers-cncf-kubernetes``: ``KubernetesCreateResourceOperator`` creates a
v1beta2 SparkPi (the shape and image of :mod:`tests.realnode.test_kubeflow_conformance`) and
``SparkKubernetesSensor`` (``attach_log=True``) waits on its ``.status.applicationState.state``
(seen ``RUNNING``, then ``COMPLETED``) and prints the driver's log from
``.status.driverInfo.podName``. Airflow reaches the cluster through a ``kubernetes`` connection
whose kubeconfig is minted for a service account holding sparkplane's ``client`` role only.

Not here, and why (docs/migrating-from-kubeflow.md): the provider's ``SparkKubernetesOperator``
reads the driver pod as ``<name>-driver`` (Kubeflow's name), while sparkplane names it
``<name>-<attempt>-driver``; the Kubeflow SDK (``kubeflow`` 0.5.0) is not installed: its
``SparkClient`` imports pyspark 4.2.0 (its ``spark`` extra) against sparkplane's 4.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.kube import Kube
from sparkplane.operator.core.settings import OperatorSettings, ReconcileSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.vocab import KUBEFLOW_API_VERSION
from tests.integration.operator_helpers import TEST_LIMITS, operator_identity
from tests.realnode.airflowd import Airflow
from tests.realnode.conftest import PORT_BASE, SERVICE_ACCOUNT
from tests.realnode.sparkapps import SPARK_IMAGE
from tests.realnode.test_airflow import client_kubeconfig

# the API server of this module's Airflow: test_airflow.py's is PORT_BASE + 19, SeaweedFS's +7..+14
PORT = PORT_BASE + 17
APP = "SparkApplication"
NAME = "spark-pi"
DAG_ID = "kubeflow_pi"
DAG = """
from datetime import datetime
from pathlib import Path

from airflow.providers.cncf.kubernetes.operators.resource import KubernetesCreateResourceOperator
from airflow.providers.cncf.kubernetes.sensors.spark_kubernetes import SparkKubernetesSensor
from airflow.sdk import DAG

with DAG("kubeflow_pi", schedule=None, start_date=datetime(2026, 1, 1)):
    submit = KubernetesCreateResourceOperator(
        task_id="submit",
        yaml_conf=Path(__file__).with_name("spark-pi.yaml").read_text(),
        custom_resource_definition=True,
    )
    wait = SparkKubernetesSensor(
        task_id="wait", application_name="spark-pi", attach_log=True, poke_interval=5
    )
    submit >> wait
"""


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[str]:
    """sparkplane's operator as its shipped RBAC, watching ``namespace``."""
    install_crds(kube)
    settings = OperatorSettings(
        namespaces=(namespace,),
        leader_election=False,
        workers=2,
        reconcile=ReconcileSettings(limits=TEST_LIMITS),
    )
    with operator_identity(kube, namespace) as acting:
        running = Operator(acting, settings).start()
        try:
            yield namespace
        finally:
            running.stop()


def _pi(namespace: str) -> dict[str, Any]:
    """Kubeflow's examples/spark-pi.yaml, adapted as test_kubeflow_conformance's."""
    role = {"cores": 1, "coreRequest": "200m", "memory": "512m"}
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": APP,
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "image": SPARK_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "mainClass": "org.sparkplane.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "arguments": ["8"],
            "sparkVersion": "4.0.1",
            "timeToLiveSeconds": 600,
            "driver": {**role, "serviceAccount": SERVICE_ACCOUNT},
            "executor": {**role, "instances": 1},
        },
    }


@pytest.mark.timeout(900)  # Airflow's boot, one SparkPi on the real node
def test_airflows_cncf_provider_drives_a_v1beta2_sparkpi(
    kube: Kube, kubeconfig: Path, operator: str, tmp_path: Path
) -> None:
    namespace = operator
    minted = client_kubeconfig(kubeconfig, namespace, tmp_path / "airflow.kubeconfig")
    conn = {
        "conn_type": "kubernetes",
        "extra": {"kube_config_path": str(minted), "namespace": namespace},
    }
    airflow = Airflow(
        tmp_path / "airflow", PORT, {"AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(conn)}
    )
    (airflow.dags / "spark-pi.yaml").write_text(yaml.safe_dump(_pi(namespace)))
    (airflow.dags / "kubeflow_pi.py").write_text(DAG)
    try:
        airflow.up()
        airflow.trigger(DAG_ID, "run-1")
        airflow.wait_state(DAG_ID, "run-1", "submit", ("success",), timeout=240)
        airflow.wait_state(DAG_ID, "run-1", "wait", ("success",), timeout=480)
        log = airflow.task_log(DAG_ID, "run-1", "wait")
        # Kubeflow's states, read by the sensor; the driver's log, read from driverInfo.podName
        assert "Spark application is still in state: RUNNING" in log, log[-3000:]
        assert "Pi is roughly 3" in log, log[-3000:]
    finally:
        airflow.stop_all()
        print(f"---- scheduler ----\n{airflow.log('scheduler')}")

    cr = kube.get(KUBEFLOW_API_VERSION, APP, NAME, namespace)
    status = cr.get("status") or {}
    assert status["applicationState"]["state"] == "COMPLETED", status
