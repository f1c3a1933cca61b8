"""The one Spark application spec: the operator's ``SparkApplication.spec`` plus native extras.

Field names follow the Apache Spark Kubernetes Operator (group spark.apache.org, reference
§9.2): mainClass, jars, pyFiles, files, sparkConf, driverArgs, runtimeVersions,
driverSpec/executorSpec, applicationTolerations, deploymentMode... Native mode adds image,
serviceAccount, driver/executor resources, labels, placement, secrets, env, volumes and sparkUI.
Every model forbids unknown fields so typos are reported, not ignored.

Called by the manifest and flag loaders, the validator and the renderers. Pure data.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from sparkplane.spec import podshape
from sparkplane.spec.tolerations import ApplicationTolerations, DeploymentMode, SpecModel

PYTHON_RUNNER = "org.apache.spark.deploy.PythonRunner"
R_RUNNER = "org.apache.spark.deploy.RRunner"

VolumeType = Literal["hostPath", "persistentVolumeClaim", "emptyDir", "nfs"]


def _java_string(value: object) -> object:
    """sparkConf values are strings on the wire; YAML booleans become Java's true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class RuntimeVersions(SpecModel):
    """``runtimeVersions``; the operator requires sparkVersion, native mode may infer it."""

    spark_version: str
    scala_version: str | None = None
    jdk_version: str | None = None


class PodTemplateHolder(SpecModel):
    """``driverSpec`` / ``executorSpec``: a raw Kubernetes PodTemplateSpec (metadata + spec)."""

    pod_template_spec: dict[str, Any] | None = None

    @field_validator("pod_template_spec")
    @classmethod
    def _pod_template_shape(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return podshape.check(podshape.PodTemplate, value)  # type: ignore[no-any-return]


class DriverServiceIngress(SpecModel):
    """One entry of ``driverServiceIngressList``: an extra Service and Ingress for the driver."""

    service_metadata: dict[str, Any]
    service_spec: dict[str, Any]
    ingress_metadata: dict[str, Any]
    ingress_spec: dict[str, Any] | None = None


class ConfigMapSpec(SpecModel):
    """One entry of ``configMapSpecs``: a ConfigMap created before the driver."""

    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    data: dict[str, str] = Field(default_factory=dict)


class RoleSpec(SpecModel):
    """Native per-role settings (``driver`` / ``executor``); each maps to a Spark conf key."""

    cores: int | None = None
    core_request: str | None = None
    core_limit: str | None = None
    memory: str | None = None
    memory_overhead: str | None = None
    service_account: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    priority_class_name: str | None = None


class ExecutorRoleSpec(RoleSpec):
    """Executor settings: the role settings plus the executor count."""

    instances: int | None = None


class SecretsSpec(SpecModel):
    """Secrets for both roles: ``mounts`` secret → path, ``env`` ENV → "secret:key"."""

    mounts: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class VolumeSpec(SpecModel):
    """A volume for both roles, as Spark's ``spark.kubernetes.*.volumes.<type>.<name>.*``."""

    name: str
    type: VolumeType
    mount_path: str
    read_only: bool = False
    sub_path: str | None = None
    sub_path_expr: str | None = None
    options: dict[str, str] = Field(default_factory=dict)


class UIServiceSpec(SpecModel):
    """The Spark UI Service (separate from the headless driver Service)."""

    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] = "ClusterIP"
    port: int = 4040
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class IngressTLS(SpecModel):
    """One ``spec.tls`` entry of the UI Ingress."""

    hosts: list[str] = Field(default_factory=list)
    secret_name: str | None = None


class UIIngressSpec(SpecModel):
    """The Spark UI Ingress; it routes to the UI Service."""

    host: str | None = None
    class_name: str | None = None
    path: str = "/"
    path_type: Literal["Prefix", "Exact", "ImplementationSpecific"] = "Prefix"
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    tls: list[IngressTLS] = Field(default_factory=list)


class SparkUISpec(SpecModel):
    """``sparkUI``: an optional Service and Ingress for the driver's web UI."""

    service: UIServiceSpec | None = None
    ingress: UIIngressSpec | None = None


class SparkApplicationSpec(SpecModel):
    """``SparkApplication.spec``: operator fields first, then native-mode extras."""

    # --- Apache Spark Kubernetes Operator fields (reference §9.2) ---
    main_class: str | None = None
    jars: str | None = None
    py_files: str | None = None
    spark_r_files: str | None = Field(default=None, alias="sparkRFiles")
    files: str | None = None
    spark_conf: dict[str, str] = Field(default_factory=dict)
    driver_args: list[str] = Field(default_factory=list)
    proxy_user: str | None = None
    runtime_versions: RuntimeVersions | None = None
    deployment_mode: DeploymentMode = DeploymentMode.CLUSTER_MODE
    driver_spec: PodTemplateHolder | None = None
    executor_spec: PodTemplateHolder | None = None
    application_tolerations: ApplicationTolerations = Field(default_factory=ApplicationTolerations)
    driver_service_ingress_list: list[DriverServiceIngress] = Field(default_factory=list)
    driver_http_route_list: list[dict[str, Any]] = Field(default_factory=list)
    driver_grpc_route_list: list[dict[str, Any]] = Field(default_factory=list)
    config_map_specs: list[ConfigMapSpec] = Field(default_factory=list)
    #: Apache operator 1.1.0: hold the app (``Suspended``, nothing runs) while true.
    suspend: bool = False

    # --- native-mode extras ---
    image: str | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    image_pull_secrets: list[str] = Field(default_factory=list)
    service_account: str | None = None
    driver: RoleSpec = Field(default_factory=RoleSpec)
    executor: ExecutorRoleSpec = Field(default_factory=ExecutorRoleSpec)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    priority_class_name: str | None = None
    secrets: SecretsSpec = Field(default_factory=SecretsSpec)
    env: dict[str, str] = Field(default_factory=dict)
    volumes: list[VolumeSpec] = Field(default_factory=list)
    spark_ui: SparkUISpec | None = Field(default=None, alias="sparkUI")

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _stringify_conf(cls, value: object) -> object:
        if isinstance(value, dict):
            return {k: _java_string(v) for k, v in value.items()}
        return value


class AppMetadata(SpecModel):
    """The manifest's ``metadata`` (name, namespace, labels, annotations)."""

    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class SparkApp(SpecModel):
    """One Spark application: metadata plus spec; what every loader returns.

    ``metadata.labels`` and ``metadata.annotations`` label the application itself; in
    native mode there is no custom resource, so they are put on every rendered object.
    """

    metadata: AppMetadata
    spec: SparkApplicationSpec = Field(default_factory=SparkApplicationSpec)

    @property
    def name(self) -> str:
        """The application name (``metadata.name``)."""
        return self.metadata.name
