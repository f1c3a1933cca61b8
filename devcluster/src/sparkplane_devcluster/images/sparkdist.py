"""The distributions of the Spark versions besides the venv's: pip-installed into the cache.

The venv holds pyspark at :data:`versions.SPARK` (``requirements/dev.lock``); every other
supported version (:data:`sparkplane.version.SPARK_VERSIONS`) comes from its own hash-pinned
lock (``images/data/locks/pyspark-<version>.lock``), installed with ``pip install --no-deps
--require-hashes --target`` into a cache directory keyed by the lock's content, under the
cache's flock like every layer: only the first build pays (34 s in a cold run on 2 cores,
2026-11-28; 3.3-5.7 min was seen at higher load), later ones reuse the directory. Unpacking the
sdist in pip's layout by hand was tried and measured: 31 s, no gain, so pip stays.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import versions
from sparkplane_devcluster.images import cache, spark


def lock_text(version: str) -> str:
    """The hash-pinned lock of pyspark ``version``."""
    name = f"pyspark-{version}.lock"
    files = resources.files("sparkplane_devcluster.images").joinpath("data", "locks", name)
    if not files.is_file():
        raise DevClusterError(f"no lock for Spark {version}: add images/data/locks/{name}")
    return files.read_text()


def ensure(cache_dir: Path, version: str, progress: Callable[[str], None]) -> spark.SparkDist:
    """The distribution of Spark ``version``: the venv's, or installed into the cache once."""
    if version == versions.SPARK:
        return spark.installed()
    lock = lock_text(version)
    directory = cache.entry_dir(
        cache_dir, f"spark-dist-{version}", cache.content_key({"lock": lock})
    )
    log = cache_dir / "logs" / f"spark-dist-{version}.log"

    def build(temp: Path) -> None:
        started = time.monotonic()
        progress(f"installing pyspark {version} (its Spark distribution; first time only)")
        lock_file = temp.parent / f".{temp.name}.lock.txt"
        lock_file.write_text(lock)
        argv = [
            sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
            "--no-build-isolation", "--no-compile", "--no-cache-dir",
            "--target", str(temp / "site"), "-r", str(lock_file),
        ]  # fmt: skip
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1200)
        finally:
            lock_file.unlink(missing_ok=True)
        log.write_text(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise DevClusterError(
                f"installing pyspark {version} failed (log: {log}):\n{proc.stderr[-2000:]}"
            )
        progress(f"installed pyspark {version} in {time.monotonic() - started:.0f} s")

    try:
        cache.ensure_dir(directory, build)
    except OSError as exc:
        raise DevClusterError(f"installing pyspark {version} in {directory} failed: {exc}") from exc
    return spark.at(directory / "site", version)
