"""OCI archives: a valid image layout whose digests match, named for containerd, byte-stable."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

from sparkplane_devcluster.images import oci
from sparkplane_devcluster.images.layers import LayerBlob, data_file, write_layer

REF = "docker.io/sparkplane/spark:4.0.1"


def _layers(tmp_path: Path) -> list[LayerBlob]:
    base = write_layer([data_file("etc/hostname", b"base\n")], tmp_path / "base.tar.gz")
    top = write_layer([data_file("opt/app", b"app", 0o755)], tmp_path / "top.tar", None)
    return [base, top]


def _config(layers: list[LayerBlob]) -> dict[str, Any]:
    return oci.image_config(
        layers,
        entrypoint=["/opt/entrypoint.sh"],
        cmd=["--help"],
        env={"SPARK_HOME": "/opt/spark", "PATH": "/usr/bin:/bin"},
        user="185:185",
        workdir="/opt/spark/work-dir",
    )


def _read(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        out = {}
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None:
                out[member.name] = handle.read()
        return out


def _blob(files: dict[str, bytes], digest: str) -> bytes:
    return files["blobs/sha256/" + digest.removeprefix("sha256:")]


def test_archive_is_a_valid_oci_layout_named_for_containerd(tmp_path: Path):
    layers = _layers(tmp_path)
    size = oci.write_archive(tmp_path / "image.tar", REF, layers, _config(layers))
    assert size == (tmp_path / "image.tar").stat().st_size
    files = _read(tmp_path / "image.tar")

    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, content in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(content).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    assert index["schemaVersion"] == 2
    [descriptor] = index["manifests"]
    assert descriptor["annotations"] == {
        "org.opencontainers.image.ref.name": REF,
        "io.containerd.image.name": REF,
    }
    manifest_bytes = _blob(files, descriptor["digest"])
    assert descriptor["size"] == len(manifest_bytes)
    assert descriptor["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    manifest = json.loads(manifest_bytes)
    assert manifest["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json"
    config = json.loads(_blob(files, manifest["config"]["digest"]))
    assert [m["digest"] for m in manifest["layers"]] == [b.digest for b in layers]
    assert [m["mediaType"] for m in manifest["layers"]] == [
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar",
    ]
    for layer, described in zip(layers, manifest["layers"], strict=True):
        assert _blob(files, described["digest"]) == layer.path.read_bytes()
        assert described["size"] == layer.size
    assert config["rootfs"] == {"type": "layers", "diff_ids": [b.diff_id for b in layers]}
    assert config["os"] == "linux" and config["architecture"] == oci.goarch()
    assert config["config"] == {
        "Entrypoint": ["/opt/entrypoint.sh"],
        "Cmd": ["--help"],
        "Env": ["SPARK_HOME=/opt/spark", "PATH=/usr/bin:/bin"],
        "User": "185:185",
        "WorkingDir": "/opt/spark/work-dir",
    }


def test_same_layers_and_config_give_identical_archive_bytes(tmp_path: Path):
    layers = _layers(tmp_path)
    oci.write_archive(tmp_path / "a.tar", REF, layers, _config(layers))
    oci.write_archive(tmp_path / "b.tar", REF, layers, _config(layers))
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    oci.write_archive(tmp_path / "c.tar", REF + "-other", layers, _config(layers))
    assert (tmp_path / "c.tar").read_bytes() != (tmp_path / "a.tar").read_bytes()


def test_shared_layer_is_stored_once(tmp_path: Path):
    [base, top] = _layers(tmp_path)
    layers = [base, top, base]
    oci.write_archive(tmp_path / "image.tar", REF, layers, _config(layers))
    blobs = [n for n in _read(tmp_path / "image.tar") if n.startswith("blobs/sha256/")]
    assert len(blobs) == 2 + 2  # two distinct layers, the config, the manifest
