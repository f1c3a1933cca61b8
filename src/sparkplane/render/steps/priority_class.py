"""Priority class step: ``priorityClassName`` on the driver (the seed article's ``routine``).

Uses ``spec.driver.priorityClassName``, else ``spec.priorityClassName``; executors get theirs
through the executor pod template. Spark has no conf key for this. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, clone, section
from sparkplane.render.steps.placement import role_placement
from sparkplane.spec.models import SparkApp


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When the driver (or the whole app) names a priority class."""
    return bool(role_placement(app, "driver")[2])


class PriorityClassStep:
    """Set the driver's priority class, for scheduling and preemption."""

    name = "priority-class"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        _, _, priority = role_placement(conf.app, "driver")
        pod = clone(state.pod)
        section(pod, "spec")["priorityClassName"] = priority
        return state.evolve(pod=pod)
