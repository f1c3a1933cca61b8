"""Rendering a Spark application into Kubernetes objects, by small pure steps.

Public API (pure; no I/O):

- :func:`render` (``app, ids, ctx``) → :class:`RenderedApp` (driver pod, pre-resources,
  dependents without ownerReferences, app id, system properties).
- :func:`steps_for` (the orchestrator) and :func:`fold`; :class:`Step`, :class:`DriverState`,
  :class:`DriverConf`, :class:`RenderContext`.
- :func:`render_operator_cr`: the same app as a ``spark.apache.org/v1`` SparkApplication.
- :mod:`sparkplane.render.properties`: Java properties (spark.properties) store/load.
"""

from sparkplane.render.conf import DEFAULT_MASTER, DriverConf, RenderContext
from sparkplane.render.operator_cr import render_operator_cr
from sparkplane.render.pipeline import RenderedApp, fold, render, steps_for
from sparkplane.render.state import DriverState
from sparkplane.render.step import Step

__all__ = [
    "DEFAULT_MASTER",
    "DriverConf",
    "DriverState",
    "RenderContext",
    "RenderedApp",
    "Step",
    "fold",
    "render",
    "render_operator_cr",
    "steps_for",
]
