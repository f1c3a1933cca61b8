"""sparkplane: a Python control plane for Apache Spark on Kubernetes.

The package is layered by responsibility (see docs/architecture.md):
``spec`` (models, validation) -> ``render`` (pure steps) -> ``kube`` (the only code that talks to
Kubernetes) -> ``lifecycle`` / ``operator`` / ``staging`` -> ``client`` (the Python API) -> ``cli``.
The names below load on first use, so importing a pure module (``sparkplane.spec``...) does not
pull in the Kubernetes client.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sparkplane.version import SPARKPLANE_IMAGE, __version__

if TYPE_CHECKING:
    from sparkplane.api.aio import AsyncSparkPlane
    from sparkplane.api.client import SparkPlane
    from sparkplane.model.apps import App, Description, Mode
    from sparkplane.model.phase import AppPhase, AppState, Event, Reason

__all__ = [
    "SPARKPLANE_IMAGE",
    "App",
    "AppPhase",
    "AppState",
    "AsyncSparkPlane",
    "Description",
    "Event",
    "Mode",
    "Reason",
    "SparkPlane",
    "__version__",
]

_WHERE = {
    "SparkPlane": "sparkplane.api.client",
    "AsyncSparkPlane": "sparkplane.api.aio",
    "App": "sparkplane.model.apps",
    "Mode": "sparkplane.model.apps",
    "Description": "sparkplane.model.apps",
    "Event": "sparkplane.model.phase",
    "AppPhase": "sparkplane.model.phase",
    "AppState": "sparkplane.model.phase",
    "Reason": "sparkplane.model.phase",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'sparkplane' has no attribute {name!r}")
