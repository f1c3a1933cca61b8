"""examples/template renders with its documented variables into a runnable SparkPi app."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.errors import ValidationError
from sparkplane.templates import load_app, parse_env

EXAMPLE = Path(__file__).parents[3] / "examples" / "template"
SUFFIX = "3f9c0a7b12d4e6f8"


def documented_values() -> dict[str, str]:
    values = parse_env((EXAMPLE / "values.env").read_text(), source="values.env")
    return {**values, "NAME_SUFFIX": SUFFIX, "NAMESPACE": "default"}  # as submit sets them


def test_values_env_documents_every_required_variable() -> None:
    assert set(parse_env((EXAMPLE / "values.env").read_text())) == {
        "APP_NAME",
        "SERVICE_ACCOUNT_NAME",
    }  # NAMESPACE and NAME_SUFFIX: submit's -n (or the context's) and submission id
    with pytest.raises(ValidationError) as caught:
        load_app(EXAMPLE, {})
    unknown = sorted(p.message.split()[2] for p in caught.value.problems)
    assert unknown == ["${APP_NAME}", "${NAMESPACE}", "${NAME_SUFFIX}", "${SERVICE_ACCOUNT_NAME}"]


def test_example_renders_driver_and_dependents() -> None:
    app = load_app(EXAMPLE, documented_values())
    prefix = f"spark-pi-{SUFFIX}"
    assert app.name == f"{prefix}-driver"
    assert app.namespace == "default"
    assert [(o["kind"], o["metadata"]["name"]) for o in app.dependents] == [
        ("Service", f"{prefix}-driver-svc"),
        ("ConfigMap", f"spark-drv-{SUFFIX}-conf-map"),
        ("Ingress", f"{prefix}-ui"),
        ("Service", f"{prefix}-ui-svc"),
    ]
    for o in app.objects:
        labels = o["metadata"]["labels"]
        assert labels["spark-app-selector"] == f"spark-{SUFFIX}"
        assert labels["spark-app-name"] == "spark-pi"
        assert labels["app-name"] == prefix
        assert o["metadata"]["namespace"] == "default"
        assert "ownerReferences" not in o["metadata"]


def test_driver_pod_runs_the_dev_clusters_spark_image() -> None:
    driver = load_app(EXAMPLE, documented_values()).driver
    assert driver["metadata"]["labels"]["spark-role"] == "driver"
    assert driver["metadata"]["annotations"] == {
        "sim.sparkplane.io/outcome": "Succeeded",
        "sim.sparkplane.io/run-for": "5s",
    }
    (container,) = driver["spec"]["containers"]
    assert container["image"] == "docker.io/sparkplane/spark:4.0.1"
    assert container["args"] == [
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.sparkplane.examples.SparkPi",
        "local:///opt/spark/examples/jars/spark-examples.jar",
        "100",
    ]
    assert driver["spec"]["volumes"][1]["configMap"]["name"] == f"spark-drv-{SUFFIX}-conf-map"


def test_optional_variables_override_defaults_with_the_right_types() -> None:
    values = {**documented_values(), "RUN_FOR": "30", "UI_PORT": "8080", "EXECUTOR_INSTANCES": "3"}
    app = load_app(EXAMPLE, values)
    assert app.driver["metadata"]["annotations"]["sim.sparkplane.io/run-for"] == "30"
    ui = next(o for o in app.dependents if o["metadata"]["name"].endswith("-ui-svc"))
    assert ui["spec"]["ports"][0]["port"] == 8080
    conf = next(o for o in app.dependents if o["kind"] == "ConfigMap")
    props = dict(
        line.split("=", 1) for line in conf["data"]["spark.properties"].splitlines() if line
    )
    assert props["spark.executor.instances"] == "3"
    assert props["spark.app.id"] == f"spark-{SUFFIX}"
    assert props["spark.kubernetes.driver.pod.name"] == f"spark-pi-{SUFFIX}-driver"
    assert props["spark.driver.host"] == f"spark-pi-{SUFFIX}-driver-svc.default.svc"


def test_default_ui_port_is_an_int() -> None:
    app = load_app(EXAMPLE, documented_values())
    ui = next(o for o in app.dependents if o["metadata"]["name"].endswith("-ui-svc"))
    assert ui["spec"]["ports"][0]["port"] == 4040
