"""Limits knowable before anything is created (issue 12): images, quantities, sizes."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.spec import SparkApp, collect_problems, from_submit_args
from sparkplane.spec.limits import image_problem, object_size_problems, properties_size
from sparkplane.spec.quantities import QuantityError, check_cpu, memory_mib


def _app(**spec: Any) -> SparkApp:
    base: dict[str, Any] = {
        "mainClass": "org.example.Main",
        "jars": "local:///app.jar",
        "image": "apache/spark:4.0.1",
    }
    base.update(spec)
    return SparkApp.model_validate({"metadata": {"name": "pi"}, "spec": base})


@pytest.mark.parametrize(
    "image",
    [
        "apache/spark:4.0.1",
        "spark",
        "localhost:5000/team/spark:v1.2-rc_3",
        "registry.example.com/a/b/c@sha256:" + "a" * 64,
        "ghcr.io/apache/spark:4.0.1@sha256:" + "0" * 64,
    ],
)
def test_valid_images(image: str) -> None:
    assert image_problem(image) == ""


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("apache/spark 4.0.1", "contains whitespace"),
        (" apache/spark", "contains whitespace"),
        ("Apache/Spark", "not a valid image reference"),
        ("spark::1", "not a valid image reference"),
        ("", "empty"),
        ("a/" * 300 + "b", "characters long"),
    ],
)
def test_invalid_images(image: str, why: str) -> None:
    assert why in image_problem(image)


def test_image_problems_name_the_field() -> None:
    problems = {p.path: p.message for p in collect_problems(_app(image="apache/spark 4"))}
    assert "contains whitespace" in problems["spec.image"]


def test_absurd_memory_and_cpu_are_refused_with_the_limit() -> None:
    with pytest.raises(QuantityError, match="the limit is 16t"):
        memory_mib("10000000000g")
    assert memory_mib("16t") == 16 * 1024 * 1024
    with pytest.raises(QuantityError, match="4096 cores"):
        check_cpu("100000")
    check_cpu("4096")
    problems = {
        p.path: p.message for p in collect_problems(_app(driver={"memory": "10000000000g"}))
    }
    assert "more than any node has" in problems["spec.driver.memory"]


def test_a_huge_spark_conf_is_refused_first_and_alone() -> None:
    conf = {f"spark.custom.key{i:06d}": "v" * 8 for i in range(300_000)}
    app = _app(sparkConf=conf)
    problems = collect_problems(app)  # the size check runs first and alone
    assert len(problems) == 1 and problems[0].path == "spec.sparkConf"
    assert "a ConfigMap holds at most 1 MiB" in problems[0].message
    assert properties_size({"a": "b"}) == 4


def test_object_sizes() -> None:
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    big["data"] = {"spark.properties": "x" * (1024 * 1024 + 1)}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    pod["metadata"]["annotations"] = {"a": "x" * (2 * 1024 * 1024)}
    found = [str(p) for p in object_size_problems([big, pod, {"kind": "Service", "metadata": {}}])]
    assert len(found) == 2
    assert found[0].startswith("ConfigMap c: its data is 1.00 MiB; a ConfigMap holds at most 1 MiB")
    assert found[1].startswith("Pod p: is 2.00 MiB; the API server stores objects up to about")


def test_no_primary_resource_is_refused_as_spark_submit_does() -> None:
    with pytest.raises(ValidationError, match=r"no primary resource .* for --class org\.x\.Main"):
        from_submit_args(["--class", "org.x.Main", "--conf", "spark.kubernetes.container.image=i"])
