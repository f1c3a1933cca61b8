"""Limits knowable before anything is created: image references and object sizes.

Owns the container image reference grammar (the distribution/reference syntax the kubelet and
registries accept: ``[host[:port]/]path[:tag][@digest]``), the API server's size limits
(a ConfigMap's or Secret's data at most 1 MiB, any object at most about 1.5 MiB as stored in
etcd) and the cheap spark.properties estimate that refuses a 300,000-key sparkConf in
milliseconds instead of after rendering. Called by the validator (images, conf size) and by
:func:`sparkplane.kube.ownership.create_owned` (every rendered object, just before the first
create). Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sparkplane.errors import Problem

MIB = 1024 * 1024
#: ``data`` + ``binaryData`` of one ConfigMap (keys and values), the API server's limit.
MAX_CONFIGMAP_DATA = MIB
#: etcd's default request limit (--max-request-bytes) bounds every stored object.
MAX_OBJECT_BYTES = MIB + MIB // 2

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = (
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
)
_IMAGE = re.compile(
    rf"^(?:{_HOST}(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"
)
MAX_IMAGE = 512
IMAGE_HINT = "e.g. apache/spark:4.0.1 or registry.example.com:5000/team/spark@sha256:<digest>"


def image_problem(image: str) -> str:
    """Why ``image`` is not a valid container image reference ("" when it is)."""
    if not image.strip():
        return "the image is empty"
    if image != image.strip() or any(c.isspace() for c in image):
        return f"image {image!r} contains whitespace"
    if len(image) > MAX_IMAGE:
        return f"image reference is {len(image)} characters long (at most {MAX_IMAGE})"
    if not _IMAGE.match(image):
        return f"{image!r} is not a valid image reference (repository names are lowercase)"
    return ""


def properties_size(conf: Mapping[str, str]) -> int:
    """Bytes of ``spark.properties`` for ``conf`` (key=value lines), a lower bound of what the
    driver ConfigMap holds; cheap enough to run before any other check."""
    return sum(len(k.encode()) + len(v.encode()) + 2 for k, v in conf.items())


def conf_size_problem(conf: Mapping[str, str], path: str = "spec.sparkConf") -> Problem | None:
    """A problem when spark.properties alone would break the 1 MiB ConfigMap limit."""
    size = properties_size(conf)
    if size <= MAX_CONFIGMAP_DATA:
        return None
    return Problem(
        path,
        f"{len(conf)} settings make a spark.properties of {size / MIB:.1f} MiB; a ConfigMap "
        f"holds at most 1 MiB",
        "move bulk data out of sparkConf (files in the image, object storage, spark.files)",
    )


def _data_size(obj: Mapping[str, Any]) -> int:
    total = 0
    for field in ("data", "binaryData", "stringData"):
        for key, value in (obj.get(field) or {}).items():
            total += len(str(key).encode()) + len(str(value).encode())
    return total


def object_size_problems(objects: Iterable[Mapping[str, Any]]) -> list[Problem]:
    """Objects the API server would refuse for their size, each with its limit."""
    problems: list[Problem] = []
    for obj in objects:
        kind = str(obj.get("kind", ""))
        name = f"{kind} {(obj.get('metadata') or {}).get('name', '')}".strip()
        if kind in ("ConfigMap", "Secret"):
            size = _data_size(obj)
            if size > MAX_CONFIGMAP_DATA:
                problems.append(
                    Problem(
                        name,
                        f"its data is {size / MIB:.2f} MiB; a {kind} holds at most 1 MiB",
                        "move bulk data out (files in the image, object storage)",
                    )
                )
                continue
        size = len(json.dumps(obj, separators=(",", ":")).encode())
        if size > MAX_OBJECT_BYTES:
            problems.append(
                Problem(
                    name,
                    f"is {size / MIB:.2f} MiB; the API server stores objects up to about 1.5 MiB",
                    "make it smaller: move data into files or separate objects",
                )
            )
    return problems
