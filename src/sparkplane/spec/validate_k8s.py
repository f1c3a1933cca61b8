"""Kubernetes-side checks of a spec: labels, annotations, secrets, volumes, env, object names.

Split from ``validate`` to keep modules small; ``validate.collect_problems`` calls
:func:`check_k8s_names` with the resolved conf and a problem sink. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sparkplane.spec import conf_keys
from sparkplane.spec.conf import K8S
from sparkplane.spec.models import SparkApp
from sparkplane.spec.naming import is_env_name, label_key_problem, label_value_problem
from sparkplane.vocab import (
    APP_NAME_LABEL,
    APP_SELECTOR_LABEL,
    ROLE_LABEL,
    is_dns1123_label,
    is_dns1123_subdomain,
)

Add = Callable[..., None]
PathOf = Callable[[str], str]

RESERVED_LABELS = frozenset(
    {
        APP_SELECTOR_LABEL,
        APP_NAME_LABEL,
        ROLE_LABEL,
        "spark-version",
        "spark-exec-id",
        "spark-exec-resourceprofile-id",
        "app-name",
    }
)


def check_k8s_names(app: SparkApp, conf: Mapping[str, str], path_of: PathOf, add: Add) -> None:
    """Report invalid labels, annotations, secrets, volumes, env names and object names."""
    _labels(app, conf, path_of, add)
    _secrets(conf, path_of, add)
    for role in ("driver", "executor"):
        _volumes(conf, role, path_of, add)
    _env(conf, path_of, add)
    _objects(app, conf, path_of, add)
    for key in _LOCAL_ONLY:
        if conf.get(key):
            add(
                path_of(key),
                "Kerberos files on the submitting machine are not supported",
                "put krb5.conf in a ConfigMap and name it with "
                "spark.kubernetes.kerberos.krb5.configMapName; keytabs are not supported",
            )


# spark-submit reads these on the submitter and ships them; sparkplane does not
_LOCAL_ONLY = ("spark.kubernetes.kerberos.krb5.path", "spark.kerberos.keytab")


# What spark-submit substitutes in label values (SPARK-47730): checked as the longest value
# each placeholder can become (an app id is ``spark-`` + 32 hex digits).
_PLACEHOLDERS = {"{{APP_ID}}": "spark-" + "0" * 32, "{{EXECUTOR_ID}}": "1"}


def _substituted(value: str) -> str:
    for placeholder, example in _PLACEHOLDERS.items():
        value = value.replace(placeholder, example)
    return value


def _label_map(
    labels: Mapping[str, str],
    path: Callable[[str], str],
    add: Add,
    *,
    reserved: bool,
    placeholders: bool = False,
) -> None:
    for key, value in labels.items():
        why = label_key_problem(key)
        if why:
            add(path(key), f"invalid label key {key!r}: {why}")
        elif reserved and key in RESERVED_LABELS:
            add(path(key), f"label {key!r} is reserved", "sparkplane and Spark set it themselves")
        why = label_value_problem(_substituted(value) if placeholders else value)
        if why:
            add(path(key), f"invalid label value {value!r}: {why}")


def _annotation_keys(annotations: Mapping[str, str], path: Callable[[str], str], add: Add) -> None:
    for key in annotations:
        why = label_key_problem(key)
        if why:
            add(path(key), f"invalid annotation key {key!r}: {why}")


def _labels(app: SparkApp, conf: Mapping[str, str], path_of: PathOf, add: Add) -> None:
    families = [(f"{K8S}.{r}.label.", True) for r in ("driver", "executor")]
    families.append((f"{K8S}.driver.service.label.", False))
    for prefix, reserved in families:
        _label_map(
            conf_keys.with_prefix(conf, prefix),
            _prefixed(path_of, prefix),
            add,
            reserved=reserved,
            placeholders=prefix != f"{K8S}.driver.service.label.",
        )
    for role in ("driver", "executor"):
        prefix = f"{K8S}.{role}.annotation."
        _annotation_keys(conf_keys.with_prefix(conf, prefix), _prefixed(path_of, prefix), add)
    _label_map(app.metadata.labels, lambda k: f"metadata.labels.{k}", add, reserved=True)
    _annotation_keys(app.metadata.annotations, lambda k: f"metadata.annotations.{k}", add)
    ui = app.spec.spark_ui
    if ui and ui.service:
        _label_map(
            ui.service.labels, lambda k: f"spec.sparkUI.service.labels.{k}", add, reserved=True
        )
    if ui and ui.ingress:
        _label_map(
            ui.ingress.labels, lambda k: f"spec.sparkUI.ingress.labels.{k}", add, reserved=True
        )


def _prefixed(path_of: PathOf, prefix: str) -> Callable[[str], str]:
    def path(key: str) -> str:
        return path_of(prefix + key)

    return path


def _secrets(conf: Mapping[str, str], path_of: PathOf, add: Add) -> None:
    for role in ("driver", "executor"):
        prefix = f"{K8S}.{role}.secrets."
        for name, mount in conf_keys.with_prefix(conf, prefix).items():
            path = path_of(prefix + name)
            if not is_dns1123_subdomain(name):
                add(path, f"secret name {name!r} is not a valid object name")
            elif not is_dns1123_label(f"{name}-volume"):
                add(
                    path,
                    f"volume name {name}-volume would exceed 63 characters",
                    "Spark names the volume <secret>-volume; use a shorter secret name",
                )
            if not mount.startswith("/"):
                add(path, f"mount path {mount!r} is not absolute")
        prefix = f"{K8S}.{role}.secretKeyRef."
        for env, ref in conf_keys.with_prefix(conf, prefix).items():
            path = path_of(prefix + env)
            secret, sep, key = ref.partition(":")
            if not sep or not secret or not key:
                add(
                    path,
                    f"secret reference {ref!r} is not in the form name:key",
                    "e.g. db-credentials:password",
                )
            elif not is_dns1123_subdomain(secret):
                add(path, f"secret name {secret!r} is not a valid object name")
            if not is_env_name(env):
                add(path, f"{env!r} is not a valid environment variable name")


def _volumes(conf: Mapping[str, str], role: str, path_of: PathOf, add: Add) -> None:
    base = f"{K8S}.{role}.volumes"
    mounts: dict[str, str] = {}
    required = {
        "hostPath": ("path",),
        "persistentVolumeClaim": ("claimName",),
        "nfs": ("path", "server"),
        "emptyDir": (),
    }
    for vol in conf_keys.volumes(conf, role):
        key = f"{base}.{vol.type}.{vol.name}.mount.path"
        path = path_of(key)
        if vol.type not in required:
            add(
                path,
                f"unknown volume type {vol.type!r}",
                "one of hostPath, persistentVolumeClaim, emptyDir, nfs",
            )
            continue
        if not is_dns1123_label(vol.name):
            add(path, f"volume name {vol.name!r} is not a DNS-1123 label (max 63 characters)")
        if not vol.mount_path:
            add(path, f"volume {vol.name!r} has no mount path")
        elif vol.mount_path in mounts:
            add(
                path,
                f"mount path {vol.mount_path!r} is used twice",
                f"also by volume {mounts[vol.mount_path]!r}",
            )
        else:
            mounts[vol.mount_path] = vol.name
        if vol.sub_path and vol.sub_path_expr:
            add(path, "subPath and subPathExpr are mutually exclusive")
        if vol.read_only_raw is not None and vol.read_only_raw.strip().lower() not in (
            "true",
            "false",
        ):
            add(
                path_of(f"{base}.{vol.type}.{vol.name}.mount.readOnly"),
                f"readOnly {vol.read_only_raw!r} is not true or false",
            )
        for option in required[vol.type]:
            if option not in vol.options:
                add(path, f"{vol.type} volume {vol.name!r} needs options.{option}")


def volume_warnings(conf: Mapping[str, str], path_of: PathOf, add: Add) -> None:
    """Volume settings spark-submit accepts and ignores (Spark's ``KubernetesVolumeUtils``
    reads only ``mount.*``, ``options.*``, ``label.*`` and ``annotation.*``): a warning each,
    naming the setting Spark honours where there is one (``mount.sizeLimit`` →
    ``options.sizeLimit``), so that a spark-submit command line still submits."""
    for role in ("driver", "executor"):
        base = f"{K8S}.{role}.volumes"
        for vol in conf_keys.volumes(conf, role):
            for attr in vol.unknown:
                key = f"{base}.{vol.type}.{vol.name}.{attr}"
                honoured = _HONOURED.get(attr.rpartition(".")[2])
                add(
                    path_of(key),
                    f"volume setting {attr!r} is ignored, as spark-submit ignores it",
                    f"use {base}.{vol.type}.{vol.name}.{honoured}" if honoured else "",
                )


# the last word of an ignored volume setting → the one Spark reads
_HONOURED = {
    "sizeLimit": "options.sizeLimit",
    "medium": "options.medium",
    "claimName": "options.claimName",
    "storageClass": "options.storageClass",
    "server": "options.server",
    "readonly": "mount.readOnly",
    "subpath": "mount.subPath",
}


def _env(conf: Mapping[str, str], path_of: PathOf, add: Add) -> None:
    for prefix in (f"{K8S}.driverEnv.", "spark.executorEnv."):
        for name in conf_keys.with_prefix(conf, prefix):
            if not is_env_name(name):
                add(path_of(prefix + name), f"{name!r} is not a valid environment variable name")


def _objects(app: SparkApp, conf: Mapping[str, str], path_of: PathOf, add: Add) -> None:
    spec = app.spec
    names = [
        (
            f"{K8S}.authenticate.{r}.serviceAccountName",
            conf.get(f"{K8S}.authenticate.{r}.serviceAccountName"),
        )
        for r in ("driver", "executor")
    ]
    for key, value in names:
        if value is not None and not is_dns1123_subdomain(value):
            add(path_of(key), f"service account {value!r} is not a valid name")
    for secret in split_secrets(conf.get(f"{K8S}.container.image.pullSecrets")):
        if not is_dns1123_subdomain(secret):
            add(
                path_of(f"{K8S}.container.image.pullSecrets"),
                f"image pull secret {secret!r} is not a valid name",
            )
    for path, pc in (
        ("spec.priorityClassName", spec.priority_class_name),
        ("spec.driver.priorityClassName", spec.driver.priority_class_name),
        ("spec.executor.priorityClassName", spec.executor.priority_class_name),
    ):
        if pc is not None and not is_dns1123_subdomain(pc):
            add(path, f"priority class {pc!r} is not a valid name")
    for i, cm in enumerate(spec.config_map_specs):
        if not is_dns1123_subdomain(cm.name):
            add(f"spec.configMapSpecs[{i}].name", f"{cm.name!r} is not a valid ConfigMap name")
    ui = spec.spark_ui
    if ui and ui.service and not 0 < ui.service.port < 65536:
        add("spec.sparkUI.service.port", f"port {ui.service.port} is out of range 1-65535")
    if (
        ui
        and ui.ingress
        and ui.ingress.host
        and not is_dns1123_subdomain(ui.ingress.host.removeprefix("*."))
    ):
        add("spec.sparkUI.ingress.host", f"{ui.ingress.host!r} is not a valid host name")


def split_secrets(value: str | None) -> list[str]:
    """The comma list of image pull secrets."""
    return [s.strip() for s in (value or "").split(",") if s.strip()]
