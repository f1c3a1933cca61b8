"""The operator reads podTemplateFile only from its --pod-template-dir (issue 12 item 6).

Before, a SparkApplication naming any file on the operator's machine had its metadata/spec
copied into a pod its author can read. Now: no directory configured → the app fails with a
message pointing at podTemplateSpec and no driver pod exists; a file inside the configured
directory is used; a path outside it (also via ``..``) is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from tests.integration.operator_helpers import API, pods, running_operator, spark_app, wait_state

FAILED = ("Failed", "SchedulingFailure", "ResourceReleased", "TerminatedWithoutReleaseResources")


@pytest.fixture(scope="session")
def crds(kube: Kube) -> None:
    install_crds(kube)


def _template(path: Path, annotation: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  annotations:\n"
        f"    leaked-from-operator-host: {annotation}\n"
    )
    return path


def _submit(kube: Kube, namespace: str, name: str, template: str) -> None:
    app = spark_app(name, conf={"spark.kubernetes.driver.podTemplateFile": template})
    kube.create(app, namespace)


def _messages(cr: dict[str, object]) -> str:
    status = cr.get("status") or {}
    assert isinstance(status, dict)
    history = status.get("stateTransitionHistory") or {}
    return " ".join(str(v.get("message", "")) for v in history.values())


def test_without_a_directory_no_file_is_read(
    kube: Kube, namespace: str, crds: None, tmp_path: Path
) -> None:
    secret = _template(tmp_path / "operator-secret.yaml", "yes")
    with running_operator(kube, namespace):
        _submit(kube, namespace, "steal", str(secret))
        cr = wait_state(kube, namespace, "steal", *FAILED, timeout=60)
    assert "could not be read by the operator" in _messages(cr)
    assert "podTemplateSpec" in _messages(cr)
    assert pods(kube, namespace, "spark-role=driver") == []


def test_only_the_configured_directory_is_read(
    kube: Kube, namespace: str, crds: None, tmp_path: Path
) -> None:
    allowed = tmp_path / "templates"
    allowed.mkdir()
    _template(allowed / "driver.yaml", "allowed")
    secret = _template(tmp_path / "operator-secret.yaml", "leaked")
    with running_operator(kube, namespace, pod_template_dir=str(allowed)):
        _submit(kube, namespace, "inside", str(allowed / "driver.yaml"))
        _submit(kube, namespace, "outside", str(secret))
        _submit(kube, namespace, "dotdot", f"{allowed}/../operator-secret.yaml")
        wait_state(
            kube,
            namespace,
            "inside",
            "DriverRequested",
            "DriverStarted",
            "RunningHealthy",
            "Succeeded",
            "ResourceReleased",
            timeout=60,
        )
        for name in ("outside", "dotdot"):
            cr = wait_state(kube, namespace, name, *FAILED, timeout=60)
            assert "could not be read by the operator" in _messages(cr)
    drivers = pods(kube, namespace, "spark-role=driver")
    values = [
        (p["metadata"].get("annotations") or {}).get("leaked-from-operator-host") for p in drivers
    ]
    assert values == ["allowed"]
    assert kube.get_or_none(API, "SparkApplication", "inside", namespace) is not None
