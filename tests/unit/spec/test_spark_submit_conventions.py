"""spark-submit conventions that must submit as they do with spark-submit (issue 23, item 6):
``spark-internal`` as the primary resource, and volume settings Spark ignores (warned, not
refused). The submitter's ``SPARK_CONF_DIR`` is in tests/unit/usecases/test_conf_dir.py; the
parity against the real spark-submit in tests/integration/test_parity_spark_submit.py."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.spec import from_submit_args, main_resource
from sparkplane.spec.validate import collect_problems, collect_warnings
from sparkplane.usecases.create import SubmitOptions, render_native

IMAGE = "--conf=spark.kubernetes.container.image=apache/spark:4.0.1"
PI = "org.apache.spark.examples.SparkPi"
EXAMPLES = "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar"


def _driver_args(argv: list[str]) -> list[str]:
    app = from_submit_args(argv)
    rendered = render_native(app, None, SubmitOptions())
    return list(rendered.driver_pod["spec"]["containers"][0]["args"])


def test_spark_internal_is_no_resource_not_a_local_file() -> None:
    app = from_submit_args(["--class", PI, "--jars", EXAMPLES, IMAGE, "spark-internal", "7"])
    assert app.spec.jars is None
    main = main_resource(app)
    assert main is not None and (main.main_class, main.resource) == (PI, None)
    assert collect_problems(app, native=True) == []
    args = _driver_args(["--class", PI, "--jars", EXAMPLES, IMAGE, "spark-internal", "7"])
    assert args[-3:] == [PI, "spark-internal", "7"]
    assert app.spec.spark_conf["spark.app.name"] == PI  # spark-submit's default name


def test_spark_internal_without_a_class_names_the_fix() -> None:
    with pytest.raises(ValidationError) as err:
        from_submit_args([IMAGE, "spark-internal"])
    text = str(err.value)
    assert "--class" in text and "spark-internal" in text


def test_a_volume_setting_spark_ignores_is_a_warning_naming_what_spark_reads() -> None:
    key = "spark.kubernetes.driver.volumes.emptyDir.scratch"
    argv = [
        "--class", PI, IMAGE,
        "--conf", f"{key}.mount.path=/scratch",
        "--conf", f"{key}.mount.sizeLimit=1Gi",
        EXAMPLES,
    ]  # fmt: skip
    app = from_submit_args(argv)
    assert collect_problems(app, native=True) == []  # submitted, as by spark-submit
    warnings = collect_warnings(app)
    assert len(warnings) == 1
    warning = warnings[0]
    assert warning.path == f"spec.sparkConf[{key}.mount.sizeLimit]"
    assert "ignored" in warning.message and warning.hint == f"use {key}.options.sizeLimit"
    pod = render_native(app, None, SubmitOptions()).driver_pod
    scratch = next(v for v in pod["spec"]["volumes"] if v["name"] == "scratch")
    assert scratch == {"name": "scratch", "emptyDir": {}}  # no sizeLimit, as spark-submit


def test_an_unrelated_unknown_volume_setting_warns_without_a_hint() -> None:
    key = "spark.kubernetes.executor.volumes.hostPath.h"
    app = from_submit_args(
        ["--class", PI, IMAGE, "--conf", f"{key}.mount.path=/h",
         "--conf", f"{key}.options.path=/tmp", "--conf", f"{key}.bogus=1", EXAMPLES]
    )  # fmt: skip
    (warning,) = collect_warnings(app)
    assert warning.path.endswith(f"{key}.bogus]") and warning.hint == ""
