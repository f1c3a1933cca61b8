"""A native submission naming a Kueue queue is refused before anything is made (only the
operator creates the Workload a queued app waits on); operator mode takes the same spec."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.model.apps import Mode
from sparkplane.usecases.create import SubmitOptions
from sparkplane.usecases.sources import Source, app_from_submit_args
from sparkplane.usecases.submit import check_mode, render_source
from sparkplane.vocab import QUEUE_NAME_LABEL

ARGS = [
    "--name",
    "pi",
    "--class",
    "A",
    "--conf",
    "spark.kubernetes.container.image=apache/spark:4.0.1",
]


def test_a_native_app_labelled_with_a_queue_is_refused_naming_the_field_and_the_fix() -> None:
    app = app_from_submit_args([*ARGS, "local:///opt/app.jar"])
    app = app.model_copy(
        update={"metadata": app.metadata.model_copy(update={"labels": {QUEUE_NAME_LABEL: "team"}})}
    )
    with pytest.raises(ValidationError) as info:
        render_source(Source(app=app), Mode.NATIVE, SubmitOptions())
    text = str(info.value)
    assert f"metadata.labels[{QUEUE_NAME_LABEL}]" in text and "--mode operator" in text
    check_mode(Source(app=app), Mode.APACHE, SubmitOptions())  # the operator queues it
    (cr,) = render_source(Source(app=app), Mode.APACHE, SubmitOptions())
    assert cr["metadata"]["labels"][QUEUE_NAME_LABEL] == "team"


def test_a_driver_label_naming_a_queue_is_refused_too() -> None:
    label = f"spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}=team"
    app = app_from_submit_args([*ARGS, "--conf", label, "local:///opt/app.jar"])
    with pytest.raises(ValidationError, match="cannot wait for Kueue"):
        check_mode(Source(app=app), Mode.NATIVE, SubmitOptions())
