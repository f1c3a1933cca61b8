"""The orchestrator: pick the steps a spec needs, fold them, and assemble the result.

As in Spark's ``KubernetesDriverBuilder``: start from the user's driver pod template (or an
empty pod), apply the built-in steps in Spark's order, then sparkplane's extras (placement,
priority class, Spark UI, operator extras), then the spark.properties ConfigMap; finally
append the Spark container to the pod and label every object.

Dependents in ``resources`` carry NO ownerReferences: the driver pod's uid exists only once
the pod is created, so the submitter adds ``ownerReferences: [{apiVersion: v1, kind: Pod,
name, uid, controller: true}]`` at run time (reference §3.8). ``pre_resources`` are created
before the pod and adopted the same way afterwards.

Deliberate deviations from spark-submit (all harmless to the image entrypoint):
every object carries ``spark-app-selector``, ``spark-role``, ``spark-app-name`` and
``app-name`` labels and ``metadata.namespace``; list orders that Spark leaves to hash order
are sorted; see each step's docstring for the rest. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkplane.render.conf import DriverConf, RenderContext
from sparkplane.render.state import DriverState, Obj, clone, section
from sparkplane.render.step import Step
from sparkplane.render.steps.basic_driver import BasicDriverStep
from sparkplane.render.steps.driver_command import DriverCommandStep
from sparkplane.render.steps.driver_service import DriverServiceStep
from sparkplane.render.steps.env_secrets import EnvSecretsStep
from sparkplane.render.steps.executor_template import ExecutorTemplateStep, executor_template
from sparkplane.render.steps.extra_resources import ExtraResourcesStep
from sparkplane.render.steps.hadoop_conf import HadoopConfStep
from sparkplane.render.steps.hadoop_conf import needed as hadoop_conf_needed
from sparkplane.render.steps.local_dirs import LocalDirsStep
from sparkplane.render.steps.mount_secrets import MountSecretsStep
from sparkplane.render.steps.placement import PlacementStep, role_placement
from sparkplane.render.steps.pod_template import initial_state
from sparkplane.render.steps.priority_class import PriorityClassStep
from sparkplane.render.steps.service_account import SA_KEY, ServiceAccountStep
from sparkplane.render.steps.spark_conf import SparkConfStep
from sparkplane.render.steps.spark_ui import SparkUIStep
from sparkplane.render.steps.staging import (
    StagingStep,
    init_container_needed,
    localize_dependencies,
)
from sparkplane.render.steps.volumes import VolumesStep
from sparkplane.spec.conf import K8S, mapped_conf
from sparkplane.spec.conf_keys import volumes, with_prefix
from sparkplane.spec.models import SparkApp
from sparkplane.spec.naming import AppIds
from sparkplane.spec.validate import validate


@dataclass(frozen=True)
class RenderedApp:
    """Everything a native submission creates, as plain Kubernetes dicts.

    Create ``pre_resources``, then ``driver_pod``, then ``resources`` with an ownerReference
    to the driver pod's uid (and adopt ``pre_resources`` the same way).
    """

    driver_pod: Obj
    pre_resources: list[Obj]
    resources: list[Obj]
    app_id: str
    system_properties: dict[str, str] = field(default_factory=dict)

    @property
    def objects(self) -> list[Obj]:
        """All objects in creation order (pre-resources, driver pod, dependents)."""
        return [*self.pre_resources, self.driver_pod, *self.resources]


def steps_for(app: SparkApp) -> list[Step]:
    """The steps ``app`` needs, in Spark's order followed by sparkplane's extras.

    ``app`` is the spec after :func:`~sparkplane.render.steps.staging.localize_dependencies`
    (``render`` does that first)."""
    conf = mapped_conf(app)
    spec = app.spec
    steps: list[Step] = [BasicDriverStep()]
    if conf.get(SA_KEY):
        steps.append(ServiceAccountStep())
    steps.append(DriverServiceStep())
    if with_prefix(conf, f"{K8S}.driver.secrets."):
        steps.append(MountSecretsStep())
    if with_prefix(conf, f"{K8S}.driver.secretKeyRef."):
        steps.append(EnvSecretsStep())
    if volumes(conf, "driver"):
        steps.append(VolumesStep())
    if init_container_needed(conf):
        steps.append(StagingStep())
    steps.append(DriverCommandStep())
    if hadoop_conf_needed(conf):
        steps.append(HadoopConfStep())
    if executor_template(app) is not None:
        steps.append(ExecutorTemplateStep())
    steps.append(LocalDirsStep())
    affinity, tolerations, priority = role_placement(app, "driver")
    if affinity or tolerations:
        steps.append(PlacementStep())
    if priority:
        steps.append(PriorityClassStep())
    if spec.spark_ui and (spec.spark_ui.service or spec.spark_ui.ingress):
        steps.append(SparkUIStep())
    if spec.config_map_specs or spec.driver_service_ingress_list:
        steps.append(ExtraResourcesStep())
    steps.append(SparkConfStep())
    return steps


def fold(steps: list[Step], state: DriverState, conf: DriverConf) -> DriverState:
    """Apply ``steps`` in order (the whole rendering algorithm)."""
    for step in steps:
        state = step.apply(state, conf)
    return state


def render(
    app: SparkApp, ids: AppIds, ctx: RenderContext | None = None, *, check: bool = True
) -> RenderedApp:
    """Render ``app`` into the objects spark-submit would create (ids from ``ids``).

    Validates first (raising :class:`~sparkplane.errors.ValidationError`) unless ``check``
    is False.
    """
    if check:
        validate(app)
    app = localize_dependencies(app, ids)  # staged or downloaded deps -> local:// copies
    conf = DriverConf.build(app, ids, ctx)
    state = fold(steps_for(app), initial_state(conf), conf)
    pod = clone(state.pod)
    section(pod, "spec").setdefault("containers", []).append(clone(state.container))
    section(pod, "metadata")["namespace"] = conf.namespace
    labels = conf.reserved_labels()
    return RenderedApp(
        driver_pod=pod,
        pre_resources=[_finish(o, conf, labels) for o in state.pre_resources],
        resources=[_finish(o, conf, labels) for o in state.resources],
        app_id=ids.app_id,
        system_properties=dict(state.system_properties),
    )


def _finish(obj: Obj, conf: DriverConf, labels: dict[str, str]) -> Obj:
    out = clone(obj)
    meta = section(out, "metadata")
    meta.setdefault("namespace", conf.namespace)
    obj_labels = section(meta, "labels")
    for key, value in labels.items():
        obj_labels.setdefault(key, value)
    return out
