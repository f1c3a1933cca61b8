"""Inputs every front end shares (usecases.sources): files, argv, namespaces."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.usecases.sources import read_source, read_yaml_document

ROOT = Path(__file__).parents[3]
PI = ROOT / "examples" / "spark-pi.yaml"
JAR = "local:///job.jar"


def _spec(tmp_path: Path, namespace: str | None) -> Path:
    doc = yaml.safe_load(PI.read_text())
    if namespace:
        doc["metadata"]["namespace"] = namespace
    else:
        doc["metadata"].pop("namespace", None)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_explicit_namespace_that_differs_from_the_manifest_is_an_error(tmp_path):
    with pytest.raises(ValidationError) as info:
        read_source(spec=_spec(tmp_path, "a"), namespace="b")
    assert "does not match" in str(info.value)
    assert (
        read_source(spec=_spec(tmp_path, "a"), namespace="b", explicit_namespace=False).namespace
        == "a"
    )
    assert read_source(spec=_spec(tmp_path, None), namespace="b").namespace == "b"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"a: 1\n---\nb: 2\n", "2 YAML documents"),
        (b"a: [1,\n", "x.yaml:2: not valid YAML"),
        (b"name: caf\xe9\n", "not UTF-8"),
        (b"- 1\n", "expected a mapping"),
    ],
)
def test_bad_files_are_validation_errors(tmp_path, content, message):
    path = tmp_path / "x.yaml"
    path.write_bytes(content)
    with pytest.raises(ValidationError) as info:
        read_yaml_document(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_properties_file_gives_defaults_that_flags_and_conf_override(tmp_path):
    props = tmp_path / "p.conf"
    props.write_text("spark.executor.memory 3g\nspark.driver.memory 1g\nspark.x.y=file\nother=1\n")
    source = read_source(
        argv=[
            "--properties-file",
            str(props),
            "--driver-memory",
            "2g",
            "--conf",
            "spark.x.y=cli",
            "--image",
            "i:4.0.1",
            "--class",
            "A",
            JAR,
            "7",
        ],
    )
    assert source.app is not None
    conf = source.app.spec.spark_conf
    assert conf["spark.executor.memory"] == "3g"
    assert conf["spark.driver.memory"] == "2g"
    assert conf["spark.x.y"] == "cli"
    assert "other" not in conf
    assert source.app.spec.driver_args == ["7"]


def test_exactly_one_input(tmp_path):
    with pytest.raises(ValidationError, match="exactly one"):
        read_source()
    with pytest.raises(ValidationError, match="exactly one"):
        read_source(spec=_spec(tmp_path, None), argv=["x.jar"])


def test_template_namespace_rules():
    template = ROOT / "examples" / "template"
    vals = {"APP_NAME": "p", "SERVICE_ACCOUNT_NAME": "default"}
    placed = read_source(template=template, sets=vals, namespace="team", submission_id="s")
    assert placed.template is not None and placed.template.namespace == "team"
    with pytest.raises(ValidationError, match="does not match"):
        read_source(template=template, sets={**vals, "NAMESPACE": "other"}, namespace="team")
    again = read_source(template=template, sets=vals, namespace="team", submission_id="s")
    assert again.template is not None and again.template.name == placed.template.name
