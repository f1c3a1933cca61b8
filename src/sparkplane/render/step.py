"""The render step contract and the entry that places a step in a step list.

:class:`Step` mirrors Spark's ``KubernetesFeatureConfigStep``: a step reads the resolved
:class:`~sparkplane.render.conf.DriverConf` and returns a new state with its feature added
(pod/container fields, resources, system properties). It must not remove or rewrite what
earlier steps or the user's pod template set, except where Spark itself overrides (name,
image, restartPolicy...), and must never do I/O. Called by the pipeline only.

:class:`StepSpec` is one row of a step list (``sparkplane.render.driver_steps.DRIVER_STEPS``):
the step, its stable id, and the one predicate that says when it applies. A step assumes its
predicate held; it does not check it again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState
from sparkplane.spec.models import SparkApp

When = Callable[[SparkApp, Mapping[str, str]], bool]
"""When a step applies: a pure predicate over the app and its mapped conf
(``sparkplane.spec.conf.mapped_conf``)."""


class Step(Protocol):
    """One feature step; ``name`` is its stable id (kebab-case) in step lists and tests."""

    name: str

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        """Return ``state`` with this step's feature added; never mutate ``state``."""
        ...


def always(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """The predicate of a step every app gets."""
    return True


@dataclass(frozen=True)
class StepSpec:
    """One entry of an ordered step list: which step, when, and whether it may be left out.

    ``required``: the step may never be excluded (what it adds is what the rest relies on).
    ``needs``: ids of steps that may not be excluded while this one applies.
    ``about``: one line for the documentation's step table.
    """

    name: str
    step: Step
    when: When = always
    required: bool = False
    needs: tuple[str, ...] = ()
    about: str = ""

    def __post_init__(self) -> None:
        if self.name != self.step.name:
            raise ValueError(f"StepSpec {self.name!r} holds step {self.step.name!r}")
