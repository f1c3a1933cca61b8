"""``{{SPARK_VERSION}}`` in an image works in every mode, as the operator resolves it.

examples/scheduled-pi.yaml is run by the operator (each run a SparkApplication whose image is
``apache/spark:{{SPARK_VERSION}}``); the same SparkApplication given to ``sparkplane render``
(the installed command, a subprocess) renders the image the operator's driver would get.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import yaml

from sparkplane.operator.core.driver import build_attempt
from sparkplane.operator.core.scheduled import build_run
from sparkplane.operator.core.scheduled_spec import ScheduledSparkApplicationSpec
from sparkplane.spec.conf import with_spark_version

ROOT = Path(__file__).parents[3]
SPARKPLANE = str(Path(sys.executable).with_name("sparkplane"))
IMAGE_KEY = "spark.kubernetes.container.image"


def _operator_run(tmp_path: Path) -> tuple[dict, Path]:
    """The SparkApplication the operator creates for a run of examples/scheduled-pi.yaml."""
    schedule = yaml.safe_load((ROOT / "examples" / "scheduled-pi.yaml").read_text())
    schedule["metadata"].update(namespace="default", uid="u-1")
    spec = ScheduledSparkApplicationSpec.model_validate(schedule["spec"])
    run = build_run(schedule, spec, datetime(2026, 3, 28, 1, 30, tzinfo=UTC))
    run["metadata"].pop("ownerReferences")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    return run, path


def _render(path: Path, *args: str) -> list[dict]:
    done = subprocess.run(
        [SPARKPLANE, "render", "-f", str(path), "-o", "json", *args],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(path.parent)},  # no kubeconfig: offline
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def _image(pod: dict) -> str:
    return pod["spec"]["containers"][0]["image"]


def test_native_render_gives_the_image_the_operator_gives(tmp_path: Path):
    run, path = _operator_run(tmp_path)
    assert run["spec"]["sparkConf"][IMAGE_KEY] == "apache/spark:{{SPARK_VERSION}}"
    operator_pod = build_attempt({**run, "metadata": {**run["metadata"], "uid": "u"}}, "op")
    assert _image(operator_pod.driver_pod) == "apache/spark:4.0.1"
    objects = _render(path)
    pod = next(o for o in objects if o["kind"] == "Pod")
    assert _image(pod) == _image(operator_pod.driver_pod)
    props = next(o for o in objects if o["kind"] == "ConfigMap")["data"]["spark.properties"]
    assert "spark.kubernetes.container.image=apache/spark\\:4.0.1" in props
    assert "{{SPARK_VERSION}}" not in json.dumps(objects)


def test_operator_mode_keeps_it_for_the_operator_and_kubeflow_resolves_it(tmp_path: Path):
    _, path = _operator_run(tmp_path)
    (cr,) = _render(path, "--mode", "operator")
    assert cr["spec"]["sparkConf"][IMAGE_KEY] == "apache/spark:{{SPARK_VERSION}}"
    assert cr["spec"]["runtimeVersions"]["sparkVersion"] == "4.0.1"
    (kubeflow,) = _render(path, "--mode", "kubeflow")
    assert kubeflow["spec"]["image"] == "apache/spark:4.0.1"  # Kubeflow does not replace it
    assert "{{SPARK_VERSION}}" not in json.dumps(kubeflow)


def test_spark_submit_arguments_and_a_missing_version(tmp_path: Path):
    args = [
        "--image",
        "apache/spark:{{SPARK_VERSION}}-scala",
        "--class",
        "org.apache.spark.examples.SparkPi",
        "local:///opt/spark/examples/jars/spark-examples.jar",
    ]
    base = [SPARKPLANE, "render", "-o", "json"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [*base, "--spark-version", "4.0.1", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    pod = next(o for o in json.loads(done.stdout) if o["kind"] == "Pod")
    assert _image(pod) == "apache/spark:4.0.1-scala"
    missing = subprocess.run([*base, *args], capture_output=True, text=True, env=env, check=False)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "spec.image" in missing.stderr and "--spark-version" in missing.stderr
    assert "nothing was created" in missing.stderr


def test_one_rule_for_every_image_key():
    conf = {
        IMAGE_KEY: "a:{{SPARK_VERSION}}",
        "spark.kubernetes.driver.container.image": "d:{{SPARK_VERSION}}",
        "spark.kubernetes.executor.container.image": "e:{{SPARK_VERSION}}-py",
        "spark.app.name": "{{SPARK_VERSION}}",  # not an image: untouched
    }
    assert with_spark_version(conf, "4.0.1") == {
        IMAGE_KEY: "a:4.0.1",
        "spark.kubernetes.driver.container.image": "d:4.0.1",
        "spark.kubernetes.executor.container.image": "e:4.0.1-py",
        "spark.app.name": "{{SPARK_VERSION}}",
    }
    assert with_spark_version(conf, None) == conf
