"""sparkplane: a Python control plane for Apache Spark on Kubernetes.

The package is layered by responsibility (see docs/architecture.md):
``spec`` (models, validation) -> ``render`` (pure steps) -> ``kube`` (the only
module that talks to Kubernetes) -> ``lifecycle`` / ``operator`` / ``staging`` -> ``cli``.
"""

__version__ = "0.1.0"
