"""spark-submit style flags map to the sparkConf keys spark-submit itself sets."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.spec import PYTHON_RUNNER, from_submit_args, main_resource, validate


def test_jvm_flags_map_to_spark_conf() -> None:
    app = from_submit_args(
        [
            "--master",
            "k8s://https://k:6443",
            "--deploy-mode",
            "cluster",
            "--class",
            "org.apache.spark.examples.SparkPi",
            "--name",
            "spark-pi",
            "--conf",
            "spark.driver.memory=1g",
            "--driver-memory",
            "2g",
            "--driver-cores",
            "2",
            "--executor-memory=3g",
            "--executor-cores",
            "4",
            "--num-executors",
            "5",
            "--jars",
            "local:///x.jar",
            "--files",
            "local:///f.txt",
            "--proxy-user",
            "bob",
            "local:///opt/spark/examples/jars/spark-examples.jar",
            "100",
            "--not-a-flag",
        ]
    )
    conf = app.spec.spark_conf
    assert conf["spark.driver.memory"] == "2g"  # the flag beats --conf, as in spark-submit
    assert conf["spark.driver.cores"] == "2"
    assert conf["spark.executor.memory"] == "3g"
    assert conf["spark.executor.cores"] == "4"
    assert conf["spark.executor.instances"] == "5"
    assert conf["spark.jars"] == "local:///x.jar"
    assert conf["spark.files"] == "local:///f.txt"
    assert conf["spark.app.name"] == "spark-pi"
    assert app.spec.main_class == "org.apache.spark.examples.SparkPi"
    assert app.spec.jars == "local:///opt/spark/examples/jars/spark-examples.jar"
    assert app.spec.driver_args == ["100", "--not-a-flag"]
    assert app.spec.proxy_user == "bob"
    assert app.metadata.name == "spark-pi"


def test_python_resource_and_py_files() -> None:
    app = from_submit_args(["--py-files", "local:///a.zip", "local:///pi.py", "10"])
    assert app.spec.py_files == "local:///pi.py"
    assert app.spec.spark_conf["spark.submit.pyFiles"] == "local:///a.zip"
    assert app.spec.spark_conf["spark.app.name"] == "pi.py"
    assert app.metadata.name == "pi-py"
    main = main_resource(app)
    assert main is not None and main.type == "python" and main.main_class == PYTHON_RUNNER


def test_native_extras() -> None:
    app = from_submit_args(
        [
            "--class",
            "C",
            "--image",
            "apache/spark:4.0.1",
            "--namespace",
            "jobs",
            "--service-account",
            "spark",
            "--label",
            "team=data",
            "--annotation",
            "a=b",
            "--node-selector",
            "pool=spark",
            "--env",
            "X=1",
            "--secret",
            "creds=/etc/creds",
            "--secret-env",
            "PW=db:password",
            "--priority-class",
            "routine",
            "--spark-version",
            "4.0.1",
            "local:///app.jar",
        ]
    )
    spec = app.spec
    assert spec.image == "apache/spark:4.0.1"
    assert app.metadata.namespace == "jobs"
    assert spec.service_account == "spark"
    assert spec.labels == {"team": "data"} and spec.annotations == {"a": "b"}
    assert spec.node_selector == {"pool": "spark"} and spec.env == {"X": "1"}
    assert spec.secrets.mounts == {"creds": "/etc/creds"}
    assert spec.secrets.env == {"PW": "db:password"}
    assert spec.priority_class_name == "routine"
    assert spec.runtime_versions is not None
    validate(app)


def test_bad_flags_are_all_reported() -> None:
    with pytest.raises(ValidationError) as err:
        from_submit_args(
            [
                "--clas",
                "C",
                "--conf",
                "novalue",
                "--deploy-mode",
                "client",
                "--label",
                "=x",
                "--driver-memory",
            ]
        )
    paths = [p.path for p in err.value.problems]
    assert set(paths) == {"--clas", "--conf", "--label", "--driver-memory", "--deploy-mode", "argv"}
    clas = next(p for p in err.value.problems if p.path == "--clas")
    assert "--class" in clas.hint
