"""sparkplane: a Python control plane for Apache Spark on Kubernetes.

The package is layered by responsibility (see docs/architecture.md):
``spec`` (models, validation) -> ``render`` (pure steps) -> ``kube`` (the only code that talks to
Kubernetes) -> ``lifecycle`` / ``operator`` / ``staging`` -> ``client`` (the Python API) -> ``cli``.
"""

from sparkplane.client import SparkPlane
from sparkplane.lifecycle.apps import App, Mode
from sparkplane.lifecycle.model import AppPhase, AppState, Reason

__version__ = "0.1.0"
__all__ = ["App", "AppPhase", "AppState", "Mode", "Reason", "SparkPlane", "__version__"]
