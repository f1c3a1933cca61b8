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

And the SDK's interactive call, ``SparkClient.connect()``, unchanged, against a SparkConnect
(``sparkoperator.k8s.io/v1alpha1``) served by sparkplane's operator: it creates the resource,
waits for its ``status.state`` to be ``Ready``, port-forwards to ``status.server.podName``
with the real ``kubectl`` (what the SDK does outside a cluster) and hands back a Spark Connect
session that runs ``spark.range(10).count()`` on the real Spark 4.0.1 Connect server; then
``delete_session`` and the garbage collector remove the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.kube import Kube
from sparkplane.operator.core.settings import OperatorSettings, ReconcileSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.spec.kubeflow_connect import CONNECT_NAME_LABEL
from sparkplane.vocab import KUBEFLOW_API_VERSION
from tests.integration.helpers import wait_for
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


SDK_CONNECT = """
import json
import sys
import time

from kubeflow.spark import Driver, KubernetesBackendConfig, SparkClient

kubeconfig, namespace, image, account = sys.argv[1:5]


def dev_cluster(conn, backend):
    \"\"\"The SDK's option pattern, on the SparkConnect it built: the dev cluster's Spark version,
    and no Maven URL for the server's jar (the image has it; the node has no internet).\"\"\"
    conn.spec.spark_version = "4.0.1"
    conn.spec.spark_conf.pop("spark.jars", None)


started = time.monotonic()
client = SparkClient(KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig))
spark = client.connect(
    num_executors=1,
    resources_per_executor={"cpu": "1", "memory": "512Mi"},
    spark_conf={
        "spark.kubernetes.driver.request.cores": "200m",
        "spark.kubernetes.executor.request.cores": "200m",
    },
    driver=Driver(image=image, service_account=account, resources={"memory": "768Mi"}),
    options=[dev_cluster],
    timeout=600,
    connect_timeout=300,
)
connected = time.monotonic() - started
count = spark.range(10).count()
counted = time.monotonic() - started
version = spark.version
(session,) = client.list_sessions()
spark.stop()
client.delete_session(session.name)
print(json.dumps({"count": count, "version": version, "name": session.name,
                  "state": session.state.value, "pod": session.driver_pod_name,
                  "service": session.service_name, "connected": connected,
                  "counted": counted, "deleted": time.monotonic() - started}))
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


class _ExecutorLogs:
    """Catches the log of each executor pod whose container ended, before Spark deletes the
    pod (it does within seconds): what a failed connect() needs to be explained."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.caught: dict[str, list[str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _ExecutorLogs:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(Exception):
                for pod in self.kube.list(
                    "v1", "Pod", self.namespace, label_selector="spark-role=executor"
                ):
                    name = pod["metadata"]["name"]
                    statuses = pod.get("status", {}).get("containerStatuses") or []
                    ended = any("terminated" in (c.get("state") or {}) for c in statuses)
                    if ended and name not in self.caught and len(self.caught) < 4:
                        log = self.kube.logs(name, self.namespace, tail_lines=80)
                        self.caught[name] = [json.dumps(statuses), *log]

    def story(self) -> str:
        lines = []
        for name, log in self.caught.items():
            lines.append(f"--- executor {name}:")
            lines.extend(log)
        return "\n" + "\n".join(lines)


def _connect_story(kube: Kube, namespace: str) -> str:
    """What a failed connect() leaves to read: each SparkConnect's state history, its
    server pods' container states and the end of their logs."""
    lines = []
    for cr in kube.list("sparkoperator.k8s.io/v1alpha1", "SparkConnect", namespace):
        status = cr.get("status") or {}
        internal = status.get("sparkplane") or {}
        history = internal.get("stateTransitionHistory") or {}
        steps = [f"{v.get('currentStateSummary')}: {v.get('message')}" for v in history.values()]
        lines.append(f"SparkConnect {cr['metadata']['name']}: {status.get('state')} {steps}")
    for pod in kube.list("v1", "Pod", namespace, label_selector=CONNECT_NAME_LABEL):
        name = pod["metadata"]["name"]
        lines.append(f"pod {name}: {json.dumps(pod.get('status', {}).get('containerStatuses'))}")
        with contextlib.suppress(Exception):
            lines.extend(list(kube.logs(name, namespace, tail_lines=150)))
    return "\n" + "\n".join(lines)


@pytest.mark.timeout(900)
def test_the_kubeflow_sdks_connect_gets_a_session_from_a_sparkconnect(
    kube: Kube, kubeconfig: Path, operator: str, tmp_path: Path
) -> None:
    """``SparkClient.connect()`` (the real SDK, unchanged) against sparkplane's operator."""
    namespace = operator
    minted = client_kubeconfig(kubeconfig, namespace, tmp_path / "sdk.kubeconfig")
    script = tmp_path / "kubeflow_sdk_connect.py"
    script.write_text(SDK_CONNECT)
    assert SDK_PYTHON.exists(), f"{SDK_PYTHON} is missing: run `make kubeflow-venv`"
    env = {**os.environ, "KUBECONFIG": str(minted)}  # the SDK's `kubectl port-forward` uses it
    args = [str(minted), namespace, SPARK_IMAGE, SERVICE_ACCOUNT]
    sdk = subprocess.Popen(
        [str(SDK_PYTHON), str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its kubectl port-forward too: ended with it below
    )
    with _ExecutorLogs(kube, namespace) as executors:
        try:
            out, err = sdk.communicate(timeout=840)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(sdk.pid, signal.SIGTERM)
    ended = time.monotonic()
    assert sdk.returncode == 0, err[-3000:] + _connect_story(kube, namespace) + executors.story()
    got = json.loads(out.strip().splitlines()[-1])
    print(
        f"SDK connect: ready and connected {got['connected']:.0f} s, counted "
        f"{got['counted']:.0f} s, deleted {got['deleted']:.0f} s"
    )
    assert got["count"] == 10 and got["version"] == "4.0.1", got
    assert got["state"] == "Ready", got
    assert got["pod"] == f"{got['name']}-server" and got["service"] == got["pod"], got
    wait_for(
        lambda: (
            not kube.list(
                "v1", "Pod", namespace, label_selector=f"{CONNECT_NAME_LABEL}={got['name']}"
            )
        ),
        timeout=180,
        what="the garbage collector removing the deleted SparkConnect's server and executors",
    )
    print(f"gone {time.monotonic() - ended:.0f} s after the SDK's end")
