"""The package version and the one name of the sparkplane image built from it.

Imported by ``sparkplane`` (``sparkplane.__version__``, ``sparkplane.SPARKPLANE_IMAGE``) and by
everything that references the image: the deploy/ generators (operator, staging server, gc
CronJob), the staging init-container step and the dev cluster's image builder, which builds and
imports exactly this reference into the real node. Pure constants: it imports nothing, so the
pure core may use it without pulling in the rest of the package.
"""

from __future__ import annotations

__version__ = "0.1.0"
"""Keep equal to ``project.version`` in pyproject.toml."""

SPARKPLANE_IMAGE = f"ghcr.io/sparkplane/sparkplane:{__version__}"
"""The sparkplane image (entrypoint ``tini -- sparkplane``, uid 65532): everything deploy/ runs
in the cluster, and the staging init-container (``sparkplane fetch``)."""

SPARK_VERSION = "4.0.1"
"""The Spark of :data:`SPARK_IMAGE`: its distribution is the pyspark wheel of this version."""

SPARK_IMAGE_REPOSITORY = "docker.io/sparkplane/spark"
"""The Spark images, one tag per Spark version (:func:`spark_image`)."""

SPARK_IMAGE = f"{SPARK_IMAGE_REPOSITORY}:{SPARK_VERSION}"
"""The Spark image the History Server runs unless told otherwise (``sparkplane history up
--image``). The dev cluster (the sparkplane-devcluster distribution) builds exactly this
reference for its real node."""

SPARK_VERSIONS = (SPARK_VERSION, "4.1.4", "4.2.1", "4.3.0")
"""The Spark versions with an image (the dev cluster builds each from its pyspark distribution):
``runtimeVersions.sparkVersion`` (``--spark-version``) picks its image when none is given."""


def spark_image(version: str) -> str:
    """The Spark image of ``version`` (one of :data:`SPARK_VERSIONS`)."""
    return f"{SPARK_IMAGE_REPOSITORY}:{version}"
