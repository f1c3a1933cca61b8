"""The Spark image's own layers: the Spark distribution and sparkplane's additions to it.

The pyspark package directory is a full Spark distribution (``jars/``, ``bin/``,
``python/lib/pyspark.zip``, the Python examples); :func:`dist_layer` places it at ``/opt/spark``
owned by uid 185, keyed by its version and ``RECORD`` (the hashes of its files): the venv's
pyspark (:func:`installed`, the pinned version) or another supported version installed into the
cache (:func:`at`, see :mod:`.sparkdist`).
:func:`app_layer` adds what the wheel lacks: the ``spark`` user (185) in ``/etc/passwd``, the
entrypoint (``data/spark-entrypoint.sh``, the contract of Spark's image: ``driver``,
``executor``, pass-through), ``/opt/decom.sh``, a writable ``/opt/spark/work-dir`` and a JVM
SparkPi (``data/java``, compiled here with the host's ``javac`` into
``/opt/spark/examples/jars/spark-examples.jar``). Called by the builder; no cache logic here.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import versions
from sparkplane_devcluster.images import cache
from sparkplane_devcluster.images.layers import (
    Entry,
    data_file,
    directory,
    parents,
    tree,
)

SPARK_UID = 185
SPARK_HOME = "/opt/spark"
EXAMPLES_JAR = "opt/spark/examples/jars/spark-examples.jar"
SPARK_PI_CLASS = "org.sparkplane.examples.SparkPi"
_JAR_TIME = (2023, 11, 14, 0, 0, 0)


def data(name: str) -> bytes:
    """A file shipped in ``images/data`` (the entrypoint, decom.sh, the SparkPi source)."""
    return resources.files("sparkplane_devcluster.images").joinpath("data", name).read_bytes()


@dataclass(frozen=True)
class SparkDist:
    """One Spark distribution: its version, the pyspark package directory (the distribution
    itself) and the ``RECORD`` of its files (their hashes: the layer's key)."""

    version: str
    root: Path
    record: str


def installed() -> SparkDist:
    """The venv's pyspark, which must be the pinned Spark version (:data:`versions.SPARK`)."""
    try:
        dist = importlib.metadata.distribution("pyspark")
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is None or dist.version != versions.SPARK:
        found = f"pyspark {dist.version} is installed" if dist else "pyspark is not installed"
        raise DevClusterError(
            f"the Spark image is made from the pyspark=={versions.SPARK} package, but {found}: "
            f"install it (`pip install pyspark=={versions.SPARK}`, a dev dependency of sparkplane)"
        )
    return SparkDist(
        versions.SPARK, Path(str(dist.locate_file("pyspark"))), dist.read_text("RECORD") or ""
    )


def at(target: Path, version: str) -> SparkDist:
    """The pyspark ``version`` installed with ``pip install --target target``."""
    dist = importlib.metadata.PathDistribution(target / f"pyspark-{version}.dist-info")
    if dist.version != version:
        raise DevClusterError(f"{target} holds pyspark {dist.version}, not {version}")
    return SparkDist(version, target / "pyspark", dist.read_text("RECORD") or "")


def dist_recipe(dist: SparkDist) -> dict[str, object]:
    record = cache.hash_bytes(dist.record.encode())
    return {"spark": dist.version, "record": record, "uid": SPARK_UID}


def _skip_in_dist(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name == "__pycache__" or name.endswith((".cmd", ".pyc"))


def dist_layer(dist: SparkDist) -> list[Entry]:
    """``/opt/spark``: the wheel's distribution, without Windows scripts and byte code."""
    return [
        *parents("opt/spark"),
        *tree(dist.root, "opt/spark", SPARK_UID, SPARK_UID, _skip_in_dist),
    ]


def py4j_zip(dist: SparkDist) -> str:
    """The py4j source archive's name in ``python/lib`` (its version follows pyspark's)."""
    found = sorted((dist.root / "python" / "lib").glob("py4j-*-src.zip"))
    if not found:
        raise DevClusterError(f"no python/lib/py4j-*-src.zip in {dist.root}")
    return found[-1].name


def app_recipe(dist: SparkDist, base_passwd: str, base_group: str) -> dict[str, object]:
    sources = {name: cache.hash_bytes(data(name)) for name in _DATA_FILES}
    return {
        "dist": dist_recipe(dist),
        "sources": sources,
        "passwd": cache.hash_bytes((base_passwd + base_group).encode()),
    }


_DATA_FILES = ("spark-entrypoint.sh", "decom.sh", "java/org/sparkplane/examples/SparkPi.java")


def app_layer(dist: SparkDist, base_passwd: str, base_group: str, log: Path) -> list[Entry]:
    """The entrypoint, the spark user, the work dir and the examples jar."""
    uid = SPARK_UID
    passwd = base_passwd + f"spark:x:{uid}:{uid}:Spark:/nonexistent:/usr/sbin/nologin\n"
    group = base_group + f"spark:x:{uid}:\n"
    return [
        directory("etc"),
        data_file("etc/passwd", passwd.encode()),
        data_file("etc/group", group.encode()),
        directory("opt"),
        data_file("opt/entrypoint.sh", data("spark-entrypoint.sh"), 0o755),
        data_file("opt/decom.sh", data("decom.sh"), 0o755),
        *parents(EXAMPLES_JAR, uid, uid)[1:],
        data_file(EXAMPLES_JAR, spark_pi_jar(dist, log), 0o644, uid, uid),
        directory("opt/spark/work-dir", 0o775, uid, uid),
    ]


def spark_pi_jar(dist: SparkDist, log: Path) -> bytes:
    """Compile ``SparkPi.java`` against the wheel's jars and pack a reproducible jar."""
    with tempfile.TemporaryDirectory(prefix="sparkplane-sparkpi-") as work:
        src = Path(work) / "SparkPi.java"
        src.write_bytes(data(_DATA_FILES[2]))
        classes = Path(work) / "classes"
        classpath = str(dist.root / "jars" / "*")
        argv = ["javac", "--release", "17", "-nowarn", "-cp", classpath, "-d", str(classes)]
        try:
            proc = subprocess.run(
                [*argv, str(src)], capture_output=True, text=True, check=False, timeout=300
            )
        except FileNotFoundError as exc:
            raise DevClusterError(
                "javac is not installed: the Spark image compiles its SparkPi example with a "
                "JDK 17 (`apt-get install openjdk-17-jdk-headless`)"
            ) from exc
        log.write_text(f"$ {' '.join(argv)} SparkPi.java\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise DevClusterError(f"compiling SparkPi failed (log: {log}):\n{proc.stderr[-2000:]}")
        return _jar(classes)


def _jar(classes: Path) -> bytes:
    files = {"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\r\nCreated-By: sparkplane\r\n\r\n"}
    for path in sorted(classes.rglob("*.class")):
        files[path.relative_to(classes).as_posix()] = path.read_bytes()
    with tempfile.SpooledTemporaryFile() as buf:
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as jar:
            for name in sorted(files, key=lambda n: (not n.startswith("META-INF/"), n)):
                info = zipfile.ZipInfo(name, _JAR_TIME)
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
                jar.writestr(info, files[name])
        buf.seek(0)
        return buf.read()
