"""Airflow's cncf-kubernetes provider, unchanged, against sparkplane's operator serving
``sparkoperator.k8s.io/v1beta2`` (issue 21, "Real clients, unchanged"), on the real node.

A real Airflow 3 (:mod:`tests.realnode.airflowd`) runs ONE DAG run written only with
``apache-airflow-providers-cncf-kubernetes``, two paths side by side, each a v1beta2 SparkPi
(the shape and image of :mod:`tests.realnode.test_kubeflow_conformance`):

- ``KubernetesCreateResourceOperator`` creates it and ``SparkKubernetesSensor``
  (``attach_log=True``) waits on its ``.status.applicationState.state`` (seen ``RUNNING``, then
  ``COMPLETED``) and prints the driver's log from ``.status.driverInfo.podName``;
- ``SparkKubernetesOperator`` (non-deferrable, as documented) creates it under a random name,
  reads ``sparkapplications/status`` until it leaves ``SUBMITTED``, then follows the pod it
  assumes is Kubeflow's ``<name>-driver`` and streams its log into the task log.

Airflow reaches the cluster through a ``kubernetes`` connection whose kubeconfig is minted for a
service account holding sparkplane's ``client`` role only.

Meanwhile (its SparkPi runs while Airflow boots) the Kubeflow SDK (``kubeflow`` 0.5.0, in its own
``.venv-kubeflow``: ``make kubeflow-venv``) drives a third one with its ``SparkClient`` batch
calls, unchanged, through the same kubeconfig: ``submit_job`` (a ``FileJob``; one option, the
SDK's documented callable pattern, swaps its Kind defaults — ``apache/spark:4.0.4``, the
``spark-operator-spark`` account, 1 whole core — for the dev cluster's image, account and sizes),
``wait_for_job_status`` (Completed), ``get_job_logs`` (from ``driverInfo.podName``) and
``delete_job``.
"""

from __future__ import annotations

import json
import subprocess
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
from tests.realnode.airflowd import ROOT, Airflow
from tests.realnode.conftest import PORT_BASE, SERVICE_ACCOUNT
from tests.realnode.sparkapps import SPARK_IMAGE
from tests.realnode.test_airflow import client_kubeconfig

# the API server of this module's Airflow: test_airflow.py's is PORT_BASE + 19, SeaweedFS's +7..+14
PORT = PORT_BASE + 17
APP = "SparkApplication"
NAME = "spark-pi"
DAG_ID = "kubeflow_pi"
OP_NAME = "spark-pi-op"
DAG = """
from datetime import datetime
from pathlib import Path

import yaml
from airflow.providers.cncf.kubernetes.operators.resource import KubernetesCreateResourceOperator
from airflow.providers.cncf.kubernetes.operators.spark_kubernetes import SparkKubernetesOperator
from airflow.providers.cncf.kubernetes.sensors.spark_kubernetes import SparkKubernetesSensor
from airflow.sdk import DAG

HERE = Path(__file__).parent
with DAG("kubeflow_pi", schedule=None, start_date=datetime(2026, 1, 1)):
    submit = KubernetesCreateResourceOperator(
        task_id="submit",
        yaml_conf=(HERE / "spark-pi.yaml").read_text(),
        custom_resource_definition=True,
    )
    wait = SparkKubernetesSensor(
        task_id="wait", application_name="spark-pi", attach_log=True, poke_interval=5
    )
    submit >> wait
    op = yaml.safe_load((HERE / "spark-pi-op.yaml").read_text())
    SparkKubernetesOperator(
        task_id="operator",
        template_spec=op,
        namespace=op["metadata"]["namespace"],
        delete_on_termination=False,
    )
"""


SDK_PYTHON = ROOT / ".venv-kubeflow" / "bin" / "python"
SDK_JOB = """
import json
import sys

from kubeflow.spark import FileJob, KubernetesBackendConfig, SparkClient, SparkJobStatus

kubeconfig, namespace, image, account = sys.argv[1:5]


def dev_cluster(app, backend):
    \"\"\"The SDK's option pattern (a callable on the SparkApplication it built).\"\"\"
    app.spec.image = image
    app.spec.spark_version = "4.0.1"
    app.spec.driver.service_account = account
    for role in (app.spec.driver, app.spec.executor):
        role.core_request, role.memory = "200m", "512m"


client = SparkClient(KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig))
job = FileJob("local:///opt/spark/examples/src/main/python/pi.py", args=["8"])
name = client.submit_job(job, num_executors=1, options=[dev_cluster])
done = client.wait_for_job_status(name, {SparkJobStatus.COMPLETED}, timeout=1200)
logs = "\\n".join(client.get_job_logs(name))  # one line per item, no newline
client.delete_job(name)
print(json.dumps({"name": name, "status": done.status.value, "driver": done.driver_pod_name,
                  "pi": [line for line in logs.splitlines() if "Pi is roughly" in line]}))
"""


