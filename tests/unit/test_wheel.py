"""What ``pip install`` gets: the sparkplane wheel holds the product and no dev cluster; the
sparkplane-devcluster wheel (``devcluster/``) holds the dev cluster, its data files and the
``sparkplane.cli`` entry point that mounts ``sparkplane dev-cluster``.

Both wheels are really built (``pip wheel --no-deps --no-build-isolation``, with this venv's
locked setuptools: no network), each from a copy of its sources in a temporary directory, so the
checkout gets no ``build/`` directory. A few seconds each.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")


def _wheel(source: Path, work: Path, names: list[str]) -> zipfile.ZipFile:
    """Build the wheel of the project at ``source`` (copying only ``names``) in ``work``."""
    for name in names:
        if (source / name).is_dir():
            shutil.copytree(source / name, work / name, ignore=SKIP)
        else:
            shutil.copy2(source / name, work / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", "wheel"]
    offline = ["--no-deps", "--no-build-isolation", "--no-index"]
    done = subprocess.run(
        [*pip, *offline, "-w", str(work / "dist"), str(work)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (work / "dist").glob("*.whl")
    return zipfile.ZipFile(wheel)


def test_the_sparkplane_wheel_holds_the_product_and_no_dev_cluster(tmp_path: Path):
    with _wheel(ROOT, tmp_path, ["pyproject.toml", "README.md", "src"]) as wheel:
        names = wheel.namelist()
        info = f"sparkplane-{VERSION}.dist-info"
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        top_level = wheel.read(f"{info}/top_level.txt").decode().split()
    assert {"sparkplane/cli/main.py", "sparkplane/py.typed", "sparkplane/kube/__init__.py"} <= set(
        names
    )
    assert not [n for n in names if "devcluster" in n]
    assert top_level == ["sparkplane"]
    assert "[sparkplane.cli]" not in entry_points  # the product adds no plugin of its own
    assert "sparkplane = sparkplane.cli.main:main" in entry_points


def test_the_devcluster_wheel_holds_the_dev_cluster_its_data_and_its_command(tmp_path: Path):
    source = ROOT / "devcluster"
    with _wheel(source, tmp_path, ["pyproject.toml", "README.md", "src"]) as wheel:
        names = set(wheel.namelist())
        info = f"sparkplane_devcluster-{VERSION}.dist-info"
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        metadata = wheel.read(f"{info}/METADATA").decode()
    package = source / "src" / "sparkplane_devcluster"
    shipped = {
        p.relative_to(source / "src").as_posix()
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert shipped <= names, f"missing from the wheel: {sorted(shipped - names)}"
    assert {
        "sparkplane_devcluster/data/stages.yaml",
        "sparkplane_devcluster/images/data/spark-entrypoint.sh",
        "sparkplane_devcluster/images/data/java/org/sparkplane/examples/SparkPi.java",
    } <= names
    assert not [n for n in names if n.startswith("sparkplane/")]
    assert "[sparkplane.cli]\ndev-cluster = sparkplane_devcluster.cli:app" in entry_points
    assert f"Requires-Dist: sparkplane=={VERSION}" in metadata
