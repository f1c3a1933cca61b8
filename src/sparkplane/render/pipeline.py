"""The orchestrator: pick the steps a spec needs, fold them, and assemble the result.

As in Spark's ``KubernetesDriverBuilder``: start from the user's driver pod template (or an
empty pod), apply the built-in steps of :data:`DRIVER_STEPS` (data: Spark's order, then
sparkplane's extras, each with the one predicate saying when it applies) minus those the spec
excludes, then the user's steps, then the spark.properties ConfigMap; finally append the Spark
container to the pod and label every object.

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

from collections.abc import Sequence
from dataclasses import dataclass, field

from sparkplane.render.conf import DriverConf, RenderContext
from sparkplane.render.driver_steps import DRIVER_STEP_IDS, DRIVER_STEPS
from sparkplane.render.state import DriverState, Obj, clone, section
from sparkplane.render.step import Step, StepSpec
from sparkplane.render.steps.pod_template import initial_state
from sparkplane.render.steps.staging import localize_dependencies
from sparkplane.render.user_steps import EXCLUDED_STEPS, USER_STEPS, choose
from sparkplane.spec.conf import mapped_conf
from sparkplane.spec.models import SparkApp
from sparkplane.spec.naming import AppIds
from sparkplane.spec.validate import validate

__all__ = [
    "DRIVER_STEPS",
    "DRIVER_STEP_IDS",
    "EXCLUDED_STEPS",
    "USER_STEPS",
    "RenderedApp",
    "StepSpec",
    "fold",
    "render",
    "steps_for",
]


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


def steps_for(
    app: SparkApp, *, extra_steps: Sequence[Step] = (), import_steps: bool = False
) -> list[Step]:
    """The steps ``app`` gets, in order: the :data:`DRIVER_STEPS` whose predicate holds and
    that ``spark.kubernetes.sparkplane.driver.excludedSteps`` leaves in, then the user steps
    (those ``spark.kubernetes.sparkplane.driver.steps`` names, then ``extra_steps``), then
    ``spark-conf``.

    ``app`` is the spec after :func:`~sparkplane.render.steps.staging.localize_dependencies`
    (``render`` does that first). ``import_steps``: import the user steps the conf names;
    only the submitting process may (:mod:`sparkplane.render.user_steps`); otherwise naming
    any is a problem. Raises :class:`~sparkplane.errors.ValidationError`."""
    return choose(app, mapped_conf(app), extra_steps, import_steps=import_steps)


def fold(steps: list[Step], state: DriverState, conf: DriverConf) -> DriverState:
    """Apply ``steps`` in order (the whole rendering algorithm)."""
    for step in steps:
        state = step.apply(state, conf)
    return state


def render(
    app: SparkApp,
    ids: AppIds,
    ctx: RenderContext | None = None,
    *,
    check: bool = True,
    extra_steps: Sequence[Step] = (),
    import_steps: bool = False,
) -> RenderedApp:
    """Render ``app`` into the objects spark-submit would create (ids from ``ids``).

    Validates first (raising :class:`~sparkplane.errors.ValidationError`) unless ``check``
    is False. ``extra_steps`` and ``import_steps``: user steps, as in :func:`steps_for`.
    """
    if check:
        validate(app)
    app = localize_dependencies(app, ids)  # staged or downloaded deps -> file:// copies
    conf = DriverConf.build(app, ids, ctx)
    steps = steps_for(app, extra_steps=extra_steps, import_steps=import_steps)
    state = fold(steps, initial_state(conf), conf)
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
