"""Shared builders for render tests."""

from __future__ import annotations

from typing import Any

from sparkplane.render import DriverConf, DriverState, RenderContext
from sparkplane.render.steps.pod_template import initial_state
from sparkplane.spec import AppIds, SparkApp

IDS = AppIds(
    app_name="spark-pi",
    app_id="spark-" + "a" * 32,
    unique_id="0123456789abcdef",
    local_dir_uuid="11111111-2222-4333-8444-555555555555",
)


def make_app(name: str = "spark-pi", **spec: Any) -> SparkApp:
    base: dict[str, Any] = {
        "mainClass": "org.apache.spark.examples.SparkPi",
        "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
        "image": "apache/spark:4.0.1",
    }
    base.update(spec)
    return SparkApp.model_validate({"metadata": {"name": name}, "spec": base})


def make_conf(app: SparkApp | None = None, ctx: RenderContext | None = None) -> DriverConf:
    return DriverConf.build(app or make_app(), IDS, ctx)


def start(conf: DriverConf) -> DriverState:
    return initial_state(conf)
