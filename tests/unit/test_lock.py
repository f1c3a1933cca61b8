"""requirements/dev.lock and pyproject.toml agree, and what the images copy is what is locked.

The lock (``make lock``: ``uv pip compile`` with hashes) is what ``make install`` installs
(``build.lock``, its part that builds, first); the sparkplane image copies this venv's runtime
packages and the Spark image the pyspark wheel's files. These tests read the files themselves
(no network, no resolver): every requirement of pyproject.toml (runtime, the ``dev`` extra, the
build system) and of devcluster/pyproject.toml (the dev cluster's distribution, which ``make
install`` installs with ``--no-deps``) is locked at a version its range admits, every locked
package is there for a reason, and the installed packages are the locked ones.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from sparkplane_devcluster import versions
from sparkplane_devcluster.images import project

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "dev.lock"
BUILD_IN = ROOT / "requirements" / "build.in"
BUILD_LOCK = ROOT / "requirements" / "build.lock"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
DEVCLUSTER = tomllib.loads((ROOT / "devcluster" / "pyproject.toml").read_text())
OWN = canonicalize_name(PYPROJECT["project"]["name"])  # this checkout's: never locked
FROM_PYPROJECT = "sparkplane (pyproject.toml)"
FROM_BUILD_IN = "-r requirements/build.in"
REFRESH = "run `make lock` (and commit requirements/dev.lock), then `make install`"
# `make lock` compiles pyproject.toml only (devcluster/pyproject.toml requires this checkout's
# sparkplane, which no index has): the dev cluster's requirements enter the lock through the dev
# extra, which a developer of this repository installs with it
FOR_DEVCLUSTER = "add the requirement to pyproject.toml's `dev` extra too"


@dataclass
class Pin:
    """One locked package: its exact version, marker, hashes and what requires it."""

    version: Version
    marker: Marker | None
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def read_lock(text: str) -> dict[str, Pin]:
    """Parse uv's requirements output: ``name==version ; marker \\``, hash lines, ``# via``."""
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or (line.startswith("#") and current is None):
            continue
        if not line.startswith(" "):
            req = Requirement(stripped.removesuffix("\\").strip())
            (spec,) = req.specifier
            assert spec.operator == "==", f"{line!r} is not pinned with =="
            current = Pin(Version(spec.version), req.marker)
            name = canonicalize_name(req.name)
            # a universal lock may pin a package twice, by Python version (numpy): keep the
            # pin for this interpreter
            if name not in pins or req.marker is None or req.marker.evaluate({"extra": ""}):
                pins[name] = current
            in_via = False
        elif current is not None and stripped.startswith("--hash=sha256:"):
            current.hashes.append(stripped.removeprefix("--hash=sha256:").removesuffix(" \\"))
        elif current is not None and stripped.startswith("# via"):
            rest = stripped.removeprefix("# via").strip()
            current.via += [rest] if rest else []
            in_via = not rest
        elif current is not None and in_via and stripped.startswith("#   "):
            current.via.append(stripped.removeprefix("#").strip())
        else:
            raise AssertionError(f"unexpected line in {LOCK.name}: {line!r}")
    return pins


PINS = read_lock(LOCK.read_text())


