"""Kubeflow's own examples and e2e expectations (kubeflow/spark-operator ``examples/``,
``test/e2e/sparkapplication_test.go``), run on the real node through sparkplane's operator
serving ``sparkoperator.k8s.io/v1beta2`` (issue 21), as its shipped RBAC.

One real Spark app (CI time) folds three of Kubeflow's e2e contexts into one SparkApplication:
``spark-pi`` (completes, "Pi is roughly 3" in the driver log), ``spark-pi-configmap`` (the
app's ConfigMap volume on the driver pod, the ``volumeMounts`` on its Spark container, exactly
as written) and ``spark-pi-custom-resource`` (the driver's CPU request and limit as
``coreRequest``/``coreLimit`` say, memory request and limit set). It is submitted with
``sparkplane submit -f`` and then read with ``get``/``describe``/``logs``/``events``, and the
states Kubeflow reports are polled: ``SUBMITTED`` → ``RUNNING`` → ``COMPLETED``.

Adapted openly: the image is the dev cluster's Spark 4.0.1 image (Kubeflow's examples name
``spark:4.0.0``), SparkPi is the image's ``org.sparkplane.examples.SparkPi`` in
``spark-examples.jar`` (Kubeflow's runs Spark's own), sizes fit the 2-core node, and the
driver's service account is the namespace's ``spark`` one. Kubeflow's ``fail-submission`` bad
example (a non-existent service account, ``onSubmissionFailureRetries: 3``) runs no Spark: it
must end ``FAILED`` after 4 submission attempts with no driver pod, passing only through
``SUBMISSION_FAILED`` (and ``SUBMITTED``, which sparkplane writes before it creates a driver:
its fencing order, docs/operator.md); its retry interval is 3 s (Kubeflow's file: 1 s), so
that a poll surely sees the state between attempts on a loaded machine; its errorMessage
says "failed to submit the driver" where Kubeflow's says "failed to run spark-submit" (there
is no spark-submit here). A field
sparkplane does not serve (``monitoring``) ends ``SUBMISSION_FAILED`` naming the field, with
nothing created, and ``sparkplane submit -f`` refuses the same file before creating anything.
"""

from __future__ import annotations

import logging
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
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import TEST_LIMITS, operator_identity
from tests.realnode.conftest import SERVICE_ACCOUNT
from tests.realnode.sparkapps import SPARK_IMAGE, cli, pod_logs

APP = "SparkApplication"
DRIVER_CONTAINER = "spark-kubernetes-driver"


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[str]:
    """sparkplane's operator as its shipped RBAC, watching ``namespace``; no line of its log
    may say ``forbidden`` except the API server refusing the bad example's service account."""
    install_crds(kube)
    handler = _Lines()
    logger = logging.getLogger("sparkplane")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    settings = OperatorSettings(
        namespaces=(namespace,),
        leader_election=False,
        workers=2,
        reconcile=ReconcileSettings(limits=TEST_LIMITS),
    )
    try:
        with operator_identity(kube, namespace) as acting:
            running = Operator(acting, settings).start()
            try:
                yield namespace
            finally:
                running.stop()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    refused = [
        line for line in handler.lines if "forbidden" in line.lower() and "non-existent" not in line
    ]
    assert not refused, "the operator's shipped RBAC was refused:\n" + "\n".join(refused[:10])


def _states(kube: Kube, namespace: str, name: str, until: set[str], timeout: float) -> list[Any]:
    """Poll the resource's status until ``applicationState.state`` is in ``until``; every
    distinct status state seen, in order, then the last resource."""
    seen: list[str] = []
    last: dict[str, Any] = {}

    def check() -> dict[str, Any] | None:
        nonlocal last
        last = kube.get(KUBEFLOW_API_VERSION, APP, name, namespace)
        state = ((last.get("status") or {}).get("applicationState") or {}).get("state", "")
        if not seen or seen[-1] != state:
            seen.append(state)
        return last if state in until else None

    wait_for(check, timeout=timeout, what=f"{name} in {until} (seen {seen})", interval=0.3)
    return [seen, last]


def _pi(namespace: str) -> dict[str, Any]:
    """Kubeflow's examples/spark-pi.yaml + spark-pi-configmap.yaml + spark-pi-custom-resource.yaml
    (adapted: see the module docstring)."""
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": APP,
        "metadata": {"name": "spark-pi", "namespace": namespace},
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
            "volumes": [{"name": "config-vol", "configMap": {"name": "test-configmap"}}],
            "driver": {
                "labels": {"version": "4.0.1"},
                "cores": 1,
                "coreRequest": "200m",
                "coreLimit": "1200m",
                "memory": "512m",
                "serviceAccount": SERVICE_ACCOUNT,
                "volumeMounts": [{"name": "config-vol", "mountPath": "/opt/spark/config"}],
            },
            "executor": {
                "labels": {"version": "4.0.1"},
                "instances": 1,
                "cores": 1,
                "coreRequest": "200m",
                "memory": "512m",
                "volumeMounts": [{"name": "config-vol", "mountPath": "/opt/spark/config"}],
            },
        },
    }


