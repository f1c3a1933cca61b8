"""The render step contract: a small, pure, strictly additive transformation of DriverState.

Mirrors Spark's ``KubernetesFeatureConfigStep``: a step reads the resolved
:class:`~sparkplane.render.conf.DriverConf` and returns a new state with its feature added
(pod/container fields, resources, system properties). It must not remove or rewrite what
earlier steps or the user's pod template set, except where Spark itself overrides (name,
image, restartPolicy...), and must never do I/O. Called by the pipeline only.
"""

from __future__ import annotations

from typing import Protocol

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState


class Step(Protocol):
    """One feature step; ``name`` identifies it in ``steps_for`` and in tests."""

    name: str

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        """Return ``state`` with this step's feature added; never mutate ``state``."""
        ...