def installed() -> dict[str, importlib.metadata.Distribution]:
    """This venv's distributions by name (the first on sys.path, the one imported)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():
        found.setdefault(canonicalize_name(dist.metadata["Name"]), dist)
    return found


def declared() -> dict[str, list[Requirement]]:
    """pyproject.toml's requirements by where they come from (build.in's lines included)."""
    build_in = [
        Requirement(line)
        for line in (s.strip() for s in BUILD_IN.read_text().splitlines())
        if line and not line.startswith("#")
    ]
    devcluster = [
        Requirement(r)
        for r in DEVCLUSTER["project"]["dependencies"]
        + [r for extra in DEVCLUSTER["project"]["optional-dependencies"].values() for r in extra]
    ]
    return {
        "[project].dependencies": [Requirement(r) for r in PYPROJECT["project"]["dependencies"]],
        "[project.optional-dependencies].dev": [
            Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["dev"]
        ],
        "[build-system].requires": [Requirement(r) for r in PYPROJECT["build-system"]["requires"]],
        "requirements/build.in": build_in,
        "devcluster/pyproject.toml [project]": [
            r for r in devcluster if canonicalize_name(r.name) != OWN
        ],
        "devcluster/pyproject.toml [build-system].requires": [
            Requirement(r) for r in DEVCLUSTER["build-system"]["requires"]
        ],
    }


def test_every_line_is_pinned_with_hashes() -> None:
    assert len(PINS) > 20, "the lock looks truncated"
    for name, pin in PINS.items():
        assert pin.hashes, f"{name}=={pin.version} has no --hash: pip --require-hashes refuses it"
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in pin.hashes), name
        assert pin.via, f"{name} has no '# via': the lock was not made by `make lock`"
    assert LOCK.read_text().splitlines()[1].strip() == "#    make lock", "made by `make lock`"


@pytest.mark.parametrize("where", list(declared()))
def test_every_declared_requirement_is_locked_within_its_range(where: str) -> None:
    wrong = []
    for req in declared()[where]:
        if req.marker is not None and not req.marker.evaluate({"extra": "dev"}):
            continue
        pin = PINS.get(canonicalize_name(req.name))
        if pin is None:
            wrong.append(f"{req} is not in the lock")
        elif not req.specifier.contains(pin.version, prereleases=True):
            wrong.append(f"{req} but the lock has {req.name}=={pin.version}")
    fix = f"{FOR_DEVCLUSTER}, {REFRESH}" if where.startswith("devcluster/") else REFRESH
    assert not wrong, f"{where} and {LOCK.name} disagree: {'; '.join(wrong)}: {fix}"


def test_every_locked_package_is_there_for_a_reason() -> None:
    top = {
        FROM_PYPROJECT: {
            canonicalize_name(r.name)
            for key in ("[project].dependencies", "[project.optional-dependencies].dev")
            for r in declared()[key]
        },
        FROM_BUILD_IN: {canonicalize_name(r.name) for r in declared()["requirements/build.in"]},
    }
    stale = []
    for name, pin in PINS.items():
        for via in pin.via:
            if via in top and name not in top[via]:
                stale.append(f"{name} (locked for {via}, which no longer requires it)")
            elif via not in top and canonicalize_name(via) not in PINS:
                stale.append(f"{name} (required by {via}, which is not locked)")
    assert not stale, f"stale entries in {LOCK.name}: {', '.join(stale)}: {REFRESH}"


@pytest.mark.parametrize(
    "where", ["[build-system].requires", "devcluster/pyproject.toml [build-system].requires"]
)
def test_build_in_holds_the_build_system(where: str) -> None:
    build_in = {canonicalize_name(r.name) for r in declared()["requirements/build.in"]}
    for req in declared()[where]:
        assert canonicalize_name(req.name) in build_in, (
            f"{req} of {where} is missing from requirements/build.in: `make install` "
            "builds sparkplane and sparkplane-devcluster without an isolated build env, "
            "from the lock only"
        )


def test_the_dev_cluster_requires_this_checkouts_sparkplane() -> None:
    (req,) = [
        Requirement(r)
        for r in DEVCLUSTER["project"]["dependencies"]
        if canonicalize_name(Requirement(r).name) == OWN
    ]
    version = PYPROJECT["project"]["version"]
    assert req.specifier.contains(version), (
        f"devcluster/pyproject.toml requires {req}, but this checkout's sparkplane is {version}: "
        "keep them equal"
    )
    assert DEVCLUSTER["project"]["version"] == version, "the two distributions share a version"


def test_build_lock_is_the_part_of_the_lock_that_builds() -> None:
    # `make install` installs it first, then builds pyspark's sdist and sparkplane with it
    build = read_lock(BUILD_LOCK.read_text())
    for req in declared()["requirements/build.in"]:
        assert canonicalize_name(req.name) in build, f"{req} is not in {BUILD_LOCK.name}"
    for name, pin in build.items():
        same = PINS.get(name)
        assert same is not None, f"{name} is in {BUILD_LOCK.name}, not in {LOCK.name}: {REFRESH}"
        assert (pin.version, sorted(pin.hashes)) == (same.version, sorted(same.hashes)), (
            f"{name}: {BUILD_LOCK.name} has {pin.version}, {LOCK.name} {same.version}: {REFRESH}"
        )


def test_the_images_copy_locked_packages() -> None:
    # the sparkplane image copies sparkplane's installed runtime dependencies
    dists = project.runtime_distributions()
    assert len(dists) > 10
    for dist in dists:
        name = canonicalize_name(dist.metadata["Name"])
        assert name in PINS, f"the image would copy {name}, which the lock does not pin: {REFRESH}"
        assert Version(dist.version) == PINS[name].version, (
            f"this venv has {name} {dist.version}, the lock {PINS[name].version}: "
            "`make install` rebuilds the venv from the lock"
        )
    # the Spark image is the pyspark wheel's distribution
    assert PINS["pyspark"].version == Version(versions.SPARK)


def test_the_installed_locked_packages_are_the_locked_versions() -> None:
    wrong = []
    for name, dist in installed().items():
        pin = PINS.get(name)
        if pin is not None and Version(dist.version) != pin.version:
            wrong.append(f"{name} {dist.version} (locked: {pin.version})")
    assert not wrong, (
        f"this venv is not the lock's: {', '.join(sorted(wrong))}: `make install` rebuilds it"
    )


def test_the_lock_is_closed_under_the_locked_packages_requirements() -> None:
    # read from the installed metadata (the previous test: it is the lock's); no extras
    wrong = []
    for name, dist in installed().items():
        if name not in PINS:
            continue
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            pin = PINS.get(canonicalize_name(req.name))
            if pin is None or not req.specifier.contains(pin.version, prereleases=True):
                found = f"{req.name}=={pin.version}" if pin else "nothing"
                wrong.append(f"{name} requires {req}, the lock has {found}")
    assert not wrong, f"{LOCK.name} is not consistent: {'; '.join(wrong)}: {REFRESH}"


# -- requirements/airflow.lock: the Airflow venv (.venv-airflow, `make airflow-venv`) -----------
AIRFLOW_LOCK = ROOT / "requirements" / "airflow.lock"
PROVIDER = tomllib.loads((ROOT / "providers" / "airflow" / "pyproject.toml").read_text())


def test_the_airflow_lock_is_pinned_with_hashes_and_agrees_with_the_main_lock() -> None:
    """Compiled against dev.lock (``-c``): a package both venvs have is the same version, so
    sparkplane runs under Airflow on the dependencies it is tested with."""
    pins = read_lock(AIRFLOW_LOCK.read_text())
    assert len(pins) > 100, "the Airflow lock looks truncated"
    assert AIRFLOW_LOCK.read_text().splitlines()[1].strip() == "#    make lock"
    for name, pin in pins.items():
        assert pin.hashes, f"{name}=={pin.version} has no --hash in {AIRFLOW_LOCK.name}"
    differ = [
        f"{name}: {pin.version} vs {PINS[name].version}"
        for name, pin in pins.items()
        if name in PINS and pin.version != PINS[name].version
    ]
    assert not differ, f"airflow.lock and dev.lock disagree ({differ}): {REFRESH}"
    wanted = [
        Requirement(r)
        for r in [*PYPROJECT["project"]["dependencies"], *PROVIDER["project"]["dependencies"]]
        if canonicalize_name(Requirement(r).name) != OWN
    ]
    for req in wanted:
        pin = pins.get(canonicalize_name(req.name))
        assert pin is not None, f"{req} is not in {AIRFLOW_LOCK.name}: {REFRESH}"
        assert req.specifier.contains(pin.version), (
            f"{req} but {AIRFLOW_LOCK.name} has {pin.version}"
        )


# -- requirements/jupyter.lock: the Jupyter venv (.venv-jupyter, `make jupyter-venv`) -----------
JUPYTER_LOCK = ROOT / "requirements" / "jupyter.lock"


def test_the_jupyter_lock_is_pinned_with_hashes_and_agrees_with_the_main_lock() -> None:
    """Compiled against dev.lock (``-c``) like Airflow's; it holds the thin Spark Connect client
    at the dev cluster's Spark version and sparkplane's runtime requirements, and no full
    pyspark (Jupyter's venv is a notebook user's: no JVM, no jars)."""
    pins = read_lock(JUPYTER_LOCK.read_text())
    assert JUPYTER_LOCK.read_text().splitlines()[1].strip() == "#    make lock"
    for name, pin in pins.items():
        assert pin.hashes, f"{name}=={pin.version} has no --hash in {JUPYTER_LOCK.name}"
    differ = [
        f"{name}: {pin.version} vs {PINS[name].version}"
        for name, pin in pins.items()
        if name in PINS and pin.version != PINS[name].version
    ]
    assert not differ, f"jupyter.lock and dev.lock disagree ({differ}): {REFRESH}"
    assert pins["pyspark-client"].version == Version(versions.SPARK_VERSION)
    assert "pyspark" not in pins
    for name in ("ipykernel", "nbclient", "nbformat"):
        assert name in pins, f"{name} is not in {JUPYTER_LOCK.name}: {REFRESH}"
    for line in PYPROJECT["project"]["dependencies"]:
        req = Requirement(line)
        pin = pins.get(canonicalize_name(req.name))
        assert pin is not None, f"{req} is not in {JUPYTER_LOCK.name}: {REFRESH}"
        assert req.specifier.contains(pin.version), f"{req} but {JUPYTER_LOCK.name} has {pin}"