def _fail_submission(namespace: str) -> dict[str, Any]:
    """Kubeflow's test/e2e/bad_examples/fail-submission.yaml (image and version adapted)."""
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": APP,
        "metadata": {"name": "fail-submission", "namespace": namespace},
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "image": SPARK_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "mainClass": "dummy",
            "mainApplicationFile": "local:///dummy.jar",
            "sparkVersion": "4.0.1",
            "restartPolicy": {
                "type": "OnFailure",
                "onSubmissionFailureRetries": 3,
                "onSubmissionFailureRetryInterval": 3,  # Kubeflow's: 1 (see the docstring)
            },
            "driver": {
                "cores": 1,
                "memory": "512m",
                "serviceAccount": "non-existent",  # what makes the submission fail
            },
            "executor": {"instances": 1, "cores": 1, "memory": "512m"},
        },
    }


def _write(tmp_path: Path, body: dict[str, Any]) -> Path:
    path = tmp_path / f"{body['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


@pytest.mark.timeout(900)  # one real Spark app on 2 shared cores, and the bad examples
def test_kubeflow_examples_conform(
    kube: Kube, operator: str, kubeconfig: Path, tmp_path: Path
) -> None:
    ns = operator
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "test-configmap", "namespace": ns},
            "data": {"app.properties": "a=b"},
        }
    )
    # the bad examples first: they run no Spark
    bad = _fail_submission(ns)
    kube.create(bad, namespace=ns)
    seen, failed = _states(kube, ns, "fail-submission", {"FAILED"}, timeout=180)
    status = failed["status"]
    assert "failed to submit the driver" in status["applicationState"]["errorMessage"], status
    assert "non-existent" in status["applicationState"]["errorMessage"], status
    assert status["submissionAttempts"] == 3 + 1, status
    assert set(seen[:-1]) <= {"", "SUBMITTED", "SUBMISSION_FAILED"}, seen
    assert "SUBMISSION_FAILED" in seen, seen
    refused = _pi(ns)
    refused["metadata"]["name"] = "refused"
    refused["spec"]["monitoring"] = {"exposeDriverMetrics": True}
    kube.create(refused, namespace=ns)
    denied = cli(kubeconfig, "submit", "-f", str(_write(tmp_path, refused)), "-n", ns, check=None)
    assert denied.returncode != 0 and "spec.monitoring" in denied.stderr, denied.stderr

    pi = cli(kubeconfig, "submit", "-f", str(_write(tmp_path, _pi(ns))), "-n", ns)
    assert "spark-pi" in pi.stdout, pi.stdout

    drivers = kube.list(
        "v1", "Pod", ns, label_selector="sparkoperator.k8s.io/app-name=fail-submission"
    )
    assert drivers == [], "no driver pod for a failed submission"

    _, stopped = _states(kube, ns, "refused", {"SUBMISSION_FAILED"}, timeout=60)
    message = stopped["status"]["applicationState"]["errorMessage"]
    assert "spec.monitoring: not supported by sparkplane's operator" in message, message
    assert kube.list("v1", "Pod", ns, label_selector="sparkoperator.k8s.io/app-name=refused") == []

    seen, done = _states(kube, ns, "spark-pi", {"COMPLETED", "FAILED"}, timeout=420)
    status = done["status"]
    driver_name = status["driverInfo"]["podName"]
    log = pod_logs(kube, ns, driver_name)
    assert status["applicationState"]["state"] == "COMPLETED", (status, log[-3000:])
    assert [s for s in seen if s] == ["SUBMITTED", "RUNNING", "COMPLETED"], seen
    assert "Pi is roughly 3" in log
    assert status["executionAttempts"] == 1 and status["submissionAttempts"] == 1
    assert status["sparkApplicationId"] and status["executorState"], status
    assert status["lastSubmissionAttemptTime"] and status["terminationTime"], status

    driver = kube.get("v1", "Pod", driver_name, ns)
    assert "config-vol" in {v["name"] for v in driver["spec"]["volumes"]}
    container = next(c for c in driver["spec"]["containers"] if c["name"] == DRIVER_CONTAINER)
    assert {"name": "config-vol", "mountPath": "/opt/spark/config"} in container["volumeMounts"]
    resources = container["resources"]
    assert resources["requests"]["cpu"] == "200m" and resources["limits"]["cpu"] == "1200m"
    assert resources["requests"]["memory"] and resources["limits"]["memory"]
    assert [r["apiVersion"] for r in driver["metadata"]["ownerReferences"]] == [
        KUBEFLOW_API_VERSION
    ]

    # sparkplane's own surface over the v1beta2 app
    got = cli(kubeconfig, "get", "apps", "-n", ns).stdout
    row = next(line for line in got.splitlines() if line.startswith("spark-pi "))
    assert "kubeflow" in row and "Succeeded" in row, got
    assert "Pi is roughly 3" in cli(kubeconfig, "logs", "spark-pi", "-n", ns).stdout
    assert "Succeeded" in cli(kubeconfig, "describe", "spark-pi", "-n", ns).stdout
    cli(kubeconfig, "events", "spark-pi", "-n", ns)
    cli(kubeconfig, "kill", "spark-pi", "-n", ns)
    assert kube.get_or_none(KUBEFLOW_API_VERSION, APP, "spark-pi", ns) is None
