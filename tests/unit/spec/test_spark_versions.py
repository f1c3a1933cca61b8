"""Issue 23 item 5: ``runtimeVersions.sparkVersion`` (``--spark-version``) picks the Spark image
of a supported version when no image is given; any other version without an image is refused,
naming the field and the supported versions."""

from __future__ import annotations

from typing import Any

from sparkplane.spec import SparkApp, collect_problems
from sparkplane.spec.conf import mapped_conf
from sparkplane.spec.submit_args import from_submit_args
from sparkplane.version import SPARK_VERSIONS, spark_image

IMAGE = "spark.kubernetes.container.image"


def _app(version: str | None, **spec: Any) -> SparkApp:
    doc: dict[str, Any] = {"mainClass": "org.example.Main", "jars": "local:///app.jar", **spec}
    if version:
        doc["runtimeVersions"] = {"sparkVersion": version}
    return SparkApp.model_validate({"metadata": {"name": "pi"}, "spec": doc})


def test_each_supported_version_picks_its_image() -> None:
    assert len(SPARK_VERSIONS) >= 2
    for version in SPARK_VERSIONS:
        app = _app(version)
        assert (
            mapped_conf(app)[IMAGE]
            == spark_image(version)
            == f"docker.io/sparkplane/spark:{version}"
        )
        assert collect_problems(app) == []


def test_a_given_image_wins() -> None:
    assert mapped_conf(_app("4.3.0", image="my/spark:1"))[IMAGE] == "my/spark:1"
    conf = mapped_conf(_app("4.3.0", sparkConf={IMAGE: "my/spark:2"}))
    assert conf[IMAGE] == "my/spark:2"


def test_an_unsupported_version_without_an_image_is_refused_naming_the_field() -> None:
    problems = collect_problems(_app("3.5.1"))
    assert [p.path for p in problems] == ["spec.runtimeVersions.sparkVersion"]
    assert all(v in problems[0].message for v in SPARK_VERSIONS)
    assert collect_problems(_app("3.5.1", image="apache/spark:3.5.1")) == []


def test_spark_submit_spark_version_flag() -> None:
    app = from_submit_args(
        ["--spark-version", "4.3.0", "--class", "org.example.Main", "local:///app.jar"]
    )
    assert mapped_conf(app)[IMAGE] == spark_image("4.3.0")
