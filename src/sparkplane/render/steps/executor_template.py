"""Executor pod template step (Spark's ``PodTemplateConfigMapStep``).

The executor template is ``executorSpec.podTemplateSpec`` with the executor placement
(affinity, tolerations, priority class) merged in. It is stored as YAML in the ConfigMap
``<prefix>-driver-podspec-conf-map`` (key ``podspec-configmap-key``, immutable), mounted at
``/opt/spark/pod-template``, and ``spark.kubernetes.executor.podTemplateFile`` points the
driver at it, so the executors Spark creates follow it. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, clone, section, with_volumes
from sparkplane.render.steps.placement import place, role_placement
from sparkplane.spec.models import SparkApp

KEY = "podspec-configmap-key"
FILE = "pod-spec-template.yml"
MOUNT = "/opt/spark/pod-template"
VOLUME = "pod-template-volume"


def role_template(app: SparkApp, role: str) -> Obj | None:
    """A role's Pod template (apiVersion/kind/metadata/spec) with its placement merged in,
    or None when the spec asks for neither a template nor placement."""
    holder = app.spec.driver_spec if role == "driver" else app.spec.executor_spec
    base = holder.pod_template_spec if holder and holder.pod_template_spec else None
    affinity, tolerations, priority = role_placement(app, role)
    if base is None and not affinity and not tolerations and not priority:
        return None
    template: Obj = {"apiVersion": "v1", "kind": "Pod"}
    template.update(clone(base or {}))
    spec = section(template, "spec")
    place(spec, affinity, tolerations)
    if priority:
        spec["priorityClassName"] = priority
    return template


def executor_template(app: SparkApp) -> Obj | None:
    """The executor Pod template, or None if not needed."""
    return role_template(app, "executor")


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When the executors need a template: one is given, or placement to merge into one."""
    return executor_template(app) is not None


class ExecutorTemplateStep:
    """Ship the executor pod template to the driver in a ConfigMap."""

    name = "executor-template"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        template = executor_template(conf.app)
        assert template is not None, "the executor-template step applies only with a template"
        name = f"{conf.ids.resource_prefix}-driver-podspec-conf-map"
        config_map = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {KEY: yaml.safe_dump(template, sort_keys=False)},
            "immutable": True,
        }
        volume = {
            "configMap": {"items": [{"key": KEY, "path": FILE}], "name": name},
            "name": VOLUME,
        }
        pod, container = with_volumes(
            state.pod, state.container, [volume], [{"mountPath": MOUNT, "name": VOLUME}]
        )
        return state.evolve(
            pod=pod,
            container=container,
            resources=[config_map],
            properties={"spark.kubernetes.executor.podTemplateFile": f"{MOUNT}/{FILE}"},
        )
