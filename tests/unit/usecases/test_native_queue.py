"""A native submission naming a Kueue queue is queued by Kueue's Pod integration: its driver
carries the queue label, each executor the confs that make it a one-pod Workload of the same
queue; ``--queue`` names it; operator mode queues the SparkApplication and its pods name no
queue (docs/queues.md)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.model.apps import Mode
from sparkplane.operator.core.driver import build_attempt
from sparkplane.render.properties import load as load_properties
from sparkplane.spec.queue import executor_queue_conf, queue_of
from sparkplane.usecases.create import SubmitOptions
from sparkplane.usecases.sources import Source, app_from_submit_args
from sparkplane.usecases.submit import render_source
from sparkplane.vocab import (
    KUEUE_MANAGED_LABEL,
    KUEUE_SUSPENDING_PARENT,
    QUEUE_NAME_LABEL,
)

ARGS = [
    "--name",
    "pi",
    "--class",
    "A",
    "--conf",
    "spark.kubernetes.container.image=apache/spark:4.0.1",
]
EXECUTOR_LABEL = "spark.kubernetes.executor.label."
EXECUTOR_ANNOTATION = "spark.kubernetes.executor.annotation."


def _render(*extra: str, **opts: Any) -> tuple[dict[str, Any], dict[str, str]]:
    app = app_from_submit_args([*ARGS, *extra, "local:///opt/app.jar"])
    objs = render_source(Source(app=app), Mode.NATIVE, SubmitOptions(**opts))
    (driver,) = [o for o in objs if o["kind"] == "Pod"]
    (props,) = [
        load_properties(o["data"]["spark.properties"])
        for o in objs
        if o["kind"] == "ConfigMap" and "spark.properties" in (o.get("data") or {})
    ]
    return driver, props


def test_queue_option_labels_the_driver_and_makes_each_executor_a_workload_of_the_queue() -> None:
    driver, props = _render(queue="team")
    assert driver["metadata"]["labels"][QUEUE_NAME_LABEL] == "team"
    assert props[f"{EXECUTOR_LABEL}{QUEUE_NAME_LABEL}"] == "team"
    assert props[f"{EXECUTOR_LABEL}{KUEUE_MANAGED_LABEL}"] == "true"
    assert f"{EXECUTOR_ANNOTATION}{KUEUE_SUSPENDING_PARENT}" in props
    assert not any(KUEUE_SUSPENDING_PARENT in k for k in driver["metadata"].get("annotations", {}))


def test_a_driver_label_naming_a_queue_queues_the_executors_too() -> None:
    label = f"spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}=team"
    driver, props = _render("--conf", label)
    assert driver["metadata"]["labels"][QUEUE_NAME_LABEL] == "team"
    assert props[f"{EXECUTOR_LABEL}{QUEUE_NAME_LABEL}"] == "team"


def test_an_app_naming_no_queue_is_rendered_as_before() -> None:
    driver, props = _render()
    assert QUEUE_NAME_LABEL not in driver["metadata"]["labels"]
    assert not any("kueue" in k for k in props)


@pytest.mark.parametrize("bad", ["", "Team Queue", "-x", "a" * 64])
def test_a_queue_option_that_is_no_queue_name_is_refused_naming_the_option(bad: str) -> None:
    with pytest.raises(ValidationError, match="--queue") as info:
        _render(queue=bad)
    assert "kubectl get localqueues" in str(info.value)


def test_queue_option_in_operator_mode_labels_the_custom_resource() -> None:
    app = app_from_submit_args([*ARGS, "local:///opt/app.jar"])
    (cr,) = render_source(Source(app=app), Mode.APACHE, SubmitOptions(queue="team"))
    assert cr["metadata"]["labels"][QUEUE_NAME_LABEL] == "team"
    assert not any("kueue" in k for k in cr["spec"]["sparkConf"])


def test_queue_option_does_not_apply_to_a_template() -> None:
    source = Source(app=None, template=object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="--queue"):
        render_source(source, Mode.NATIVE, SubmitOptions(queue="team"))


def test_the_operator_renders_a_queued_apps_pods_naming_no_queue() -> None:
    """The CR's own Workload queues it; a pod naming the queue would be held a second time
    by Kueue's Pod integration, for quota the Workload already holds."""
    cr = {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {
            "name": "pi",
            "namespace": "team-a",
            "uid": "u1",
            "labels": {QUEUE_NAME_LABEL: "team", "team": "a"},
        },
        "spec": {
            "mainClass": "A",
            "jars": "local:///opt/app.jar",
            "sparkConf": {
                "spark.kubernetes.container.image": "apache/spark:4.0.1",
                f"spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}": "team",
                f"{EXECUTOR_LABEL}{QUEUE_NAME_LABEL}": "team",
            },
        },
    }
    built = build_attempt(cr, "sparkplane-operator")
    labels = built.driver_pod["metadata"]["labels"]
    assert QUEUE_NAME_LABEL not in labels and labels["team"] == "a"
    for obj in built.objects:
        assert QUEUE_NAME_LABEL not in obj["metadata"].get("labels", {})
        props = (obj.get("data") or {}).get("spark.properties")
        if props:
            assert not any(QUEUE_NAME_LABEL in k for k in load_properties(props))


def test_queue_of_says_where_the_app_names_it() -> None:
    label = f"spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}=q"
    app = app_from_submit_args([*ARGS, "--conf", label, "local:///opt/app.jar"])
    where = f"spec.sparkConf[spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}]"
    assert queue_of(app) == ("q", where)
    assert set(executor_queue_conf("q")) == {
        f"{EXECUTOR_LABEL}{QUEUE_NAME_LABEL}",
        f"{EXECUTOR_LABEL}{KUEUE_MANAGED_LABEL}",
        f"{EXECUTOR_ANNOTATION}{KUEUE_SUSPENDING_PARENT}",
    }
