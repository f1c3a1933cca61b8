"""One archived app as one ConfigMap: gzip its logs and fit them under the object size limit.

The in-cluster archive (:mod:`sparkplane.history.kube_store`) keeps each app in a ConfigMap
``sparkplane-logs-<app>`` in the app's namespace, so that namespace's RBAC governs who reads it.
The API server refuses a ConfigMap whose data is over 1 MiB; this module turns the archive's
files (``driver.log``, ``executor-N.log``, ``meta.json``) into a ConfigMap body under
:data:`BUDGET`: each log gzip-compressed in ``binaryData`` (``driver.log.gz``), ``meta.json`` as
plain text in ``data`` (``kubectl get cm -o yaml`` shows it), the app and times in annotations.
When the compressed logs are still over the budget, each log over its share keeps its head and
tail with a marker between (:func:`sparkplane.history.archive.cap_text`); the driver's share
comes first. Pure: no Kubernetes, no files.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import zlib
from typing import Any

from sparkplane.history import archive as layout
from sparkplane.history.archive import ArchiveMeta
from sparkplane.vocab import (
    ARCHIVE_APP_ANNOTATION,
    ARCHIVED_AT_ANNOTATION,
    LOG_ARCHIVE_LABEL,
    RETENTION_KEY,
)

BUDGET = 900 * 1024  # compressed logs per ConfigMap; the API server's limit is 1 MiB in all
MAX_UNPACKED = 64 * 1024 * 1024  # a reader never inflates one file beyond this
LABEL = LOG_ARCHIVE_LABEL
APP_ANNOTATION = ARCHIVE_APP_ANNOTATION
ARCHIVED_ANNOTATION = ARCHIVED_AT_ANNOTATION
PREFIX = "sparkplane-logs-"
GZ = ".gz"
DRIVER = "driver.log"
Obj = dict[str, Any]


def configmap_name(app: str) -> str:
    """``sparkplane-logs-<app>``; a name too long for an object gets a hash suffix instead."""
    name = PREFIX + app
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(app.encode()).hexdigest()[:10]
    return f"{name[:242].rstrip('-.')}-{digest}"


def compress(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def inflate(data: bytes, limit: int = MAX_UNPACKED) -> bytes:
    """Decompress one stored file, refusing more than ``limit`` bytes (a planted gzip bomb)."""
    inflater = zlib.decompressobj(wbits=31)
    out = inflater.decompress(data, limit)
    if inflater.unconsumed_tail:
        raise ValueError(f"archived file inflates beyond {limit} bytes")
    return out


def shares(sizes: dict[str, int], budget: int) -> dict[str, int]:
    """Bytes each file may take: the driver up to 3/4 of ``budget`` when executors share it
    (all of it otherwise), the executors the rest in fair shares (water-filling: what a small
    one leaves goes to the others), and what the executors leave back to the driver."""
    executors = sorted((n for n in sizes if n != DRIVER), key=lambda n: sizes[n])
    driver = min(sizes.get(DRIVER, 0), budget * 3 // 4 if executors else budget)
    left, out = budget - driver, {}
    for i, name in enumerate(executors):
        out[name] = min(sizes[name], left // (len(executors) - i))
        left -= out[name]
    if DRIVER in sizes:
        out[DRIVER] = min(sizes[DRIVER], driver + left)
    return out


def shrink(data: bytes, limit: int) -> bytes:
    """``data`` compressed to at most ``limit`` bytes, keeping its head and tail."""
    packed = compress(data)
    lines = data.decode(errors="replace").splitlines()
    target = len(data)
    while len(packed) > limit:
        ratio = len(packed) / max(target, 1)
        target = int(min(target * 0.85, limit / max(ratio, 1e-3) * 0.9))
        text, _ = layout.cap_text(lines, max(target, 0))
        packed = compress(text.encode())
        if target < 256 and len(packed) > limit:  # even the marker does not fit
            return compress(b"")
    return packed


def pack(files: dict[str, bytes], budget: int = BUDGET) -> tuple[dict[str, bytes], bool]:
    """The logs among ``files`` compressed (name → gzip bytes) within ``budget``, and whether
    any was cut to fit."""
    logs = {n: d for n, d in files.items() if n != layout.META}
    packed = {n: compress(d) for n, d in logs.items()}
    if sum(len(p) for p in packed.values()) <= budget:
        return packed, False
    allowed = shares({n: len(p) for n, p in packed.items()}, budget)
    for name, share in allowed.items():
        if len(packed[name]) > share:
            packed[name] = shrink(logs[name], share)
    return packed, True


def configmap(namespace: str, app: str, files: dict[str, bytes], budget: int = BUDGET) -> Obj:
    """The ConfigMap holding one archived app (``files`` must hold ``meta.json``)."""
    meta = ArchiveMeta.from_json(files[layout.META])
    packed, cut = pack(files, budget)
    if cut and not meta.truncated:
        meta = dataclasses.replace(meta, truncated=True)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(app),
            "namespace": namespace,
            "labels": {LABEL: "true", "app.kubernetes.io/managed-by": "sparkplane"},
            "annotations": {
                APP_ANNOTATION: app,
                ARCHIVED_ANNOTATION: meta.archived_at,
                RETENTION_KEY: str(meta.retain_seconds),
            },
        },
        "data": {layout.META: meta.to_json().decode()},
        "binaryData": {n + GZ: base64.b64encode(p).decode() for n, p in sorted(packed.items())},
    }


def file_of(obj: Obj, name: str) -> bytes | None:
    """One file of a ConfigMap made by :func:`configmap`, as it was archived (capped)."""
    if name == layout.META:
        text = (obj.get("data") or {}).get(name)
        return str(text).encode() if text is not None else None
    value = (obj.get("binaryData") or {}).get(name + GZ)
    return inflate(base64.b64decode(value)) if value is not None else None


def unpack(obj: Obj) -> dict[str, bytes]:
    """Every file a ConfigMap made by :func:`configmap` holds."""
    return {n: data for n in files_of(obj) if (data := file_of(obj, n)) is not None}


def files_of(obj: Obj) -> list[str]:
    """The file names a ConfigMap holds, without reading them."""
    names = [n for n in (obj.get("data") or {}) if n == layout.META]
    names += [n[: -len(GZ)] for n in (obj.get("binaryData") or {}) if n.endswith(GZ)]
    return sorted(names)
