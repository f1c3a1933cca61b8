"""A real Airflow 3 (SQLite, LocalExecutor, every component its own process) runs sparkplane's
provider against the real node: the DAG of docs/airflow.md submits a native SparkPi, defers, and
survives its scheduler and triggerer being killed (SIGKILL) and restarted while it waits: the
restarted triggerer re-attaches to the same app (exactly one driver), the task ends success with
the app's outcome in XCom and the driver's log in the task log. Meanwhile a second, long app's
task is cleared while deferred: the trigger's ``on_kill`` kills the app and nothing of it is left;
its new try submits a new app, which marking the task failed kills in turn. A third DAG runs the
same SparkPi in operator mode (an Apache-API ``spark.apache.org/v1`` SparkApplication reconciled
by sparkplane's operator, running with its shipped RBAC): it succeeds with the CR's outcome in
XCom. While deferred, the driver's log goes into the task log live: the trigger's part of the log
holds the driver's lines, ``Pi is roughly`` among them, before the task resumed.

Airflow reaches the cluster through a ``sparkplane`` connection (``AIRFLOW_CONN_*``, extra
``kubeconfig``) holding a kubeconfig minted for a service account with sparkplane's ``client``
role only: the provider runs with the RBAC the project ships, never as admin. A spec error fails
its task at once (no retry). Four Spark apps (two of them killed early), one Airflow boot.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from sparkplane import SparkPlane
from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from sparkplane_airflow.ids import submission_id  # pure (pytest's pythonpath): no Airflow
from tests.docblocks import blocks
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator
from tests.realnode.airflowd import ROOT, Airflow
from tests.realnode.sparkapps import spec

# the API server of Airflow: past the real cluster's 15 ports, before the demo cluster's
PORT = int(os.environ.get("SPARKPLANE_REAL_TEST_PORT_BASE", "17463")) + 19
DOCS_DAG = "spark_pi"
LONG_DAG = "spark_long"
LONG = """
from datetime import datetime

from airflow.sdk import DAG
from sparkplane_airflow.operators import SparkPlaneSubmitOperator

with DAG("spark_long", schedule=None, start_date=datetime(2026, 1, 1)):
    SparkPlaneSubmitOperator(task_id="pi", spec={spec})
"""
OPERATOR = """
from datetime import datetime

from airflow.sdk import DAG
from sparkplane_airflow.operators import SparkPlaneSubmitOperator

with DAG("spark_operator", schedule=None, start_date=datetime(2026, 1, 1)):
    SparkPlaneSubmitOperator(task_id="pi", mode="operator", spec={spec})
"""
BAD = """
from datetime import datetime

from airflow.sdk import DAG
from sparkplane_airflow.operators import SparkPlaneSubmitOperator

with DAG("spark_bad", schedule=None, start_date=datetime(2026, 1, 1)):
    SparkPlaneSubmitOperator(task_id="pi", retries=2, spec={spec})
"""


def docs_dag() -> str:
    """The DAG of docs/airflow.md, as a user copies it."""
    python = [b for b in blocks(ROOT / "docs" / "airflow.md") if b.lang == "python"]
    assert python, "docs/airflow.md has no python block (the DAG)"
    return python[0].text


def client_kubeconfig(kubeconfig: Path, namespace: str, dest: Path) -> Path:
    """A kubeconfig for service account ``airflow`` holding sparkplane's client role only."""
    with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as sp:
        sp.rbac("client", namespace, service_account="airflow", apply=True)
        minted = sp.kubeconfig("airflow", namespace)
    dest.write_text(minted.text())
    return dest


def objects_of(kube: Kube, namespace: str, sid: str) -> list[str]:
    """Every pod, service and config map sparkplane made under submission id ``sid``."""
    found = []
    selector = f"sparkplane.io/submission-id={sid}"
    for kind in ("Pod", "Service", "ConfigMap"):
        found += [
            f"{kind}/{o['metadata']['name']}"
            for o in kube.list("v1", kind, namespace, label_selector=selector)
        ]
    return found


def drivers(kube: Kube, namespace: str, sid: str) -> list[str]:
    selector = f"sparkplane.io/submission-id={sid},spark-role=driver"
    return [
        p["metadata"]["name"] for p in kube.list("v1", "Pod", namespace, label_selector=selector)
    ]


