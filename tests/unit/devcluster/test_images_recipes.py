"""What the recipes put in the images: the Spark user, entrypoint, SparkPi; sparkplane's files."""

from __future__ import annotations

import importlib.metadata
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

import sparkplane
from sparkplane.errors import DevClusterError
from sparkplane_devcluster import versions
from sparkplane_devcluster.images import debian, project, spark
from sparkplane_devcluster.images.layers import Entry, write_layer

PASSWD = "root:x:0:0:root:/root:/bin/bash\n"
GROUP = "root:x:0:\n"


def _content(entry: Entry) -> bytes:
    assert entry.opener is not None
    with entry.opener() as handle:
        return handle.read()


def test_spark_app_layer_adds_the_spark_user_entrypoint_workdir_and_sparkpi(tmp_path: Path):
    entries = {
        e.path: e for e in spark.app_layer(spark.installed(), PASSWD, GROUP, tmp_path / "javac.log")
    }
    assert _content(entries["etc/passwd"]).decode().splitlines()[-1].startswith("spark:x:185:185:")
    assert _content(entries["etc/group"]).decode().endswith("spark:x:185:\n")
    entrypoint = entries["opt/entrypoint.sh"]
    assert entrypoint.mode == 0o755 and _content(entrypoint).startswith(b"#!/bin/bash")
    workdir = entries["opt/spark/work-dir"]
    assert (workdir.kind, workdir.uid, workdir.gid, workdir.mode) == ("dir", 185, 185, 0o775)
    jar = entries[spark.EXAMPLES_JAR]
    assert jar.uid == 185
    with zipfile.ZipFile(io.BytesIO(_content(jar))) as archive:
        names = archive.namelist()
    assert names[0] == "META-INF/MANIFEST.MF"
    assert "org/sparkplane/examples/SparkPi.class" in names


def test_examples_jar_is_reproducible(tmp_path: Path):
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "A.class").write_bytes(b"\xca\xfe\xba\xbe")
    first = spark._jar(tmp_path)
    (tmp_path / "org" / "A.class").touch()
    assert spark._jar(tmp_path) == first


def test_spark_dist_is_the_wheel_at_opt_spark_owned_by_185_with_the_python_examples(
    tmp_path: Path,
):
    entries = {e.path: e for e in spark.dist_layer(spark.installed())}
    assert entries["opt/spark/bin/spark-submit"].mode == 0o755
    assert entries["opt/spark/examples/src/main/python/pi.py"].kind == "file"
    assert any(p.startswith("opt/spark/jars/spark-kubernetes_") for p in entries)
    assert all(e.uid == 185 for p, e in entries.items() if p.startswith("opt/spark"))
    assert not any("__pycache__" in p or p.endswith(".cmd") for p in entries)
    zip_name = spark.py4j_zip(spark.installed())
    assert zip_name.startswith("py4j-") and zip_name.endswith("-src.zip")


def test_sparkplane_runtime_dependencies_leave_out_the_dev_extras():
    names = {d.metadata["Name"].lower().replace("_", "-") for d in project.runtime_distributions()}
    assert {"kubernetes", "pydantic", "typer", "rich", "pyyaml", "aiohttp"} <= names
    assert {"pydantic-core", "urllib3"} <= names  # transitive
    assert not names & {"pyspark", "pytest", "mypy", "ruff", "import-linter"}


def test_sparkplane_source_layer_has_package_byte_code_metadata_and_script(tmp_path: Path):
    entries = {e.path: e for e in project.source_layer()}
    lib = project.LIB
    assert f"{lib}/sparkplane/__init__.py" in entries
    assert f"{lib}/sparkplane/py.typed" in entries  # the package's data files too
    # the dev cluster is a distribution of its own: the image's sparkplane does not hold it
    assert not [p for p in entries if "devcluster" in p]
    pyc = entries[f"{lib}/sparkplane/__pycache__/__init__.cpython-311.pyc"]
    flags = int.from_bytes(_content(pyc)[4:8], "little")
    assert flags == 0b11, "hash-based, checked byte code (valid whatever the file times)"
    metadata = _content(entries[f"{lib}/sparkplane-{sparkplane.__version__}.dist-info/METADATA"])
    assert f"Version: {sparkplane.__version__}" in metadata.decode()
    script = entries["usr/local/bin/sparkplane"]
    assert script.mode == 0o755
    assert b"from sparkplane.cli.main import main" in _content(script)
    blob = write_layer(list(entries.values()), tmp_path / "src.tar.gz")
    with tarfile.open(blob.path) as tar:
        assert all(m.uid == 0 for m in tar.getmembers())


def test_base_layer_recipe_names_the_packages_and_the_man_page_fix():
    argv = debian.mmdebstrap_argv(Path("/tmp/out.tar"))
    assert argv[:2] == ["mmdebstrap", "--variant=apt"]
    assert "--include=openjdk-17-jre-headless,tini,python3,procps,ca-certificates," in argv[2] + ","
    assert '--essential-hook=mkdir -p "$1/usr/share/man/man1"' in argv
    assert "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr" in argv
    assert "--dpkgopt=path-exclude=/usr/share/man/*" in argv
    assert argv[argv.index("bookworm") + 1] == "/tmp/out.tar"
    assert importlib.metadata.version("pyspark") == "4.0.1"


def test_wrong_pyspark_version_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(versions, "SPARK", "9.9.9")
    with pytest.raises(DevClusterError, match=r"pip install pyspark==9\.9\.9"):
        spark.installed()


def test_failed_mmdebstrap_names_the_log_and_leaves_no_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    fake = tmp_path / "bin" / "mmdebstrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'E: cannot reach the mirror' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    cache_dir = tmp_path / "cache"
    log = cache_dir / "logs" / "image-debian.log"
    with pytest.raises(DevClusterError, match="cannot reach the mirror") as failure:
        debian.ensure_base(cache_dir, lambda _: None)
    assert str(log) in str(failure.value)
    assert debian.cached_base(cache_dir) is None
    assert not debian.base_dir(cache_dir).exists()
