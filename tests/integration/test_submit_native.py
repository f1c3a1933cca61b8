"""Native submission on the real control plane: ownership, rollback, idempotency, concurrency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from sparkplane.errors import SubmissionError, ValidationError
from sparkplane.kube import Kube
from sparkplane.spec import from_submit_args, load_manifest
from sparkplane.usecases.create import SubmitOptions, submit_native, submit_objects
from tests.integration.helpers import wait_for

EXAMPLES = Path(__file__).parents[2] / "examples"


def _example(name: str, namespace: str):
    doc = yaml.safe_load((EXAMPLES / name).read_text())
    doc["metadata"]["namespace"] = namespace
    return load_manifest(doc)


def _owned_by(obj: dict, pod: dict) -> bool:
    refs = obj["metadata"].get("ownerReferences", [])
    return [(r["kind"], r["uid"], r.get("controller")) for r in refs] == [
        ("Pod", pod["metadata"]["uid"], True)
    ]


@pytest.mark.parametrize("example", ["spark-pi.yaml", "python-pi.yaml"])
def test_examples_run_to_completion_with_owned_dependents(kube: Kube, namespace: str, example: str):
    result = submit_native(kube, _example(example, namespace))
    pod = kube.get("v1", "Pod", result.driver_pod, namespace)
    selector = f"spark-app-selector={result.app_id}"
    cms = kube.list("v1", "ConfigMap", namespace, label_selector=selector)
    svcs = kube.list("v1", "Service", namespace, label_selector=selector)
    assert cms and svcs
    for obj in [*cms, *svcs]:
        assert _owned_by(obj, pod), obj["metadata"]["name"]
        for label in ("spark-app-selector", "spark-role", "spark-app-name", "app-name"):
            assert label in obj["metadata"]["labels"]
    conf = next(c for c in cms if "spark.properties" in c.get("data", {}))
    assert (
        f"spark.kubernetes.driver.pod.name={result.driver_pod}" in conf["data"]["spark.properties"]
    )
    wait_for(
        lambda: (
            kube.get("v1", "Pod", result.driver_pod, namespace)["status"].get("phase")
            == "Succeeded"
        ),
        timeout=60,
        what="the driver to succeed",
    )


def test_submit_from_spark_submit_flags(kube: Kube, namespace: str):
    app = from_submit_args(
        [
            "--name",
            "flags-pi",
            "--namespace",
            namespace,
            "--image",
            "apache/spark:4.0.1",
            "--class",
            "org.apache.spark.examples.SparkPi",
            "--conf",
            "spark.executor.instances=2",
            "--driver-memory",
            "2g",
            "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar",
            "100",
        ]
    )
    result = submit_native(kube, app)
    pod = kube.get("v1", "Pod", result.driver_pod, namespace)
    container = pod["spec"]["containers"][0]
    assert container["args"][:3] == [
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
    ]
    assert container["args"][-1] == "100"
    assert container["resources"]["requests"]["memory"] == "2432Mi"  # 2g + max(384, 10%)


def test_failed_dependent_rolls_everything_back(kube: Kube, namespace: str):
    driver = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "half-driver",
            "namespace": namespace,
            "labels": {"spark-role": "driver"},
        },
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "x"}]},
    }
    good = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "good-conf", "namespace": namespace},
        "data": {"a": "b"},
    }
    bad = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "bad-svc", "namespace": namespace},
        "spec": {"ports": [{"port": 99999}]},
    }  # invalid port: the API server refuses it
    with pytest.raises(SubmissionError) as err:
        submit_objects(kube, driver, [good, bad])
    message = str(err.value)
    assert "Service" in message and "bad-svc" in message
    assert "nothing was left" in message
    assert not err.value.leaked
    wait_for(
        lambda: (
            not kube.list("v1", "Pod", namespace)
            and not [
                c
                for c in kube.list("v1", "ConfigMap", namespace)
                if c["metadata"]["name"] == "good-conf"
            ]
        ),
        timeout=30,
        what="every object to be gone",
    )


def test_invalid_spec_is_rejected_before_anything_is_created(kube: Kube, namespace: str):
    doc = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["driver"] = {"memory": "lots"}
    doc["spec"].pop("image", None)  # and a version with no image of its own: no default
    doc["spec"]["runtimeVersions"]["sparkVersion"] = "3.5.1"
    with pytest.raises(ValidationError) as err:
        submit_native(kube, load_manifest(doc))
    paths = {p.path for p in err.value.problems}
    assert {"spec.driver.memory", "spec.runtimeVersions.sparkVersion"} <= paths, paths
    assert kube.list("v1", "Pod", namespace) == []


def test_same_submission_id_gives_the_same_app(kube: Kube, namespace: str):
    app = _example("spark-pi.yaml", namespace)
    opts = SubmitOptions(submission_id="nightly-2026-11-21")
    first = submit_native(kube, app, opts)
    again = submit_native(kube, app, opts)
    assert again.existing and again.driver_pod == first.driver_pod
    drivers = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    assert len(drivers) == 1


def test_concurrent_submissions_never_collide(kube: Kube, namespace: str):
    app = _example("spark-pi.yaml", namespace)
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda _: submit_native(kube, app), range(40)))
    assert len({r.driver_pod for r in results}) == 40
    drivers = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    assert len(drivers) == 40


def test_template_dependents_must_be_ownable_by_the_driver(kube: Kube, namespace: str):
    driver = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "tpl-driver",
            "namespace": namespace,
            "labels": {"spark-role": "driver"},
        },
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "x"}]},
    }
    cluster_scoped = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "tpl-prio"},
        "value": 5,
    }
    elsewhere = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "tpl-conf", "namespace": "default"},
    }
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(ValidationError) as err:
        submit_objects(kube, driver, [cluster_scoped, elsewhere, unknown])
    text = str(err.value)
    assert "cluster-scoped" in text and "differs from the driver's" in text
    assert "Widget" in text and len(err.value.problems) == 3
    assert kube.list("v1", "Pod", namespace) == []  # nothing was created
