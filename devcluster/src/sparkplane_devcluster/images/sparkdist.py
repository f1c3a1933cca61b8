"""The distributions of the Spark versions besides the venv's: unpacked into the cache from pyspark.

The venv holds pyspark at :data:`versions.SPARK` (``requirements/dev.lock``); every other
supported version (:data:`sparkplane.version.SPARK_VERSIONS`) comes from its own hash-pinned
lock (``images/data/locks/pyspark-<version>.lock``): pip downloads the sdist (the only file PyPI
serves for pyspark) and checks its sha256, and :func:`unpack` lays it out as ``pip install
--target`` would, into a cache directory keyed by the lock's content, under the cache's flock
like every layer: only the first build pays, later ones reuse the directory.

Why not ``pip install``: building pyspark's ~450 MB sdist into a wheel zips every jar and
installing it unzips them again, 3.3-5.7 min on 2 shared cores; the sdist is already the
installed layout plus setup.py's ``package_dir`` mapping (``deps/jars`` → ``pyspark/jars``,
...), which :data:`LAYOUT` applies in seconds. The result was checked file by file (names and
sha256) against pip's install of 4.3.0: identical; only some files' executable bits differ
(the sdist's are kept). ``tarfile``'s ``data`` filter refuses links and paths outside the
target.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
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


LAYOUT: dict[str, str] = {
    "pyspark": "",
    "deps/jars": "jars",
    "deps/bin": "bin",
    "deps/sbin": "sbin",
    "lib": "python/lib",
    "deps/data": "data",
    "deps/licenses": "licenses",
    "deps/examples": "examples/src/main/python",
}
"""pyspark's setup.py ``package_dir``: sdist directory → place under the installed package."""


def unpack(sdist: Path, site: Path, version: str) -> None:
    """Lay out pyspark ``version``'s sdist under ``site`` as ``pip install --target site``
    would: ``site/pyspark`` and ``site/pyspark-<version>.dist-info`` (METADATA, RECORD)."""
    work = site.parent / f".{site.name}.src"
    shutil.rmtree(work, ignore_errors=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    source = work / f"pyspark-{version}"
    package = site / "pyspark"
    site.mkdir(parents=True, exist_ok=True)
    for src, dst in LAYOUT.items():
        target = package / dst if dst else package
        if not (source / src).is_dir():
            raise DevClusterError(f"{sdist.name} has no {src}/: not a pyspark sdist")
        target.parent.mkdir(parents=True, exist_ok=True)
        (source / src).rename(target)
    info = site / f"pyspark-{version}.dist-info"
    info.mkdir()
    shutil.copyfile(source / "PKG-INFO", info / "METADATA")
    (info / "INSTALLER").write_text("sparkplane-devcluster\n")
    lines = [_record_line(path, site) for path in sorted(package.rglob("*")) if path.is_file()]
    lines += [f"{info.name}/METADATA,,", f"{info.name}/INSTALLER,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(lines) + "\n")
    shutil.rmtree(work)


def _record_line(path: Path, site: Path) -> str:
    data = path.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path.relative_to(site).as_posix()},sha256={digest},{len(data)}"


def ensure(cache_dir: Path, version: str, progress: Callable[[str], None]) -> spark.SparkDist:
    """The distribution of Spark ``version``: the venv's, or unpacked into the cache once."""
    if version == versions.SPARK:
        return spark.installed()
    lock = lock_text(version)
    directory = cache.entry_dir(
        cache_dir, f"spark-dist-{version}", cache.content_key({"lock": lock, "via": "unpack"})
    )
    log = cache_dir / "logs" / f"spark-dist-{version}.log"

    def build(temp: Path) -> None:
        started = time.monotonic()
        progress(f"fetching pyspark {version} (its Spark distribution; first time only)")
        lock_file = temp / "lock.txt"
        lock_file.write_text(lock)
        download = temp / "download"
        argv = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
            "--no-binary", ":all:", "--no-build-isolation", "--no-cache-dir",
            "--dest", str(download), "-r", str(lock_file),
        ]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=1200)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise DevClusterError(
                f"downloading pyspark {version} failed (log: {log}):\n{proc.stderr[-2000:]}"
            )
        [sdist] = download.glob(f"pyspark-{version}.tar.gz")
        unpack(sdist, temp / "site", version)
        shutil.rmtree(download)
        lock_file.unlink()
        progress(f"unpacked pyspark {version} in {time.monotonic() - started:.0f} s")

    try:
        cache.ensure_dir(directory, build)
    except OSError as exc:
        raise DevClusterError(f"installing pyspark {version} in {directory} failed: {exc}") from exc
    return spark.at(directory / "site", version)
