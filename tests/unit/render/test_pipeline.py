"""The orchestrator, full renders of the examples, and the operator CR."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.render import RenderContext, render, render_operator_cr, steps_for
from sparkplane.render.properties import java_date, load, store
from sparkplane.spec import AppIds, SparkApp, load_manifest

from .helpers import IDS, make_app

EXAMPLES = Path(__file__).parents[3] / "examples"
EVERY_OBJECT_LABELS = ("spark-app-selector", "spark-role", "spark-app-name", "app-name")


def _example(name: str) -> SparkApp:
    return load_manifest(yaml.safe_load((EXAMPLES / name).read_text()))


def test_steps_for_minimal_app_in_spark_order() -> None:
    names = [s.name for s in steps_for(make_app())]
    assert names == ["basic-driver", "driver-service", "driver-command", "local-dirs", "spark-conf"]


def test_steps_for_picks_what_the_spec_needs() -> None:
    app = make_app(
        serviceAccount="spark",
        secrets={"mounts": {"s": "/s"}, "env": {"E": "s:k"}},
        volumes=[{"name": "v", "type": "emptyDir", "mountPath": "/v"}],
        tolerations=[{"key": "k", "operator": "Exists"}],
        priorityClassName="p",
        sparkUI={"service": {}},
        configMapSpecs=[{"name": "c"}],
    )
    names = [s.name for s in steps_for(app)]
    assert names == [
        "basic-driver",
        "service-account",
        "driver-service",
        "mount-secrets",
        "env-secrets",
        "volumes",
        "driver-command",
        "executor-template",
        "local-dirs",
        "placement",
        "priority-class",
        "spark-ui",
        "extra-resources",
        "spark-conf",
    ]


def test_render_spark_pi_example() -> None:
    app = _example("spark-pi.yaml")
    out = render(app, AppIds.for_submission("demo-1", app.name))
    pod = out.driver_pod
    assert pod["metadata"]["annotations"] == {
        "sim.sparkplane.io/run-for": "5s",
        "sim.sparkplane.io/outcome": "Succeeded",
    }
    assert pod["spec"]["containers"][-1]["args"][:6] == [
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.sparkplane.examples.SparkPi",
        "local:///opt/spark/examples/jars/spark-examples.jar",
    ]
    assert pod["spec"]["containers"][-1]["resources"]["limits"]["memory"] == "896Mi"
    kinds = [o["kind"] for o in out.resources]
    assert kinds == ["Service", "Service", "Ingress", "ConfigMap"]
    for obj in out.objects:
        labels = obj["metadata"]["labels"]
        for key in EVERY_OBJECT_LABELS:
            assert key in labels, (obj["kind"], key)
        assert labels["app-name"] == "spark-pi"
        assert obj["metadata"]["namespace"] == "default"
        assert "ownerReferences" not in obj["metadata"]
    props = load(out.resources[-1]["data"]["spark.properties"])
    assert props == out.system_properties
    assert props["spark.executor.instances"] == "1"
    assert props["spark.jars"] == "local:///opt/spark/examples/jars/spark-examples.jar"


def test_render_python_example() -> None:
    app = _example("python-pi.yaml")
    out = render(app, AppIds.for_submission("demo-2", app.name))
    container = out.driver_pod["spec"]["containers"][-1]
    assert container["args"][3:] == [
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        "local:///opt/spark/examples/src/main/python/pi.py",
        "10",
    ]
    assert container["resources"]["requests"]["memory"] == "896Mi"  # 512 + max(204, 384)
    assert out.system_properties["spark.kubernetes.resource.type"] == "python"
    assert out.system_properties["spark.kubernetes.memoryOverheadFactor"] == "0.4"
    assert out.driver_pod["metadata"]["annotations"]["sim.sparkplane.io/run-for"] == "5s"


def test_same_submission_id_renders_same_objects() -> None:
    app = _example("spark-pi.yaml")
    first = render(app, AppIds.for_submission("same", app.name))
    second = render(app, AppIds.for_submission("same", app.name))
    assert first == second
    other = render(app, AppIds.for_submission("other", app.name))
    assert other.driver_pod["metadata"]["name"] != first.driver_pod["metadata"]["name"]


def test_render_validates_first() -> None:
    with pytest.raises(ValidationError):
        render(make_app(image=None), IDS)


def test_context_sets_master_user_and_date() -> None:
    when = datetime(2026, 11, 21, 12, 41, 24, tzinfo=UTC)
    ctx = RenderContext(master="k8s://https://k:6443", spark_user="alice", submit_time=when)
    out = render(make_app(), IDS, ctx)
    text = out.resources[-1]["data"]["spark.properties"]
    assert text.splitlines()[1] == "#Sat Nov 21 12:41:24 UTC 2026"
    assert out.system_properties["spark.master"] == "k8s://https://k:6443"
    assert out.system_properties["spark.app.submitTime"] == str(int(when.timestamp() * 1000))
    env = out.driver_pod["spec"]["containers"][-1]["env"]
    assert env[0] == {"name": "SPARK_USER", "value": "alice"}


def test_pod_template_sidecars_and_labels_flow() -> None:
    template = {
        "metadata": {"labels": {"team": "a"}, "annotations": {"x": "y"}},
        "spec": {
            "containers": [
                {"name": "side", "image": "busybox"},
                {"name": "spark", "env": [{"name": "A", "value": "1"}]},
            ]
        },
    }
    app = make_app(
        driverSpec={"podTemplateSpec": template},
        sparkConf={"spark.kubernetes.driver.podTemplateContainerName": "spark"},
    )
    pod = render(app, IDS).driver_pod
    assert [c["name"] for c in pod["spec"]["containers"]] == ["side", "spark"]
    assert pod["spec"]["containers"][-1]["env"][0] == {"name": "A", "value": "1"}
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["annotations"] == {"x": "y"}


def test_operator_cr_round_trips_through_load_manifest() -> None:
    app = make_app(
        driver={"memory": "2g", "tolerations": [{"key": "k", "operator": "Exists"}]},
        executor={"instances": 3},
        priorityClassName="routine",
        env={"A": "1"},
        sparkUI={"ingress": {"host": "ui.example.com"}},
    )
    cr = render_operator_cr(app)
    assert cr["apiVersion"] == "spark.apache.org/v1"
    spec = cr["spec"]
    assert spec["runtimeVersions"] == {"sparkVersion": "4.0.1"}
    assert spec["sparkConf"]["spark.driver.memory"] == "2g"
    assert spec["sparkConf"]["spark.executor.instances"] == "3"
    assert spec["sparkConf"]["spark.kubernetes.driverEnv.A"] == "1"
    driver_pod = spec["driverSpec"]["podTemplateSpec"]["spec"]
    assert driver_pod["priorityClassName"] == "routine"
    assert driver_pod["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert spec["executorSpec"]["podTemplateSpec"]["spec"]["priorityClassName"] == "routine"
    assert (
        spec["driverServiceIngressList"][0]["ingressSpec"]["rules"][0]["host"] == "ui.example.com"
    )
    again = load_manifest(cr)  # only operator fields: loads as a plain SparkApplication
    assert again.spec.image is None
    assert again.spec.spark_conf["spark.kubernetes.container.image"] == "apache/spark:4.0.1"


def test_operator_cr_needs_a_version() -> None:
    with pytest.raises(ValidationError) as err:
        render_operator_cr(make_app(image="myrepo/spark:latest"))
    assert err.value.problems[0].path == "spec.runtimeVersions.sparkVersion"


def test_java_properties_escaping_round_trip() -> None:
    props = {
        "spark.master": "k8s://https://h:443",
        "a key": " lead",
        "x": "-Dx=y #!\n\tz",
        "unicode": "é",
    }
    text = store(props, "c")
    assert "spark.master=k8s\\://https\\://h\\:443" in text
    assert "a\\ key=\\ lead" in text
    assert "x=-Dx\\=y \\#\\!\\n\\tz" in text
    assert "unicode=é" in text
    assert load(text) == props
    assert java_date(datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)) == "Mon Jan 02 03:04:05 UTC 2023"
