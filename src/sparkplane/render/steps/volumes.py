"""User volumes step (Spark's ``MountVolumesFeatureStep``, reference §3.9).

For each ``spark.kubernetes.driver.volumes.<type>.<name>.*`` group: a hostPath, PVC, emptyDir
or NFS volume and its mount. A PVC whose ``claimName`` is ``OnDemand`` with both
``storageClass`` and ``sizeLimit`` gets a new claim ``<prefix>-driver-pvc-<i>``
(ReadWriteOncePod, labelled with the app id) created after the pod. Pure.

Deviations: volumes are ordered by sorted conf key (Spark: hash order); empty ``subPath``
and ``readOnly: false`` are omitted (the API server drops them anyway).
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, with_volumes
from sparkplane.spec.conf_keys import VolumeConf, volumes
from sparkplane.spec.models import SparkApp
from sparkplane.vocab import APP_SELECTOR_LABEL

ON_DEMAND = "OnDemand"


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When the driver has user volumes."""
    return bool(volumes(conf, "driver"))


def _source(vol: VolumeConf, claim: str | None) -> Obj:
    opts = vol.options
    if vol.type == "hostPath":
        return {"hostPath": {"path": opts.get("path", ""), "type": opts.get("type", "")}}
    if vol.type == "persistentVolumeClaim":
        source: Obj = {"claimName": claim or opts.get("claimName", "")}
        if vol.read_only:
            source["readOnly"] = True
        return {"persistentVolumeClaim": source}
    if vol.type == "nfs":
        nfs: Obj = {"path": opts.get("path", ""), "server": opts.get("server", "")}
        if vol.read_only:
            nfs["readOnly"] = True
        return {"nfs": nfs}
    empty: Obj = {}
    if opts.get("medium"):
        empty["medium"] = opts["medium"]
    if opts.get("sizeLimit"):
        empty["sizeLimit"] = opts["sizeLimit"]
    return {"emptyDir": empty}


def _mount(vol: VolumeConf) -> Obj:
    mount: Obj = {"mountPath": vol.mount_path, "name": vol.name}
    if vol.read_only:
        mount["readOnly"] = True
    if vol.sub_path:
        mount["subPath"] = vol.sub_path
    if vol.sub_path_expr:
        mount["subPathExpr"] = vol.sub_path_expr
    return mount


def _claim(conf: DriverConf, vol: VolumeConf, name: str) -> Obj:
    labels = {APP_SELECTOR_LABEL: conf.ids.app_id, **vol.labels}
    meta: Obj = {"name": name, "labels": labels}
    if vol.annotations:
        meta["annotations"] = dict(vol.annotations)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": {
            "accessModes": [
                "ReadWriteOnce"
                if conf.get("spark.kubernetes.legacy.useReadWriteOnceAccessMode") == "true"
                else "ReadWriteOncePod"
            ],
            "resources": {"requests": {"storage": vol.options["sizeLimit"]}},
            "storageClassName": vol.options["storageClass"],
        },
    }


class VolumesStep:
    """Mount the driver's user volumes; create OnDemand claims."""

    name = "volumes"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        vols, mounts, claims = [], [], []
        for i, vol in enumerate(volumes(conf.conf, "driver")):
            claim = None
            opts = vol.options
            if (
                vol.type == "persistentVolumeClaim"
                and opts.get("claimName") == ON_DEMAND
                and "storageClass" in opts
                and "sizeLimit" in opts
            ):
                claim = f"{conf.ids.resource_prefix}-driver-pvc-{i}"
                claims.append(_claim(conf, vol, claim))
            vols.append({"name": vol.name, **_source(vol, claim)})
            mounts.append(_mount(vol))
        pod, container = with_volumes(state.pod, state.container, vols, mounts)
        return state.evolve(pod=pod, container=container, resources=claims)
