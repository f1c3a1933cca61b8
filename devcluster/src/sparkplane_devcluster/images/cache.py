"""The image cache: content keys, per-entry locks, and build-then-rename directories.

Every cached thing (a layer, an image archive) lives in ``<cache>/images/...<name>-<key>/``
where ``key`` hashes its recipe (:func:`content_key`): a recipe that did not change finds its
directory and returns at once; a changed recipe builds a new directory and prunes the old ones of
that name that no one used for :data:`PRUNE_AFTER` (each use touches its entry: two checkouts of
different versions, e.g. a developer's worktrees or CI beside a developer, each keep their image
while they use it; pruning at once made one's ``ctr import`` find the other's build had deleted
its archive). A build writes into a hidden temp directory that is renamed into place only when
complete, under a file lock so two processes never build the same thing twice. Used by the recipe
modules and the builder; it knows nothing of what is inside an entry.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sparkplane_devcluster.images.layers import LayerBlob

BUILDER_VERSION = "1"
"""Bump when the builder's output changes for the same recipes: every key changes with it."""

KEY_LENGTH = 16


def content_key(recipe: Mapping[str, Any]) -> str:
    """A short hex key of ``recipe`` (canonical JSON) and the builder version."""
    doc = json.dumps({"builder": BUILDER_VERSION, **recipe}, sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()[:KEY_LENGTH]


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_tree(root: Path, skip: Callable[[str], bool] = lambda _: False) -> str:
    """A hash of the files under ``root``: relative paths, executable bits, contents, symlinks."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if not skip(p.relative_to(root).as_posix())):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel} {os.readlink(path)}\n".encode())
        elif path.is_file():
            exe = "x" if os.access(path, os.X_OK) else "-"
            digest.update(f"F {rel} {exe} {hash_bytes(path.read_bytes())}\n".encode())
    return digest.hexdigest()


def images_root(cache_dir: Path) -> Path:
    return cache_dir / "images"


def entry_dir(cache_dir: Path, name: str, key: str) -> Path:
    """Where the entry ``name`` with ``key`` lives (layers under ``layers/``)."""
    return images_root(cache_dir) / f"{name}-{key}"


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive file lock on ``path`` (created if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: An entry of an older recipe is removed once unused this long (seconds).
PRUNE_AFTER = 24 * 3600.0


def _used(entry: Path) -> bool:
    """Touch ``entry`` (it is in use); False when it vanished meanwhile."""
    try:
        os.utime(entry)
    except FileNotFoundError:
        return False
    return True


def ensure_dir(final: Path, build: Callable[[Path], None]) -> bool:
    """Make ``final`` by ``build(temp_dir)`` unless it exists; True when it was built now.

    The entry name is ``final``'s name without its key; older keys of that name are removed once
    unused for :data:`PRUNE_AFTER`.
    """
    if final.is_dir() and _used(final):
        return False
    name = final.name[: -(KEY_LENGTH + 1)]
    with locked(final.parent / f".{name}.lock"):
        if final.is_dir() and _used(final):
            return False
        temp = final.with_name(f".{final.name}.tmp")
        shutil.rmtree(temp, ignore_errors=True)
        temp.mkdir(parents=True)
        try:
            build(temp)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        temp.rename(final)
        stale = re.compile(rf"^{re.escape(name)}-[0-9a-f]{{{KEY_LENGTH}}}$")
        cutoff = time.time() - PRUNE_AFTER
        for sibling in final.parent.iterdir():
            if sibling != final and stale.match(sibling.name) and _mtime(sibling) < cutoff:
                shutil.rmtree(sibling, ignore_errors=True)
    return True


def _mtime(entry: Path) -> float:
    try:
        return entry.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def save_layer(directory: Path, blob: LayerBlob) -> None:
    """Record ``blob`` (written inside ``directory``) so :func:`load_layer` finds it later."""
    doc = {
        "file": blob.path.name,
        "digest": blob.digest,
        "diff_id": blob.diff_id,
        "size": blob.size,
        "media_type": blob.media_type,
    }
    (directory / "layer.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def load_layer(directory: Path) -> LayerBlob | None:
    """The layer recorded in ``directory``, or None when it is missing or unreadable."""
    try:
        doc = json.loads((directory / "layer.json").read_text())
        path = directory / doc["file"]
        if not path.is_file():
            return None
        return LayerBlob(path, doc["digest"], doc["diff_id"], int(doc["size"]), doc["media_type"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
