"""How a spec becomes Spark configuration: typed fields → ``spark.*`` keys, and the main resource.

Spark itself is driven by SparkConf, so the native fields of the spec (image, resources,
labels, secrets, env, volumes...) are translated into exactly the keys a spark-submit user
would pass with ``--conf``. The render steps then read only configuration, as Spark's feature
steps do, and ``spark.properties`` matches what spark-submit writes. Placement (affinity,
tolerations, priority class) has no Spark key and is applied by render steps instead.

Called by the validator, the renderers and the operator-CR renderer. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sparkplane.spec.models import PYTHON_RUNNER, R_RUNNER, RoleSpec, SparkApp
from sparkplane.version import SPARK_VERSIONS, spark_image

K8S = "spark.kubernetes"
ResourceType = Literal["java", "python", "r"]


@dataclass(frozen=True)
class ConfEntry:
    """One Spark conf key produced by a typed spec field (``path`` is the field's path)."""

    key: str
    value: str
    path: str


@dataclass(frozen=True)
class MainResource:
    """What the driver runs: resource type, main class, primary resource (None = no jar)."""

    type: ResourceType
    main_class: str
    resource: str | None
    extra_py_files: tuple[str, ...] = ()
    extra_jars: tuple[str, ...] = ()


def split_list(value: str | None) -> list[str]:
    """Split a comma list as Spark does, dropping blanks."""
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _role_entries(role: RoleSpec, name: str, path: str) -> list[ConfEntry]:
    out: list[ConfEntry] = []
    spark_role = "driver" if name == "driver" else "executor"

    def add(key: str, value: str | int | None, field: str) -> None:
        if value is not None:
            out.append(ConfEntry(key, str(value), f"{path}.{field}"))

    add(f"spark.{spark_role}.cores", role.cores, "cores")
    add(f"{K8S}.{spark_role}.request.cores", role.core_request, "coreRequest")
    add(f"{K8S}.{spark_role}.limit.cores", role.core_limit, "coreLimit")
    add(f"spark.{spark_role}.memory", role.memory, "memory")
    add(f"spark.{spark_role}.memoryOverhead", role.memory_overhead, "memoryOverhead")
    add(
        f"{K8S}.authenticate.{spark_role}.serviceAccountName",
        role.service_account,
        "serviceAccount",
    )
    for k, v in role.labels.items():
        add(f"{K8S}.{spark_role}.label.{k}", v, f"labels.{k}")
    for k, v in role.annotations.items():
        add(f"{K8S}.{spark_role}.annotation.{k}", v, f"annotations.{k}")
    for k, v in role.node_selector.items():
        add(f"{K8S}.{spark_role}.node.selector.{k}", v, f"nodeSelector.{k}")
    env_prefix = f"{K8S}.driverEnv" if name == "driver" else "spark.executorEnv"
    for k, v in role.env.items():
        add(f"{env_prefix}.{k}", v, f"env.{k}")
    return out


def typed_conf_entries(app: SparkApp) -> list[ConfEntry]:
    """The Spark conf keys implied by the spec's typed (non-sparkConf) fields, with paths."""
    spec = app.spec
    out: list[ConfEntry] = []

    def add(key: str, value: str | None, path: str) -> None:
        if value is not None:
            out.append(ConfEntry(key, value, path))

    add(f"{K8S}.namespace", app.metadata.namespace, "metadata.namespace")
    add(f"{K8S}.container.image", spec.image or default_image(app), "spec.image")
    add(f"{K8S}.container.image.pullPolicy", spec.image_pull_policy, "spec.imagePullPolicy")
    if spec.image_pull_secrets:
        add(
            f"{K8S}.container.image.pullSecrets",
            ",".join(spec.image_pull_secrets),
            "spec.imagePullSecrets",
        )
    add(
        f"{K8S}.authenticate.driver.serviceAccountName", spec.service_account, "spec.serviceAccount"
    )
    for role in ("driver", "executor"):
        for k, v in spec.labels.items():
            add(f"{K8S}.{role}.label.{k}", v, f"spec.labels.{k}")
        for k, v in spec.annotations.items():
            add(f"{K8S}.{role}.annotation.{k}", v, f"spec.annotations.{k}")
        for name, mount in spec.secrets.mounts.items():
            add(f"{K8S}.{role}.secrets.{name}", mount, f"spec.secrets.mounts.{name}")
        for env, ref in spec.secrets.env.items():
            add(f"{K8S}.{role}.secretKeyRef.{env}", ref, f"spec.secrets.env.{env}")
        for i, vol in enumerate(spec.volumes):
            base = f"{K8S}.{role}.volumes.{vol.type}.{vol.name}"
            path = f"spec.volumes[{i}]"
            add(f"{base}.mount.path", vol.mount_path, f"{path}.mountPath")
            if vol.read_only:
                add(f"{base}.mount.readOnly", "true", f"{path}.readOnly")
            add(f"{base}.mount.subPath", vol.sub_path, f"{path}.subPath")
            add(f"{base}.mount.subPathExpr", vol.sub_path_expr, f"{path}.subPathExpr")
            for k, v in vol.options.items():
                add(f"{base}.options.{k}", v, f"{path}.options.{k}")
    for k, v in spec.node_selector.items():
        add(f"{K8S}.node.selector.{k}", v, f"spec.nodeSelector.{k}")
    for k, v in spec.env.items():
        add(f"{K8S}.driverEnv.{k}", v, f"spec.env.{k}")
        add(f"spark.executorEnv.{k}", v, f"spec.env.{k}")
    out.extend(_role_entries(spec.driver, "driver", "spec.driver"))
    out.extend(_role_entries(spec.executor, "executor", "spec.executor"))
    if spec.executor.instances is not None:
        add("spark.executor.instances", str(spec.executor.instances), "spec.executor.instances")
    return out


def mapped_conf(app: SparkApp) -> dict[str, str]:
    """``sparkConf`` plus the keys of the typed fields (typed fields win on a conflict;
    the validator reports such conflicts before rendering)."""
    conf = dict(app.spec.spark_conf)
    for entry in typed_conf_entries(app):
        conf[entry.key] = entry.value
    return conf


SPARK_VERSION = "{{SPARK_VERSION}}"


def is_image_key(key: str) -> bool:
    """``spark.kubernetes.[driver.|executor.]container.image``: where ``{{SPARK_VERSION}}``
    is replaced."""
    return key.startswith(f"{K8S}.") and key.endswith("container.image")


def with_spark_version(conf: Mapping[str, str], version: str | None) -> dict[str, str]:
    """``conf`` with ``{{SPARK_VERSION}}`` in its image keys replaced by ``version`` (left as
    is without one), as Apache's operator does with ``runtimeVersions.sparkVersion`` before it
    submits (and Spark 4.1's KubernetesConf with its own version). The one rule of every mode:
    native rendering, the validator, the operator's driver and cluster builders, Kubeflow."""
    return {k: versioned_image(v, version) if is_image_key(k) else v for k, v in conf.items()}


def versioned_image(image: str, version: str | None) -> str:
    """``image`` with ``{{SPARK_VERSION}}`` replaced by ``version`` (unchanged without one)."""
    return image.replace(SPARK_VERSION, version) if version else image


def default_image(app: SparkApp) -> str | None:
    """Without any image (``spec.image``, a ``container.image`` key), the Spark image of
    ``runtimeVersions.sparkVersion`` (``--spark-version``) when it is one of
    :data:`sparkplane.version.SPARK_VERSIONS`; the validator refuses any other version
    without an image, naming the field and the supported versions."""
    version = runtime_spark_version(app)
    if any(is_image_key(k) for k in app.spec.spark_conf) or version not in SPARK_VERSIONS:
        return None
    return spark_image(str(version))


def runtime_spark_version(app: SparkApp) -> str | None:
    """``spec.runtimeVersions.sparkVersion``: what ``{{SPARK_VERSION}}`` stands for."""
    runtime = app.spec.runtime_versions
    return runtime.spark_version if runtime is not None and runtime.spark_version else None


def app_name(app: SparkApp) -> str:
    """``spark.app.name`` if the user set it, else ``metadata.name``."""
    return app.spec.spark_conf.get("spark.app.name") or app.metadata.name


def main_resource(app: SparkApp) -> MainResource | None:
    """Resolve what the driver runs, following the operator's rules for jars/pyFiles/R.

    Python: the first ``pyFiles`` element is the primary ``.py``, the rest go to
    ``spark.submit.pyFiles``. JVM: the first ``jars`` element is the primary jar, the rest are
    extra jars (a deliberate generalisation; the operator passes the whole string). Returns
    None when the spec names nothing to run (the validator reports it).
    """
    spec = app.spec
    main_class = spec.main_class
    if spec.spark_r_files and main_class in (None, R_RUNNER):
        return MainResource("r", R_RUNNER, spec.spark_r_files)
    py = split_list(spec.py_files)
    if py and main_class in (None, PYTHON_RUNNER):
        return MainResource("python", PYTHON_RUNNER, py[0], extra_py_files=tuple(py[1:]))
    if main_class is None or main_class in (PYTHON_RUNNER, R_RUNNER):
        return None
    jars = split_list(spec.jars)
    if jars:
        return MainResource("java", main_class, jars[0], extra_jars=tuple(jars[1:]))
    return MainResource("java", main_class, None)
