"""Write an OCI image-layout archive (``oci-layout``, ``index.json``, ``blobs/sha256/*``) as a tar.

:func:`image_config` makes the image configuration (entrypoint, command, environment, user,
working directory, the layers' ``diff_id`` values); :func:`write_archive` stores it, the
manifest and the layer blobs, and names the image in the index with both
``org.opencontainers.image.ref.name`` and ``io.containerd.image.name`` (what
``ctr images import`` uses), so the archive imports under its full reference. JSON is written
with sorted keys and no timestamps: the same layers and config give the same archive bytes.
The builder calls this; it knows nothing of how layers are made or cached.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparkplane_devcluster.images.layers import MTIME, LayerBlob

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"
CONTAINERD_NAME = "io.containerd.image.name"


def goarch() -> str:
    """This machine's architecture in OCI (Go) terms."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)


def image_config(
    layers: Sequence[LayerBlob],
    *,
    entrypoint: Sequence[str] | None = None,
    cmd: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    user: str = "",
    workdir: str = "",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The image configuration document for ``layers`` (bottom first)."""
    config: dict[str, Any] = {}
    if entrypoint:
        config["Entrypoint"] = list(entrypoint)
    if cmd:
        config["Cmd"] = list(cmd)
    if env:
        config["Env"] = [f"{k}={v}" for k, v in env.items()]
    if user:
        config["User"] = user
    if workdir:
        config["WorkingDir"] = workdir
    if labels:
        config["Labels"] = dict(labels)
    return {
        "architecture": goarch(),
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
    }


def _json(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def _descriptor(media_type: str, data: bytes) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": _sha(data), "size": len(data)}


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_archive(out: Path, ref: str, layers: Sequence[LayerBlob], config: dict[str, Any]) -> int:
    """Write the image ``ref`` as an OCI-layout tar at ``out``; returns its size in bytes."""
    config_bytes = _json(config)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": _descriptor(CONFIG, config_bytes),
        "layers": [
            {"mediaType": layer.media_type, "digest": layer.digest, "size": layer.size}
            for layer in layers
        ],
    }
    manifest_bytes = _json(manifest)
    descriptor = _descriptor(MANIFEST, manifest_bytes)
    descriptor["annotations"] = {REF_NAME: ref, CONTAINERD_NAME: ref}
    descriptor["platform"] = {"architecture": config["architecture"], "os": config["os"]}
    index = {"schemaVersion": 2, "mediaType": INDEX, "manifests": [descriptor]}
    blobs: dict[str, bytes | Path] = {_sha(config_bytes): config_bytes}
    blobs[_sha(manifest_bytes)] = manifest_bytes
    for layer in layers:
        blobs[layer.digest] = layer.path
    with (
        out.open("wb") as raw,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        _add_dir(tar, "blobs")
        _add_dir(tar, "blobs/sha256")
        for digest in sorted(blobs):
            _add_blob(tar, "blobs/sha256/" + digest.split(":", 1)[1], blobs[digest])
        _add_blob(tar, "index.json", _json(index))
        _add_blob(tar, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
    return out.stat().st_size


def _info(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime, info.uid, info.gid, info.uname, info.gname = MTIME, 0, 0, "", ""
    return info


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = _info(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    tar.addfile(info)


def _add_blob(tar: tarfile.TarFile, name: str, content: bytes | Path) -> None:
    info = _info(name)
    info.mode = 0o644
    if isinstance(content, bytes):
        info.size = len(content)
        tar.addfile(info, io.BytesIO(content))
        return
    info.size = content.stat().st_size
    with content.open("rb") as handle:
        tar.addfile(info, handle)
