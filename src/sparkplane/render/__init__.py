"""Rendering a Spark application into Kubernetes objects, by small pure steps.

Public API (pure; no I/O):

- :func:`render` (``app, ids, ctx``) → :class:`RenderedApp` (driver pod, pre-resources,
  dependents without ownerReferences, app id, system properties).
- :data:`DRIVER_STEPS`: the driver's built-in steps as ordered data (:class:`StepSpec`: id,
  step, when it applies, whether it may be excluded); :func:`steps_for` (the orchestrator:
  the built-ins that apply, minus the excluded, plus user steps) and :func:`fold`;
  :class:`Step`, :class:`DriverState`, :class:`DriverConf`, :class:`RenderContext`.
- :func:`render_operator_cr`: the same app as a ``spark.apache.org/v1`` SparkApplication.
- :mod:`sparkplane.render.properties`: Java properties (spark.properties) store/load.

Only :mod:`sparkplane.render.user_steps` imports code: the user steps a spec names, and only
when the submitting process asks (``import_steps=True``).
"""

from sparkplane.render.conf import DEFAULT_MASTER, DriverConf, RenderContext
from sparkplane.render.operator_cr import render_operator_cr
from sparkplane.render.pipeline import (
    DRIVER_STEP_IDS,
    DRIVER_STEPS,
    EXCLUDED_STEPS,
    USER_STEPS,
    RenderedApp,
    fold,
    render,
    steps_for,
)
from sparkplane.render.state import DriverState
from sparkplane.render.step import Step, StepSpec

__all__ = [
    "DEFAULT_MASTER",
    "DRIVER_STEPS",
    "DRIVER_STEP_IDS",
    "EXCLUDED_STEPS",
    "USER_STEPS",
    "DriverConf",
    "DriverState",
    "RenderContext",
    "RenderedApp",
    "Step",
    "StepSpec",
    "fold",
    "render",
    "render_operator_cr",
    "steps_for",
]
