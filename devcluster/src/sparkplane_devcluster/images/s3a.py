"""The Hadoop S3A connector in the Spark image: ``s3a://`` event logs and data without extra jars.

Spark's distribution carries Hadoop's client (``jars/hadoop-client-api-<v>.jar``) but not its
S3A filesystem. :func:`hadoop_version` reads that version; :func:`ensure` fetches
``org.apache.hadoop:hadoop-aws`` of exactly that version and the AWS SDK v2 modules S3A loads,
each pinned with its sha256 in ``data/locks/s3a-hadoop-<v>.lock``, from Maven Central into a
cache directory keyed by the lock (downloaded once per version, checked before use);
:func:`layer` places them in ``/opt/spark/jars``. The individual SDK modules (about 10 MB), not
the SDK's ~500 MB shaded ``bundle`` that Hadoop's pom names: Spark's own jars already provide
netty, Apache httpclient, commons-codec and slf4j, which the modules use unshaded. Called by the
image builder; no cache policy here.
"""

from __future__ import annotations

import hashlib
import re
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster.images import cache
from sparkplane_devcluster.images.layers import Entry, host_file, parents

MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
JARS_DIR = "opt/spark/jars"
_CLIENT_API = re.compile(r"^hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")
_TIMEOUT = 120.0


@dataclass(frozen=True)
class Jar:
    """One pinned Maven artifact: coordinates and the sha256 of its jar."""

    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        path = self.group.replace(".", "/")
        return f"{MAVEN_CENTRAL}/{path}/{self.artifact}/{self.version}/{self.file_name}"


def hadoop_version(jars: Path) -> str:
    """The Hadoop version of a Spark distribution's ``jars`` directory."""
    found = [
        m.group(1) for p in jars.glob("hadoop-client-api-*.jar") if (m := _CLIENT_API.match(p.name))
    ]
    if len(found) != 1:
        raise DevClusterError(
            f"expected one hadoop-client-api-<version>.jar in {jars}, found {found}"
        )
    return found[0]


def lock_text(hadoop: str) -> str:
    """The pinned jars of Hadoop ``hadoop``'s S3A connector (``data/locks``)."""
    name = f"s3a-hadoop-{hadoop}.lock"
    files = resources.files("sparkplane_devcluster.images").joinpath("data", "locks", name)
    if not files.is_file():
        raise DevClusterError(
            f"no S3A jars pinned for Hadoop {hadoop}: add images/data/locks/{name} "
            "(hadoop-aws of that version and its AWS SDK v2 modules, with their sha256)"
        )
    return files.read_text()


def parse_lock(text: str) -> list[Jar]:
    """``group:artifact:version sha256`` lines; ``#`` starts a comment."""
    jars = []
    for raw in text.splitlines():
        if line := raw.split("#", 1)[0].strip():
            coords, sha = line.split()
            group, artifact, version = coords.split(":")
            jars.append(Jar(group, artifact, version, sha.lower()))
    return jars


def recipe(hadoop: str) -> dict[str, object]:
    return {"hadoop": hadoop, "lock": cache.hash_bytes(lock_text(hadoop).encode())}


def ensure(cache_dir: Path, hadoop: str, progress: Callable[[str], None]) -> Path:
    """The directory holding the pinned jars of ``hadoop``'s S3A connector (fetched once)."""
    jars = parse_lock(lock_text(hadoop))
    directory = cache.entry_dir(cache_dir, f"s3a-jars-{hadoop}", cache.content_key(recipe(hadoop)))

    def build(temp: Path) -> None:
        started = time.monotonic()
        progress(
            f"fetching the S3A connector of Hadoop {hadoop} ({len(jars)} jars; first time only)"
        )
        total = sum(_fetch(jar, temp / jar.file_name) for jar in jars)
        progress(f"fetched {total / 1e6:.1f} MB of S3A jars in {time.monotonic() - started:.1f} s")

    try:
        cache.ensure_dir(directory, build)
    except OSError as exc:
        raise DevClusterError(f"fetching the S3A jars into {directory} failed: {exc}") from exc
    for jar in jars:  # a cached copy is checked too: the layer must hold exactly the pinned bytes
        if _sha256(directory / jar.file_name) != jar.sha256:
            raise DevClusterError(f"{directory / jar.file_name} does not match its pinned sha256")
    return directory


def _fetch(jar: Jar, out: Path) -> int:
    try:
        with urllib.request.urlopen(jar.url, timeout=_TIMEOUT) as response:
            data = response.read()
    except OSError as exc:
        raise DevClusterError(f"downloading {jar.url} failed: {exc}") from exc
    got = hashlib.sha256(data).hexdigest()
    if got != jar.sha256:
        raise DevClusterError(f"{jar.url}: sha256 {got}, pinned {jar.sha256}")
    out.write_bytes(data)
    return len(data)


def _sha256(path: Path) -> str:
    try:
        return cache.hash_bytes(path.read_bytes())
    except OSError:
        return ""


def layer(directory: Path, hadoop: str, uid: int) -> list[Entry]:
    """The pinned jars in ``/opt/spark/jars`` (owned like the distribution's)."""
    return [
        *parents(f"{JARS_DIR}/x.jar", uid, uid)[1:],
        *(
            host_file(f"{JARS_DIR}/{jar.file_name}", directory / jar.file_name, uid, uid)
            for jar in parse_lock(lock_text(hadoop))
        ),
    ]
