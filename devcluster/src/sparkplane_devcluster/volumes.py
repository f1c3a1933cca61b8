"""The dev cluster's PersistentVolumes (pure: the state dir in, manifests out).

The dev cluster has no storage provisioner, so a PersistentVolumeClaim (the staging server's
``deploy/staging/``, a History Server ``--claim``) would stay Pending for ever. ``up`` makes
:data:`COUNT` static ``hostPath`` volumes of :data:`SIZE` each, with no storage class (the dev
cluster has no default one, so a claim without ``storageClassName`` binds to them), under the
cluster's state dir, so ``down --purge`` removes their data. Their reclaim policy is ``Retain``
(``Delete`` needs a provisioner): a volume whose claim was deleted stays ``Released`` until the
next ``up`` makes it anew. ``up`` makes each directory itself, writable by every user (with the
sticky bit, as ``/tmp``): the kubelet would make it root's, and a component running as another
user (the staging server, uid 185) could not write its volume. Enough for a developer or a test
session; a real cluster brings its own provisioner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

COUNT = 8
SIZE = "50Gi"
NAME = "sparkplane-dev-pv-{}"
LABEL = "sparkplane.io/dev-volume"


def volume(state_dir: Path, index: int) -> dict[str, Any]:
    """The ``index``-th volume: a ``DirectoryOrCreate`` hostPath under ``state_dir/volumes``."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": NAME.format(index), "labels": {LABEL: "true"}},
        "spec": {
            "capacity": {"storage": SIZE},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "hostPath": {
                "path": str(state_dir.resolve() / "volumes" / f"pv-{index}"),
                "type": "DirectoryOrCreate",
            },
        },
    }


def make_dir(pv: dict[str, Any]) -> None:
    """Make ``pv``'s directory on this host (the real node shares its filesystem), mode 1777."""
    path = Path(pv["spec"]["hostPath"]["path"])
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)


def volumes(state_dir: Path) -> list[dict[str, Any]]:
    return [volume(state_dir, i) for i in range(COUNT)]


def released(pv: dict[str, Any]) -> bool:
    """True for a volume whose claim is gone (``Released``: to be made anew)."""
    return (pv.get("status") or {}).get("phase") in ("Released", "Failed")
