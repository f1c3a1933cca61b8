"""Helpers for the real-Spark suite: plain pods on the real node, Spark specs, logs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from sparkplane_devcluster.images import SPARK_IMAGE, SPARK_PI_JAR, SPARK_PI_PY

__all__ = ["SPARK_IMAGE", "cli", "driver_pod", "pod_logs", "run_pod", "spec", "submit", "write"]
from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube
from tests.integration.helpers import wait_for
from tests.realnode.conftest import SERVICE_ACCOUNT

DONE = ("Succeeded", "Failed")


def run_pod(
    kube: Kube,
    namespace: str,
    name: str,
    command: list[str],
    *,
    labels: dict[str, str] | None = None,
    wait: str = "Succeeded",
    timeout: float = 120,
) -> dict[str, Any]:
    """Run ``command`` in the Spark image on the real node; return the pod once ``wait``."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": SPARK_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": command,
                        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                    }
                ],
            },
        }
    )

    def phase() -> dict[str, Any] | None:
        pod = kube.get("v1", "Pod", name, namespace)
        got = pod.get("status", {}).get("phase")
        if got == wait:
            return pod
        if got in DONE and wait not in DONE:
            raise AssertionError(f"pod {name} ended {got}: {pod_logs(kube, namespace, name)}")
        return None

    return wait_for(phase, timeout=timeout, what=f"pod {namespace}/{name} {wait}")


def pod_logs(kube: Kube, namespace: str, name: str, container: str | None = None) -> str:
    return "\n".join(kube.logs(name, namespace, container=container))


def spec(
    name: str,
    namespace: str,
    *,
    python: bool = False,
    args: list[str] | None = None,
    executors: int = 2,
    conf: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A SparkApplication spec (Apache's field names) sized for the 2-core real node."""
    body: dict[str, Any] = {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.1", "scalaVersion": "2.13"},
            "image": SPARK_IMAGE,
            "driverArgs": args if args is not None else ["4"],
            "sparkConf": {
                "spark.executor.instances": str(executors),
                "spark.kubernetes.authenticate.driver.serviceAccountName": SERVICE_ACCOUNT,
                "spark.kubernetes.driver.request.cores": "200m",
                "spark.kubernetes.executor.request.cores": "200m",
                "spark.kubernetes.container.image.pullPolicy": "IfNotPresent",
                **(conf or {}),
            },
            "driver": {"cores": 1, "memory": "512m"},
            "executor": {"cores": 1, "memory": "512m"},
        },
    }
    if python:
        body["spec"]["pyFiles"] = SPARK_PI_PY  # Apache's API: the main Python file
    else:
        body["spec"]["mainClass"] = "org.sparkplane.examples.SparkPi"
        body["spec"]["jars"] = SPARK_PI_JAR
    body["spec"].update(extra or {})
    return body


def write(tmp_path: Path, body: dict[str, Any]) -> Path:
    path = tmp_path / f"{body['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def cli(
    kubeconfig: Path,
    *args: str,
    check: int | None = 0,
    timeout: float = 300,
    env_extra: dict[str, str] | None = None,
) -> Any:
    """The sparkplane CLI as a user runs it (``env_extra``: more environment variables)."""
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig), **(env_extra or {}))
    proc = subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if check is not None:
        assert proc.returncode == check, (
            f"{args}: rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def submit(kubeconfig: Path, *args: str) -> str:
    """``sparkplane submit ARGS``; the application's name (what the other commands take)."""
    out = cli(kubeconfig, "submit", *args).stdout.strip().splitlines()
    return out[-1].split()[-1].rsplit("/", 1)[-1]


def driver_pod(kube: Kube, namespace: str, app: str) -> dict[str, Any] | None:
    """The driver pod of ``app`` (its name, its ``spark-app-name``, or for a SparkApplication
    the operator's ``spark.operator/spark-app-name``: Spark's own label is ``spark`` there, as
    Apache leaves ``spark.app.name`` unset), if any."""
    pods = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    for pod in pods:
        meta = pod["metadata"]
        labels = meta["labels"]
        names = (
            labels.get("spark.operator/spark-app-name"),
            labels.get("spark-app-name"),
            meta["name"].removesuffix("-driver"),
        )
        if app in names:
            return pod
    return None


def wait_gone(kube: Kube, namespace: str, kind: str, name: str, timeout: float = 60) -> None:
    def gone() -> bool:
        try:
            kube.get("v1", kind, name, namespace)
        except NotFoundError:
            return True
        return False

    wait_for(gone, timeout=timeout, what=f"{kind} {namespace}/{name} gone")
    time.sleep(0)
