"""The sparkplane image's layers: its runtime dependencies, then sparkplane itself on top.

Both are copied from the running environment rather than downloaded, so the image holds exactly
the versions this checkout was tested with: those of ``requirements/dev.lock``, from which
``make install`` makes the venv (``tests/unit/test_lock.py`` checks).
:func:`runtime_distributions` walks sparkplane's requirements (extras left out) through the
installed distributions; :func:`deps_layer` copies their files (as their ``RECORD`` lists
them) to ``/opt/sparkplane/lib`` and adds the ``sparkplane`` user (uid 65532).
:func:`source_layer` copies the ``sparkplane`` package, its
metadata and a ``/usr/local/bin/sparkplane`` script; its key hashes the source tree, so a code
change rebuilds only this small layer. Both get hash-checked byte code (valid whatever the file
times, usable on a read-only root filesystem). The host's Python must be bookworm's (3.11).
"""

from __future__ import annotations

import importlib.metadata
import py_compile
import re
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import sparkplane
from sparkplane.errors import DevClusterError
from sparkplane_devcluster.images import cache
from sparkplane_devcluster.images.layers import (
    Entry,
    data_file,
    directory,
    host_file,
    parents,
    tree,
)

UID = 65532
LIB = "opt/sparkplane/lib"
HOME = "home/sparkplane"
IMAGE_PYTHON = (3, 11)
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_python() -> None:
    if sys.version_info[:2] != IMAGE_PYTHON:
        raise DevClusterError(
            "the sparkplane image copies this environment's packages into Debian bookworm, whose "
            f"Python is {'.'.join(map(str, IMAGE_PYTHON))}; this is Python "
            f"{sys.version_info[0]}.{sys.version_info[1]}: run sparkplane from a Python 3.11 venv"
        )


def runtime_distributions() -> list[importlib.metadata.Distribution]:
    """sparkplane's installed runtime dependencies, transitively (no extras), sorted by name.

    A requirement whose environment marker was false for this interpreter is not installed and
    is skipped; only ``extra == ...`` requirements are left out explicitly.
    """
    found: dict[str, importlib.metadata.Distribution] = {}
    queue = list(importlib.metadata.distribution("sparkplane").requires or [])
    while queue:
        requirement = queue.pop()
        match = _NAME.match(requirement)
        if not match or re.search(r";.*\bextra\s*==", requirement):
            continue
        name = _canonical(match[1])
        if name in found or name == "sparkplane":
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[name] = dist
        queue += dist.requires or []
    return [found[n] for n in sorted(found)]


def deps_recipe(base_passwd: str) -> dict[str, object]:
    dists = runtime_distributions()
    return {
        "python": IMAGE_PYTHON,
        "dists": [(d.metadata["Name"], d.version, _record_hash(d)) for d in dists],
        "passwd": cache.hash_bytes(base_passwd.encode()),
    }


def _record_hash(dist: importlib.metadata.Distribution) -> str:
    return cache.hash_bytes((dist.read_text("RECORD") or "").encode())


def deps_layer(base_passwd: str, base_group: str) -> list[Entry]:
    """The runtime dependencies under ``/opt/sparkplane/lib`` and the sparkplane user."""
    check_python()
    files: dict[str, Path] = {}
    for dist in runtime_distributions():
        for rel in dist.files or []:
            path = rel.as_posix()
            if path.startswith("..") or "__pycache__" in path or path.endswith(".pyc"):
                continue
            files[path] = Path(str(dist.locate_file(rel)))
    user = f"sparkplane:x:{UID}:{UID}:sparkplane:/{HOME}:/usr/sbin/nologin\n"
    entries = [
        directory("etc"),
        data_file("etc/passwd", (base_passwd + user).encode()),
        data_file("etc/group", (base_group + f"sparkplane:x:{UID}:\n").encode()),
        directory("home"),
        directory(HOME, 0o755, UID, UID),
        *parents(f"{LIB}/x"),
    ]
    for path in sorted(files):
        entries += parents(f"{LIB}/{path}")[3:]
        entries.append(host_file(f"{LIB}/{path}", files[path]))
    return entries + list(_byte_code(entries))


def source_dir() -> Path:
    return Path(sparkplane.__file__).parent


def _skip(rel: str) -> bool:
    return "__pycache__" in rel.split("/") or rel.endswith(".pyc")


def source_recipe() -> dict[str, object]:
    return {"version": sparkplane.__version__, "tree": cache.hash_tree(source_dir(), _skip)}


def source_layer() -> list[Entry]:
    """The sparkplane package, its metadata and entry script (uid 0, read-only for others)."""
    check_python()
    version = sparkplane.__version__
    info = f"{LIB}/sparkplane-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: sparkplane\nVersion: {version}\n"
    entry_points = "[console_scripts]\nsparkplane = sparkplane.cli.main:main\n"
    script = (
        "#!/usr/bin/python3\n"
        "import sys\n"
        f'sys.path.insert(0, "/{LIB}")\n'
        "from sparkplane.cli.main import main\n"
        "sys.exit(main())\n"
    )
    entries = [
        *parents(f"{LIB}/sparkplane/x"),
        *tree(source_dir(), f"{LIB}/sparkplane", skip=_skip),
        directory(info),
        data_file(f"{info}/METADATA", metadata.encode()),
        data_file(f"{info}/entry_points.txt", entry_points.encode()),
        data_file(f"{info}/top_level.txt", b"sparkplane\n"),
        *parents("usr/local/bin/sparkplane"),
        data_file("usr/local/bin/sparkplane", script.encode(), 0o755),
    ]
    return entries + list(_byte_code(entries))


def _byte_code(entries: Iterable[Entry]) -> Iterable[Entry]:
    """``__pycache__`` entries with hash-checked byte code for every ``.py`` file under LIB."""
    tag = sys.implementation.cache_tag
    with tempfile.TemporaryDirectory(prefix="sparkplane-pyc-") as work:
        for entry in list(entries):
            if entry.kind != "file" or not entry.path.endswith(".py") or entry.opener is None:
                continue
            source = Path(work, "src.py")
            with entry.opener() as handle:
                source.write_bytes(handle.read())
            out = Path(work, "out.pyc")
            try:
                py_compile.compile(
                    str(source),
                    cfile=str(out),
                    dfile="/" + entry.path,
                    doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                )
            except py_compile.PyCompileError:
                continue  # a file not meant for this Python (templates, vendored py2 code)
            folder, name = entry.path.rsplit("/", 1)
            pyc = f"{folder}/__pycache__/{name[:-3]}.{tag}.pyc"
            yield directory(f"{folder}/__pycache__", 0o755, entry.uid, entry.gid)
            yield data_file(pyc, out.read_bytes(), 0o644, entry.uid, entry.gid)
