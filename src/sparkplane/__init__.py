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
    from sparkplane.aio import AsyncSparkPlane
    from sparkplane.client import SparkPlane
    from sparkplane.lifecycle.apps import App, Description, Mode
    from sparkplane.lifecycle.model import AppPhase, AppState, Event, Reason

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
    "SparkPlane": "sparkplane.client",
    "AsyncSparkPlane": "sparkplane.aio",
    "App": "sparkplane.lifecycle.apps",
    "Mode": "sparkplane.lifecycle.apps",
    "Description": "sparkplane.lifecycle.apps",
    "Event": "sparkplane.lifecycle.model",
    "AppPhase": "sparkplane.lifecycle.model",
    "AppState": "sparkplane.lifecycle.model",
    "Reason": "sparkplane.lifecycle.model",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'sparkplane' has no attribute {name!r}")
