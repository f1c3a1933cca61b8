"""Reading Spark's prefixed configuration families (labels, secrets, volumes...) from a conf map.

Spark groups many settings under key prefixes (``spark.kubernetes.driver.label.<k>``,
``….volumes.<type>.<name>.mount.path``...). This module owns parsing those families into
plain data, once, for both the validator and the render steps. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

K8S = "spark.kubernetes"
VOLUME_TYPES = ("hostPath", "persistentVolumeClaim", "emptyDir", "nfs")


def with_prefix(conf: Mapping[str, str], prefix: str) -> dict[str, str]:
    """Entries under ``prefix`` (with the prefix removed), sorted by key for stable output."""
    return {k[len(prefix) :]: conf[k] for k in sorted(conf) if k.startswith(prefix)}


@dataclass(frozen=True)
class VolumeConf:
    """One ``spark.kubernetes.<role>.volumes.<type>.<name>.*`` group."""

    type: str
    name: str
    mount_path: str | None = None
    read_only: bool = False
    sub_path: str | None = None
    sub_path_expr: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()
    read_only_raw: str | None = None


def volumes(conf: Mapping[str, str], role: str) -> list[VolumeConf]:
    """Parse a role's volume family, in the order volumes first appear in sorted keys."""
    groups: dict[tuple[str, str], dict[str, str]] = {}
    for rest, value in with_prefix(conf, f"{K8S}.{role}.volumes.").items():
        vtype, _, tail = rest.partition(".")
        name, _, attr = tail.partition(".")
        groups.setdefault((vtype, name), {})[attr] = value
    out: list[VolumeConf] = []
    for (vtype, name), attrs in groups.items():
        ro = attrs.get("mount.readOnly")
        known = {"mount.path", "mount.readOnly", "mount.subPath", "mount.subPathExpr"}
        out.append(
            VolumeConf(
                type=vtype,
                name=name,
                mount_path=attrs.get("mount.path"),
                read_only=(ro or "").strip().lower() == "true",
                read_only_raw=ro,
                sub_path=attrs.get("mount.subPath") or None,
                sub_path_expr=attrs.get("mount.subPathExpr") or None,
                options=with_prefix(attrs, "options."),
                labels=with_prefix(attrs, "label."),
                annotations=with_prefix(attrs, "annotation."),
                unknown=tuple(
                    a
                    for a in attrs
                    if a not in known and not a.startswith(("options.", "label.", "annotation."))
                ),
            )
        )
    return out


def custom_resources(conf: Mapping[str, str], role: str) -> dict[str, dict[str, str]]:
    """``spark.<role>.resource.<name>.{amount,vendor,...}`` grouped by resource name."""
    out: dict[str, dict[str, str]] = {}
    for rest, value in with_prefix(conf, f"spark.{role}.resource.").items():
        name, _, attr = rest.rpartition(".")
        if name:
            out.setdefault(name, {})[attr] = value
    return out
