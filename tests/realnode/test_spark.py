"""Spark really runs: SparkPi computes on the real node, the real driver creates its executors
(owned by the driver pod), failures and OOM kills are reported as such, logs follow a real driver
and `ui` serves the real Spark UI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for
from tests.realnode.sparkapps import cli, driver_pod, spec, submit, write

PI_LINE = "Pi is roughly 3.1"


def _executors(kube: Kube, namespace: str) -> list[dict]:
    return kube.list("v1", "Pod", namespace, label_selector="spark-role=executor")


def test_sparkpi_jvm_computes_with_executors_owned_by_the_driver(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    path = write(tmp_path, spec("spark-pi", namespace, args=["40"], executors=2))
    name = submit(kubeconfig, "-f", str(path))
    driver = wait_for(lambda: driver_pod(kube, namespace, name), timeout=30, what="driver")
    uid = driver["metadata"]["uid"]
    # the dependents sparkplane made are owned by the driver pod
    for kind in ("ConfigMap", "Service"):
        owned = [
            o
            for o in kube.list("v1", kind, namespace)
            if any(r["uid"] == uid for r in o["metadata"].get("ownerReferences", []))
        ]
        assert owned, f"no {kind} owned by the driver"
    executors = wait_for(
        lambda: (
            [e for e in _executors(kube, namespace) if e["metadata"].get("ownerReferences")] or None
        ),
        timeout=180,
        what="executor pods created by the real driver",
    )
    for pod in executors:
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"]) == ("Pod", uid)
    cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "300")
    logs = cli(kubeconfig, "logs", name, "-n", namespace).stdout
    assert PI_LINE in logs
    got = json.loads(cli(kubeconfig, "get", "apps", name, "-n", namespace, "-o", "json").stdout)
    assert "Succeeded" in json.dumps(got)


def test_python_pi_computes_and_logs_follow_the_real_driver(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    path = write(tmp_path, spec("py-pi", namespace, python=True, args=["8"], executors=1))
    name = submit(kubeconfig, "-f", str(path))
    wait_for(lambda: driver_pod(kube, namespace, name), timeout=30, what="driver")
    cli(kubeconfig, "wait", name, "--for", "running", "-n", namespace, "--timeout", "120")
    follow = cli(kubeconfig, "logs", "-f", name, "-n", namespace, timeout=300)
    assert PI_LINE in follow.stdout  # -f returned because the driver ended, with its output
    cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "60")


def _code_volume(kube: Kube, namespace: str, name: str, code: str) -> dict:
    """Put ``code`` in a ConfigMap and mount it at /opt/app in the driver (a pod template)."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"job.py": code},
        }
    )
    return {
        "pyFiles": "local:///opt/app/job.py",
        "driverSpec": {
            "podTemplateSpec": {
                "spec": {
                    "volumes": [{"name": "app", "configMap": {"name": name}}],
                    "containers": [
                        {
                            "name": "spark-kubernetes-driver",
                            "volumeMounts": [{"name": "app", "mountPath": "/opt/app"}],
                        }
                    ],
                }
            }
        },
    }


def _python_app(kube: Kube, namespace: str, name: str, code: str, tmp_path: Path, **kw) -> Path:
    body = spec(name, namespace, python=True, executors=1, **kw)
    body["spec"].update(_code_volume(kube, namespace, f"{name}-code", code))
    return write(tmp_path, body)


def test_failing_job_reports_failed_with_exit_code_and_error(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "raise RuntimeError('the input table is missing: sales_2026')\n"
    )
    path = _python_app(kube, namespace, "broken", code, tmp_path)
    name = submit(kubeconfig, "-f", str(path))
    waited = cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "300", check=1)
    app = json.loads(cli(kubeconfig, "get", "apps", name, "-n", namespace, "-o", "json").stdout)
    text = json.dumps(app)
    assert "Failed" in text
    driver = driver_pod(kube, namespace, name)
    assert driver is not None
    term = driver["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] != 0
    assert str(term["exitCode"]) in waited.stdout + waited.stderr + text
    logs = cli(kubeconfig, "logs", name, "-n", namespace).stdout
    assert "the input table is missing: sales_2026" in logs


def test_real_oom_kill_is_reported_as_oomkilled(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    code = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.getOrCreate()\n"
        "hog = []\n"
        "while True:\n"
        "    hog.append(bytearray(64 << 20))\n"
    )
    path = _python_app(
        kube, namespace, "hungry", code, tmp_path, conf={"spark.driver.memoryOverhead": "128m"}
    )
    name = submit(kubeconfig, "-f", str(path))
    cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "300", check=1)
    got = json.loads(cli(kubeconfig, "get", "apps", name, "-n", namespace, "-o", "json").stdout)
    assert "OOMKilled" in json.dumps(got)


def test_ui_serves_the_real_spark_ui(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    code = (
        "import time\n"
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.appName('ui-check').getOrCreate()\n"
        "spark.range(1000).count()\n"
        "time.sleep(120)\n"
    )
    path = _python_app(kube, namespace, "ui-app", code, tmp_path)
    name = submit(kubeconfig, "-f", str(path))
    cli(kubeconfig, "wait", name, "--for", "running", "-n", namespace, "--timeout", "120")
    env_ui = subprocess.Popen(
        [sys.executable, "-m", "sparkplane.cli", "ui", name, "-n", namespace, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, "SPARKPLANE_KUBECONFIG": str(kubeconfig)},
    )
    try:
        assert env_ui.stdout is not None
        url = env_ui.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url

        def page() -> str | None:
            try:
                with urllib.request.urlopen(url + "/jobs/", timeout=5) as resp:
                    body = resp.read().decode()
            except OSError:
                return None
            # the real UI of this app, once its first job (the count) has completed
            return body if "Spark Jobs" in body and "Completed Jobs" in body else None

        body = wait_for(page, timeout=120, what="the Spark UI's jobs page", interval=2)
        assert "ui-app" in body or "ui-check" in body, body[:2000]
    finally:
        env_ui.terminate()
        env_ui.wait(10)
    cli(kubeconfig, "kill", name, "-n", namespace, "--wait")
    assert driver_pod(kube, namespace, name) is None
    time.sleep(0)
