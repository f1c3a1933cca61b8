"""Build the real node's images as OCI archives, each only when its inputs changed.

An image is a plan: its reference, its layers (each a recipe, whose content key names its cache
directory, and a function that lists the layer's entries) and its configuration. The Spark and
sparkplane images share the Debian base layer (the same blob); each adds its own layers on top,
the most often changing last so that a sparkplane code change rewrites one small layer and the
archive. :func:`ensure_images` builds what is missing and returns every archive;
:func:`cached_images` lists what is built without building. Called by the dev cluster's real node
(which imports the archives with ``ctr images import``) and ``sparkplane dev-cluster images``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sparkplane
from sparkplane.errors import DevClusterError
from sparkplane.version import SPARK_VERSIONS, SPARKPLANE_IMAGE, spark_image
from sparkplane_devcluster import versions
from sparkplane_devcluster.images import cache, debian, oci, pause, project, spark, sparkdist
from sparkplane_devcluster.images.layers import Entry, LayerBlob, write_layer

Progress = Callable[[str], None]

PAUSE_IMAGE = f"registry.k8s.io/pause:{versions.PAUSE}"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageArchive:
    """A built image: its reference, the OCI archive, the content key of its inputs, its size."""

    ref: str
    archive: Path
    key: str
    size: int


@dataclass(frozen=True)
class LayerPlan:
    name: str
    recipe: dict[str, object]
    entries: Callable[[], list[Entry]]
    gzip_level: int | None = 6


@dataclass(frozen=True)
class ImagePlan:
    name: str
    ref: str
    layers: Sequence[LayerPlan]
    config: dict[str, Any] = field(default_factory=dict)
    on_base: bool = True


def _quiet(_: str) -> None:
    pass


def spark_plan(cache_dir: Path, base: debian.BaseLayer, dist: spark.SparkDist) -> ImagePlan:
    """The Spark image of one distribution, tagged with its version."""
    logs = cache_dir / "logs"
    arch = oci.goarch()
    spark_env = {
        "PATH": f"/opt/spark/bin:{SYSTEM_PATH}",
        "JAVA_HOME": f"/usr/lib/jvm/java-17-openjdk-{arch}",
        "SPARK_HOME": spark.SPARK_HOME,
        "PYSPARK_PYTHON": "python3",
        "PYTHONPATH": f"{spark.SPARK_HOME}/python/lib/pyspark.zip:"
        f"{spark.SPARK_HOME}/python/lib/{spark.py4j_zip(dist)}",
        "LANG": "C.UTF-8",
    }
    passwd, group = base.passwd, base.group
    suffix = "" if dist.version == versions.SPARK else f"-{dist.version}"
    return ImagePlan(
        f"spark{suffix}",
        spark_image(dist.version),
        [
            LayerPlan(
                f"spark-dist{suffix}",
                spark.dist_recipe(dist),
                lambda: spark.dist_layer(dist),
                gzip_level=None,
            ),
            LayerPlan(
                f"spark-app{suffix}",
                spark.app_recipe(dist, passwd, group),
                lambda: spark.app_layer(dist, passwd, group, logs / f"image-sparkpi{suffix}.log"),
            ),
        ],
        {
            "entrypoint": ["/opt/entrypoint.sh"],
            "env": spark_env,
            "user": f"{spark.SPARK_UID}:{spark.SPARK_UID}",
            "workdir": f"{spark.SPARK_HOME}/work-dir",
            "labels": {"org.opencontainers.image.version": dist.version},
        },
    )


def plans(cache_dir: Path, base: debian.BaseLayer, progress: Progress = _quiet) -> list[ImagePlan]:
    """The images, in build order: a Spark image per supported version (the distributions
    of versions besides the venv's installed into the cache first), sparkplane's, pause."""
    logs = cache_dir / "logs"
    passwd, group = base.passwd, base.group
    spark_plans = [
        spark_plan(cache_dir, base, sparkdist.ensure(cache_dir, version, progress))
        for version in SPARK_VERSIONS
    ]
    sparkplane_plan = ImagePlan(
        "sparkplane",
        SPARKPLANE_IMAGE,
        [
            LayerPlan(
                "sparkplane-deps",
                project.deps_recipe(passwd),
                lambda: project.deps_layer(passwd, group),
            ),
            LayerPlan("sparkplane-src", project.source_recipe(), project.source_layer),
        ],
        {
            "entrypoint": ["/usr/bin/tini", "--", "sparkplane"],
            "env": {
                "PATH": SYSTEM_PATH,
                "PYTHONPATH": f"/{project.LIB}",
                "PYTHONDONTWRITEBYTECODE": "1",
                "PYTHONUNBUFFERED": "1",
                "HOME": f"/{project.HOME}",
                "LANG": "C.UTF-8",
            },
            "user": f"{project.UID}:{project.UID}",
            "workdir": f"/{project.HOME}",
            "labels": {"org.opencontainers.image.version": sparkplane.__version__},
        },
    )
    pause_plan = ImagePlan(
        "pause",
        PAUSE_IMAGE,
        [LayerPlan("pause", pause.recipe(), lambda: pause.layer(logs / "image-pause.log"))],
        {"entrypoint": ["/pause"], "user": pause.USER},
        on_base=False,
    )
    return [*spark_plans, sparkplane_plan, pause_plan]


def ensure_images(cache_dir: Path, progress: Progress = _quiet) -> list[ImageArchive]:
    """Every image archive, building the layers and archives whose inputs changed."""
    (cache_dir / "logs").mkdir(parents=True, exist_ok=True)
    base = debian.ensure_base(cache_dir, progress)
    built = []
    for plan in plans(cache_dir, base, progress):
        blobs = [base.blob] if plan.on_base else []
        blobs += [_ensure_layer(cache_dir, layer, progress) for layer in plan.layers]
        built.append(_ensure_archive(cache_dir, plan, blobs, progress))
    return built


def _ensure_layer(cache_dir: Path, plan: LayerPlan, progress: Progress) -> LayerBlob:
    key = cache.content_key({**plan.recipe, "gzip": plan.gzip_level})
    directory = cache.entry_dir(cache_dir, f"layers/{plan.name}", key)

    def build(temp: Path) -> None:
        started = time.monotonic()
        progress(f"building layer {plan.name}")
        suffix = ".tar.gz" if plan.gzip_level is not None else ".tar"
        blob = write_layer(plan.entries(), temp / f"layer{suffix}", plan.gzip_level)
        cache.save_layer(temp, blob)
        progress(f"built layer {plan.name}: {_mb(blob.size)} in {time.monotonic() - started:.1f} s")

    _guarded(f"layer {plan.name}", directory, build)
    blob = cache.load_layer(directory)
    if blob is None:
        raise DevClusterError(f"layer {plan.name} is missing from {directory} after its build")
    return blob


def _guarded(what: str, directory: Path, build: Callable[[Path], None]) -> None:
    """Build ``directory``; a host error (disk full, permissions) names what was being built."""
    try:
        cache.ensure_dir(directory, build)
    except OSError as exc:
        raise DevClusterError(f"building {what} in {directory.parent} failed: {exc}") from exc


def _ensure_archive(
    cache_dir: Path, plan: ImagePlan, blobs: list[LayerBlob], progress: Progress
) -> ImageArchive:
    config = oci.image_config(blobs, **plan.config)
    key = cache.content_key(
        {"ref": plan.ref, "layers": [b.digest for b in blobs], "config": config}
    )
    directory = cache.entry_dir(cache_dir, plan.name, key)

    def build(temp: Path) -> None:
        started = time.monotonic()
        size = oci.write_archive(temp / "image.tar", plan.ref, blobs, config)
        doc = {"ref": plan.ref, "key": key, "size": size}
        (temp / "image.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        progress(f"wrote {plan.ref}: {_mb(size)} in {time.monotonic() - started:.1f} s")

    _guarded(f"image {plan.ref}", directory, build)
    return ImageArchive(
        plan.ref, directory / "image.tar", key, (directory / "image.tar").stat().st_size
    )


def cached_images(cache_dir: Path) -> list[ImageArchive]:
    """The archives already built (at most one per image: the one used last), by reference;
    builds nothing."""
    found: dict[str, tuple[float, ImageArchive]] = {}
    root = cache.images_root(cache_dir)
    for doc_path in sorted(root.glob("*/image.json")) if root.is_dir() else []:
        archive = doc_path.parent / "image.tar"
        try:
            doc = json.loads(doc_path.read_text())
            image = ImageArchive(doc["ref"], archive, doc["key"], archive.stat().st_size)
            used = doc_path.parent.stat().st_mtime
        except (OSError, ValueError, KeyError):
            continue
        if image.ref not in found or used > found[image.ref][0]:
            found[image.ref] = (used, image)
    return [found[ref][1] for ref in sorted(found)]


def _mb(size: int) -> str:
    return f"{size / 1e6:.0f} MB"