def _sdk_job(kubeconfig: Path, namespace: str, tmp_path: Path) -> subprocess.Popen[str]:
    """The Kubeflow SDK's SparkClient batch calls, started in .venv-kubeflow."""
    assert SDK_PYTHON.exists(), f"{SDK_PYTHON} is missing: run `make kubeflow-venv`"
    script = tmp_path / "kubeflow_sdk_job.py"
    script.write_text(SDK_JOB)
    args = [str(kubeconfig), namespace, SPARK_IMAGE, SERVICE_ACCOUNT]
    return subprocess.Popen(
        [str(SDK_PYTHON), str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


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


def _pi(namespace: str, name: str = NAME) -> dict[str, Any]:
    """Kubeflow's examples/spark-pi.yaml, adapted as test_kubeflow_conformance's."""
    role = {"cores": 1, "coreRequest": "200m", "memory": "512m"}
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": APP,
        "metadata": {"name": name, "namespace": namespace},
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


# Airflow's boot, three SparkPis side by side (their JVMs took 4 min to start at load 37)
@pytest.mark.timeout(2400)
def test_airflow_and_the_kubeflow_sdk_drive_v1beta2_sparkpis(
    kube: Kube, kubeconfig: Path, operator: str, tmp_path: Path
) -> None:
    namespace = operator
    minted = client_kubeconfig(kubeconfig, namespace, tmp_path / "airflow.kubeconfig")
    conn = {
        "conn_type": "kubernetes",
        "extra": {"kube_config_path": str(minted), "namespace": namespace},
    }
    env = {
        "AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(conn),
        # a task imports the DAG cold (the pod operator's imports); on a loaded 2-core machine
        # that took > 30 s, Airflow's default import timeout
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "180",
    }
    airflow = Airflow(tmp_path / "airflow", PORT, env)
    (airflow.dags / "spark-pi.yaml").write_text(yaml.safe_dump(_pi(namespace)))
    (airflow.dags / "spark-pi-op.yaml").write_text(yaml.safe_dump(_pi(namespace, OP_NAME)))
    (airflow.dags / "kubeflow_pi.py").write_text(DAG)
    sdk = _sdk_job(minted, namespace, tmp_path)
    try:
        airflow.up()
        airflow.trigger(DAG_ID, "run-1")
        airflow.wait_state(DAG_ID, "run-1", "submit", ("success",), timeout=240)
        airflow.wait_state(DAG_ID, "run-1", "wait", ("success",), timeout=900)
        airflow.wait_state(DAG_ID, "run-1", "operator", ("success",), timeout=600)
        log = airflow.task_log(DAG_ID, "run-1", "wait")
        # Kubeflow's states, read by the sensor; the driver's log, read from driverInfo.podName
        assert "Spark application is still in state: RUNNING" in log, log[-3000:]
        assert "Pi is roughly 3" in log, log[-3000:]
        # SparkKubernetesOperator: the log it streamed from the pod it named <name>-driver
        op_log = airflow.task_log(DAG_ID, "run-1", "operator")
        assert "Pi is roughly 3" in op_log, op_log[-3000:]
        # the Kubeflow SDK: submitted, Completed, the driver's log, deleted
        out, err = sdk.communicate(timeout=600)
        assert sdk.returncode == 0, err[-3000:]
        job = json.loads(out.strip().splitlines()[-1])
        assert job["status"] == "Completed" and job["driver"] == f"{job['name']}-driver", job
        assert job["pi"] and job["pi"][0].startswith("Pi is roughly 3"), (job, err[-3000:])
        gone = kube.get_or_none(KUBEFLOW_API_VERSION, APP, job["name"], namespace)
        assert gone is None or gone["metadata"].get("deletionTimestamp"), gone
    finally:
        sdk.kill()
        airflow.stop_all()
        print(f"---- scheduler ----\n{airflow.log('scheduler')}")

    cr = kube.get(KUBEFLOW_API_VERSION, APP, NAME, namespace)
    status = cr.get("status") or {}
    assert status["applicationState"]["state"] == "COMPLETED", status
    assert status["driverInfo"]["podName"] == f"{NAME}-driver", status
    # the operator's app: its name is spark-pi-op-<random suffix>, Airflow's labels on it
    ops = [
        o
        for o in kube.list(KUBEFLOW_API_VERSION, APP, namespace)
        if o["metadata"]["name"].startswith(f"{OP_NAME}-")
    ]
    assert len(ops) == 1, [o["metadata"]["name"] for o in ops]
    op_status = ops[0].get("status") or {}
    assert op_status["applicationState"]["state"] == "COMPLETED", op_status
    assert op_status["driverInfo"]["podName"] == f"{ops[0]['metadata']['name']}-driver"
    assert op_status["submissionAttempts"] == 1, op_status
