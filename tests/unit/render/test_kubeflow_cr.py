"""The Kubeflow sparkoperator.k8s.io/v1beta2 SparkApplication rendering (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.render.kubeflow_cr import render_kubeflow_cr
from sparkplane.spec import from_submit_args, load_manifest

ROOT = Path(__file__).parents[3]


def test_spark_submit_flags_as_a_kubeflow_app():
    app = from_submit_args(
        [
            "--name",
            "pi",
            "--image",
            "apache/spark:4.0.1",
            "--class",
            "org.P",
            "--driver-memory",
            "2g",
            "--num-executors",
            "3",
            "--label",
            "team=data",
            "local:///x.jar",
            "10",
        ]
    )
    cr = render_kubeflow_cr(app)
    assert cr["apiVersion"] == "sparkoperator.k8s.io/v1beta2" and cr["kind"] == "SparkApplication"
    spec = cr["spec"]
    assert spec["type"] == "Scala" and spec["mode"] == "cluster" and spec["sparkVersion"] == "4.0.1"
    assert spec["mainClass"] == "org.P" and spec["mainApplicationFile"] == "local:///x.jar"
    assert spec["arguments"] == ["10"] and spec["image"] == "apache/spark:4.0.1"
    assert spec["driver"]["memory"] == "2g" and spec["executor"]["instances"] == 3
    assert spec["driver"]["labels"]["team"] == "data"


def test_python_app_and_the_example_spec():
    app = from_submit_args(["--image", "apache/spark:4.0.1", "local:///pi.py"])
    assert render_kubeflow_cr(app)["spec"]["type"] == "Python"
    example = load_manifest(yaml.safe_load((ROOT / "examples" / "spark-pi.yaml").read_text()))
    spec = render_kubeflow_cr(example)["spec"]
    assert "template" in spec["driver"] and "sparkUIOptions" in spec


def test_without_a_version_it_is_refused():
    app = from_submit_args(["--image", "myimage", "--class", "A", "local:///x.jar"])
    with pytest.raises(ValidationError, match="Spark version unknown"):
        render_kubeflow_cr(app)
