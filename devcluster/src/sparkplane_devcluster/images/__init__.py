"""Images for the dev cluster's real node, built without Docker as OCI image archives.

The images: a Spark image per supported version (:data:`SPARK_IMAGE` for the pinned one, and
``sparkplane.version.spark_image(v)`` for each of ``SPARK_VERSIONS``: Debian bookworm with a JRE,
the Spark distribution from that version's pyspark at ``/opt/spark``, uid 185, an entrypoint
with the contract of Spark's own image and SparkPi in Python and Java), the sparkplane image
(:data:`SPARKPLANE_IMAGE`: the package and its runtime dependencies, for the operator, the
staging server, the gc CronJob and the staging init-container) and the sandbox image
(:data:`PAUSE_IMAGE`). Each is rebuilt only when its inputs change; see ``builder`` for the
plan, ``layers`` and ``oci`` for the formats, ``cache`` for the keys. Nothing here talks to
Kubernetes or containerd: the real node imports the archives (``ctr -n k8s.io images import``).
"""

from __future__ import annotations

from sparkplane.version import SPARK_IMAGE, SPARKPLANE_IMAGE
from sparkplane_devcluster.images.builder import (
    PAUSE_IMAGE,
    ImageArchive,
    cached_images,
    ensure_images,
)
from sparkplane_devcluster.images.spark import SPARK_PI_CLASS

SPARK_PI_JAR = "local:///opt/spark/examples/jars/spark-examples.jar"
"""The JVM SparkPi in the Spark image (class :data:`SPARK_PI_CLASS`)."""
SPARK_PI_PY = "local:///opt/spark/examples/src/main/python/pi.py"
"""The Python SparkPi in the Spark image (from the pyspark wheel)."""

__all__ = [
    "PAUSE_IMAGE",
    "SPARKPLANE_IMAGE",
    "SPARK_IMAGE",
    "SPARK_PI_CLASS",
    "SPARK_PI_JAR",
    "SPARK_PI_PY",
    "ImageArchive",
    "cached_images",
    "ensure_images",
]
