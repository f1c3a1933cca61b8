"""Semantic validation collects every problem with its field path before anything is created."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.spec import SparkApp, collect_problems, validate


def _app(name: str = "spark-pi", **spec: Any) -> SparkApp:
    base: dict[str, Any] = {
        "mainClass": "org.example.Main",
        "jars": "local:///app.jar",
        "image": "apache/spark:4.0.1",
    }
    base.update(spec)
    return SparkApp.model_validate({"metadata": {"name": name}, "spec": base})


def _paths(app: SparkApp) -> dict[str, str]:
    return {p.path: p.message for p in collect_problems(app)}


def test_valid_app_passes() -> None:
    validate(_app())


def test_many_problems_at_once_with_paths() -> None:
    app = _app(
        image=None,
        driver={"memory": "2Gi", "coreRequest": "lots"},
        executor={"memory": "1.5g"},
        sparkConf={"spark.driver.cores": "0.5", "spark.kubernetes.driver.limit.cores": "x"},
        secrets={"env": {"DB_PASSWORD": "db-password"}},
        labels={"spark-role": "x", "bad key!": "v", "ok": "-bad-"},
    )
    with pytest.raises(ValidationError) as err:
        validate(app)
    paths = {p.path for p in err.value.problems}
    assert {
        "spec.image",
        "spec.driver.memory",
        "spec.driver.coreRequest",
        "spec.executor.memory",
        "spec.sparkConf[spark.driver.cores]",
        "spec.sparkConf[spark.kubernetes.driver.limit.cores]",
        "spec.secrets.env.DB_PASSWORD",
        "spec.labels.spark-role",
        "spec.labels.bad key!",
        "spec.labels.ok",
    } <= paths
    memory = next(p for p in err.value.problems if p.path == "spec.driver.memory")
    assert "2g" in memory.hint
    assert len(err.value.problems) >= 10


def test_conflicts_between_typed_fields_and_spark_conf() -> None:
    problems = _paths(_app(driver={"memory": "2g"}, sparkConf={"spark.driver.memory": "4g"}))
    assert "conflicts" in problems["spec.driver.memory"]
    assert "spec.driver.memory" not in _paths(
        _app(driver={"memory": "2g"}, sparkConf={"spark.driver.memory": "2g"})
    )


def test_main_class_for_python_resource_conflicts() -> None:
    problems = _paths(_app(jars=None, pyFiles="local:///pi.py"))
    assert "Python" in problems["spec.mainClass"]


def test_nothing_to_run() -> None:
    assert "nothing to run" in _paths(_app(mainClass=None, jars=None))["spec"]


def test_submitter_local_files_are_rejected() -> None:
    problems = _paths(_app(jars="/home/me/app.jar", files="file:///tmp/x"))
    assert "submitting machine" in problems["spec.jars"]
    assert "spec.files" in problems


def test_names_that_cannot_be_fixed() -> None:
    problems = _paths(_app(name="a" * 240))
    assert "too long" in problems["metadata.name"]
    # Spark sanitises and falls back for the Service, so a 70-char name is fine.
    assert _paths(_app(name="a" * 70)) == {}
    long_secret = "s" * 60
    problems = _paths(_app(secrets={"mounts": {long_secret: "/etc/s"}}))
    assert "63" in problems[f"spec.secrets.mounts.{long_secret}"]


def test_volumes_and_forbidden_keys() -> None:
    app = _app(
        volumes=[
            {"name": "data", "type": "persistentVolumeClaim", "mountPath": "/data"},
            {
                "name": "Bad_Name",
                "type": "emptyDir",
                "mountPath": "/data",
                "subPath": "a",
                "subPathExpr": "b",
            },
        ],
        sparkConf={
            "spark.driver.host": "x",
            "spark.kubernetes.executor.podTemplateFile": "/tmp/t.yaml",
        },
    )
    problems = collect_problems(app)
    messages = " | ".join(str(p) for p in problems)
    assert "needs options.claimName" in messages
    assert "used twice" in messages
    assert "mutually exclusive" in messages
    assert "DNS-1123" in messages
    assert "spec.sparkConf[spark.driver.host]" in messages
    assert "executorSpec.podTemplateSpec" in messages


def test_client_mode_and_routes_rejected() -> None:
    problems = _paths(_app(deploymentMode="ClientMode", driverHttpRouteList=[{"parentRefs": []}]))
    assert "spec.deploymentMode" in problems
    assert "spec.driverHttpRouteList" in problems


def test_custom_resource_without_vendor() -> None:
    problems = _paths(_app(sparkConf={"spark.driver.resource.gpu.amount": "1"}))
    assert "vendor" in problems["spec.sparkConf[spark.driver.resource.gpu.amount]"]