@pytest.mark.timeout(1200)  # Airflow's boot, four apps on the real node, two restarts
def test_a_dag_survives_its_scheduler_and_triggerer_and_a_clear_kills_its_app(
    kube: Kube, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    conn = {
        "conn_type": "sparkplane",
        "extra": {
            "kubeconfig": str(
                client_kubeconfig(kubeconfig, namespace, tmp_path / "airflow.kubeconfig")
            ),
            "namespace": namespace,
        },
    }
    airflow = Airflow(
        tmp_path / "airflow", PORT, {"AIRFLOW_CONN_SPARKPLANE_DEFAULT": json.dumps(conn)}
    )
    pi = spec("spark-pi", namespace, executors=1)
    (airflow.dags / "spark-pi.yaml").write_text(yaml.safe_dump(pi))
    (airflow.dags / "spark_pi.py").write_text(docs_dag())
    # long, but throttled: it must not starve the short app of the node's CPU
    throttle = {
        "spark.kubernetes.driver.limit.cores": "300m",
        "spark.kubernetes.executor.limit.cores": "100m",
    }
    long = spec("spark-long", namespace, executors=1, args=["200000"], conf=throttle)
    (airflow.dags / "spark_long.py").write_text(LONG.replace("{spec}", repr(long)))
    on_operator = spec("spark-op", namespace, executors=1)
    (airflow.dags / "spark_operator.py").write_text(OPERATOR.replace("{spec}", repr(on_operator)))
    bad = spec("spark-bad", namespace, executors=0)  # refused: no executors, no dynamic allocation
    (airflow.dags / "spark_bad.py").write_text(BAD.replace("{spec}", repr(bad)))
    install_crds(kube)
    with running_operator(kube, namespace, simulate=False):
        _run(airflow, kube, namespace)


def _run(airflow: Airflow, kube: Kube, namespace: str) -> None:
    try:
        airflow.up()
        airflow.trigger(DOCS_DAG, "run-1")
        airflow.trigger(LONG_DAG, "run-1")
        airflow.trigger("spark_bad", "run-1")
        pi_sid = submission_id(DOCS_DAG, "run-1", "pi")
        long_sid = submission_id(LONG_DAG, "run-1", "pi")

        # both wait in the triggerer; the long app's driver runs
        airflow.wait_state(DOCS_DAG, "run-1", "pi", ("deferred",), timeout=240)
        airflow.wait_state(LONG_DAG, "run-1", "pi", ("deferred",), timeout=240)
        assert len(drivers(kube, namespace, pi_sid)) == 1

        # a spec error fails at once, never retried (retries=2), naming the field; nothing made
        airflow.wait_state("spark_bad", "run-1", "pi", ("failed",), timeout=120)
        bad_log = airflow.task_log("spark_bad", "run-1", "pi")
        assert "AirflowFailException" in bad_log and "spark.executor.instances" in bad_log
        assert not objects_of(kube, namespace, submission_id("spark_bad", "run-1", "pi"))

        # a crash of the scheduler and the triggerer while deferred, then a restart
        airflow.kill("triggerer")
        airflow.kill("scheduler")
        assert drivers(kube, namespace, long_sid), "the app must outlive the triggerer"
        airflow.start("scheduler")
        airflow.start("triggerer")

        # the short app ends; its task resumes: success, one driver, XCom, the driver's log
        airflow.wait_state(DOCS_DAG, "run-1", "pi", ("success",), timeout=600)
        assert len(drivers(kube, namespace, pi_sid)) == 1, "re-attached, never submitted twice"
        result = airflow.xcom(DOCS_DAG, "run-1", "pi")
        assert result["state"] == "Succeeded"
        assert (result["namespace"], result["submission_id"]) == (namespace, pi_sid)
        assert result["name"] and result["mode"] == "native"
        log = airflow.task_log(DOCS_DAG, "run-1", "pi")
        assert "driver | " in log and "Pi is roughly" in log, log[-3000:]
        live = airflow.trigger_log(DOCS_DAG, "run-1", "pi")  # written while the task waited
        assert "driver | " in live and "Pi is roughly" in live, live[-3000:]
        # (after the first app: four Spark JVMs at once would starve the 2-core node)
        airflow.trigger("spark_operator", "run-1")

        # the long app's task, cleared while deferred: the trigger's on_kill kills the app,
        # nothing of it is left; the new try submits anew (the run's clear number is in its id)
        assert airflow.state(LONG_DAG, "run-1", "pi") == "deferred"
        airflow.clear(LONG_DAG, "run-1", "pi")
        wait_for(
            lambda: not objects_of(kube, namespace, long_sid),
            timeout=180,
            what="the cleared task's app killed, nothing of it left",
            interval=1,
        )
        again = submission_id(LONG_DAG, "run-1", "pi", clear_number=1)
        airflow.wait_state(LONG_DAG, "run-1", "pi", ("deferred",), timeout=240)
        assert len(drivers(kube, namespace, again)) == 1

        # marked failed while deferred: its app is killed too
        airflow.mark(LONG_DAG, "run-1", "pi", "failed")
        wait_for(
            lambda: not objects_of(kube, namespace, again),
            timeout=180,
            what="the app of the task marked failed killed, nothing of it left",
            interval=1,
        )

        # the Apache-API SparkApplication of the operator-mode DAG: reconciled, succeeded
        airflow.wait_state("spark_operator", "run-1", "pi", ("success",), timeout=600)
        op = airflow.xcom("spark_operator", "run-1", "pi")
        assert (op["state"], op["mode"], op["namespace"]) == ("Succeeded", "operator", namespace)
        cr = kube.get("spark.apache.org/v1", "SparkApplication", op["name"], namespace)
        sid = submission_id("spark_operator", "run-1", "pi")
        assert cr["metadata"]["labels"]["sparkplane.io/submission-id"] == sid
        summary = cr["status"]["currentState"]["currentStateSummary"]
        assert summary in ("Succeeded", "TerminatedWithoutReleaseResources", "ResourceReleased")
        assert "Pi is roughly" in airflow.task_log("spark_operator", "run-1", "pi")
    finally:
        for pod in kube.list("v1", "Pod", namespace):  # what the apps had come to, if one failed
            print(pod["metadata"]["name"], pod.get("status", {}).get("phase"))
        airflow.stop_all()
        for component in ("scheduler", "triggerer"):
            print(f"---- {component} ----\n{airflow.log(component)}")
