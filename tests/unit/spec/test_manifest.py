"""Loading SparkApplication manifests of every supported version, and unknown-field reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.spec import (
    DeploymentMode,
    ResourceRetainPolicy,
    RestartPolicy,
    load_manifest,
    validate,
)

EXAMPLES = Path(__file__).parents[3] / "examples"

# The seed's v1alpha1 example (operator API guide), verbatim apart from layout.
SEED_V1ALPHA1 = """
apiVersion: spark.apache.org/v1alpha1
kind: SparkApplication
metadata:
  name: pi
spec:
  mainClass: "org.apache.spark.examples.SparkPi"
  jars: "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.0-preview1.jar"
  sparkConf:
    spark.executor.instances: "5"
  applicationTolerations:
    resourceRetainPolicy: OnFailure
  runtimeVersions:
    scalaVersion: "2.13"
    sparkVersion: "4.0.0-preview1"
"""


def _doc(api_version: str = "spark.apache.org/v1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": "jobs", "labels": {"team": "data"}},
        "spec": {"mainClass": "org.example.Main", "jars": "local:///app.jar", **spec},
    }


def test_seed_v1alpha1_example_loads_with_operator_defaults() -> None:
    app = load_manifest(yaml.safe_load(SEED_V1ALPHA1))
    assert app.name == "pi"
    spec = app.spec
    assert spec.spark_conf == {"spark.executor.instances": "5"}
    tol = spec.application_tolerations
    assert tol.resource_retain_policy is ResourceRetainPolicy.ON_FAILURE
    assert tol.restart_config.restart_policy is RestartPolicy.NEVER
    assert tol.restart_config.max_restart_attempts == 3
    assert tol.application_timeout_config.driver_start_timeout_millis == 300000
    assert tol.application_timeout_config.termination_requeue_period_millis == 2000
    assert tol.effective_retain_duration_millis() == -1
    assert spec.runtime_versions is not None and spec.runtime_versions.scala_version == "2.13"
    assert spec.deployment_mode is DeploymentMode.CLUSTER_MODE


@pytest.mark.parametrize("version", ["v1", "v1beta1", "v1alpha1"])
def test_all_versions_load(version: str) -> None:
    app = load_manifest(_doc(f"spark.apache.org/{version}"))
    assert app.metadata.namespace == "jobs"
    assert app.metadata.labels == {"team": "data"}


def test_tolerations_full_shape() -> None:
    app = load_manifest(
        _doc(
            applicationTolerations={
                "restartConfig": {
                    "restartPolicy": "OnInfrastructureFailure",
                    "maxRestartAttempts": 5,
                    "restartBackoffMillis": 1000,
                    "restartCounterResetMillis": 60000,
                    "maxRestartOnFailure": 2,
                    "restartBackoffMillisForFailure": 10,
                    "maxRestartOnSchedulingFailure": 4,
                    "restartBackoffMillisForSchedulingFailure": 20,
                },
                "applicationTimeoutConfig": {
                    "driverStartTimeoutMillis": 1,
                    "driverReadyTimeoutMillis": 2,
                    "executorStartTimeoutMillis": 3,
                    "forceTerminationGracePeriodMillis": 4,
                    "terminationRequeuePeriodMillis": 5,
                },
                "instanceConfig": {"initExecutors": 1, "minExecutors": 1, "maxExecutors": 3},
                "resourceRetainPolicy": "Always",
                "resourceRetainDurationMillis": 5000,
                "ttlAfterStopMillis": 3000,
            }
        )
    )
    tol = app.spec.application_tolerations
    assert tol.restart_config.max_restart_on_scheduling_failure == 4
    assert tol.instance_config.max_executors == 3
    assert tol.effective_retain_duration_millis() == 3000


def test_server_fields_and_status_are_ignored() -> None:
    doc = _doc()
    doc["metadata"].update(uid="u", resourceVersion="1", creationTimestamp="t")
    doc["status"] = {"currentState": {"currentStateSummary": "Submitted"}}
    assert load_manifest(doc).name == "pi"


def test_every_problem_reported_with_paths_and_suggestions() -> None:
    doc = _doc(
        mainClas="x",
        driverArgs="not-a-list",
        applicationTolerations={
            "resourceRetentionPolicy": "OnFailure",
            "restartConfig": {"restartPolicy": "Sometimes"},
        },
    )
    doc["apiVersion"] = "sparkoperator.k8s.io/v1beta2"
    with pytest.raises(ValidationError) as err:
        load_manifest(doc)
    by_path = {p.path: p for p in err.value.problems}
    assert "apiVersion" in by_path
    assert by_path["spec.mainClas"].message == "unknown field"
    assert "mainClass" in by_path["spec.mainClas"].hint
    assert (
        "resourceRetainPolicy"
        in by_path["spec.applicationTolerations.resourceRetentionPolicy"].hint
    )
    assert "spec.applicationTolerations.restartConfig.restartPolicy" in by_path
    assert "spec.driverArgs" in by_path
    assert "nothing was created" in str(err.value)


def test_missing_name_is_reported() -> None:
    doc = _doc()
    del doc["metadata"]["name"]
    with pytest.raises(ValidationError) as err:
        load_manifest(doc)
    assert [p.path for p in err.value.problems] == ["metadata.name"]


def test_spark_conf_scalars_become_java_strings() -> None:
    app = load_manifest(
        _doc(sparkConf={"spark.executor.instances": 5, "spark.dynamicAllocation.enabled": True})
    )
    assert app.spec.spark_conf == {
        "spark.executor.instances": "5",
        "spark.dynamicAllocation.enabled": "true",
    }


@pytest.mark.parametrize("name", ["spark-pi.yaml", "python-pi.yaml"])
def test_examples_load_and_validate(name: str) -> None:
    app = load_manifest(yaml.safe_load((EXAMPLES / name).read_text()))
    validate(app)
    holder = app.spec.driver_spec
    assert holder is not None and holder.pod_template_spec is not None
    annotations = holder.pod_template_spec["metadata"]["annotations"]
    assert annotations == {
        "sim.sparkplane.io/run-for": "5s",
        "sim.sparkplane.io/outcome": "Succeeded",
    }
