"""The pyspark sdist laid out as pip installs it (images.sparkdist.unpack), without pip."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from sparkplane_devcluster.images import spark, sparkdist

FILES = {
    "pyspark/__init__.py": b"# pyspark\n",
    "pyspark/sql/__init__.py": b"",
    "deps/jars/spark-core_2.13-9.9.0.jar": b"jar",
    "deps/bin/spark-submit": b"#!/bin/sh\n",
    "deps/sbin/spark-config.sh": b"#!/bin/sh\n",
    "lib/py4j-0.10.9.9-src.zip": b"zip",
    "deps/data/mllib/a.txt": b"1 2\n",
    "deps/licenses/LICENSE-x.txt": b"x",
    "deps/examples/pi.py": b"print('pi')\n",
    "PKG-INFO": b"Metadata-Version: 2.1\nName: pyspark\nVersion: 9.9.0\n",
}


def _sdist(path: Path, files: dict[str, bytes], link: str | None = None) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"pyspark-9.9.0/{name}")
            info.size = len(data)
            info.mode = 0o755 if "/bin/" in name else 0o644
            archive.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(f"pyspark-9.9.0/{link}")
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return path


def test_the_sdist_is_laid_out_as_pip_installs_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    sparkdist.unpack(_sdist(tmp_path / "p.tar.gz", FILES), site, "9.9.0")
    root = site / "pyspark"
    assert (root / "jars" / "spark-core_2.13-9.9.0.jar").read_bytes() == b"jar"
    assert (root / "bin" / "spark-submit").stat().st_mode & 0o111
    assert (root / "sbin" / "spark-config.sh").is_file()
    assert (root / "python" / "lib" / "py4j-0.10.9.9-src.zip").is_file()
    assert (root / "data" / "mllib" / "a.txt").is_file()
    assert (root / "licenses" / "LICENSE-x.txt").is_file()
    assert (root / "examples" / "src" / "main" / "python" / "pi.py").is_file()
    assert (root / "sql" / "__init__.py").is_file()
    assert not (tmp_path / ".site.src").exists()  # the unpacked sdist is gone
    dist = spark.at(site, "9.9.0")  # what the image builder reads: version and RECORD
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"jar").digest()).rstrip(b"=").decode()
    assert f"pyspark/jars/spark-core_2.13-9.9.0.jar,sha256={digest},3" in dist.record


def test_a_link_in_the_sdist_is_refused(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "p.tar.gz", FILES, link="pyspark/evil")
    with pytest.raises(tarfile.TarError):
        sparkdist.unpack(sdist, tmp_path / "site", "9.9.0")
    assert not (tmp_path / "site" / "pyspark" / "evil").exists()
