"""Placement step: affinity and tolerations (no Spark conf key exists for them).

The spec's app-wide ``affinity``/``tolerations`` combine with the role's own
(``spec.driver``/``spec.executor``): role affinity kinds replace app-wide ones, tolerations
add up. On the driver this step applies them to the pod; for executors the same merge goes
into the executor pod template (see ``executor_template``), which is how Spark users place
executors. Template values are kept unless the spec names the same affinity kind. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, clone, section
from sparkplane.spec.models import SparkApp


def role_placement(app: SparkApp, role: str) -> tuple[Obj, list[Obj], str | None]:
    """(affinity, tolerations, priorityClassName) of a role, app-wide values merged in."""
    spec = app.spec
    role_spec = spec.driver if role == "driver" else spec.executor
    affinity = {**(spec.affinity or {}), **(role_spec.affinity or {})}
    tolerations = [*spec.tolerations, *role_spec.tolerations]
    return affinity, tolerations, role_spec.priority_class_name or spec.priority_class_name


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When the driver has affinity or tolerations."""
    affinity, tolerations, _ = role_placement(app, "driver")
    return bool(affinity or tolerations)


def place(pod_spec: Obj, affinity: Obj, tolerations: list[Obj]) -> None:
    """Add affinity kinds and new tolerations to ``pod_spec`` (call on a clone only)."""
    if affinity:
        section(pod_spec, "affinity").update(clone(affinity))
    current: list[Any] = pod_spec.setdefault("tolerations", []) if tolerations else []
    for toleration in tolerations:
        if toleration not in current:
            current.append(clone(toleration))


class PlacementStep:
    """Apply the driver's affinity and tolerations."""

    name = "placement"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        affinity, tolerations, _ = role_placement(conf.app, "driver")
        pod = clone(state.pod)
        place(section(pod, "spec"), affinity, tolerations)
        return state.evolve(pod=pod)
