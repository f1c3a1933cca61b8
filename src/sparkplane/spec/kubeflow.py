"""Kubeflow's ``sparkoperator.k8s.io/v1beta2`` SparkApplication spec, read and mapped onto Apache's.

Owns :class:`KubeflowSpec` (the fields of Kubeflow's API reference, camelCase, unknown fields
rejected with a suggestion), :data:`REFUSED` (the fields sparkplane does not honour, each with
the reason a refused application's ``errorMessage`` gives) and :func:`to_apache`, which turns a
v1beta2 resource into the ``spark.apache.org`` SparkApplication the operator's one state machine
runs: ``type``/``mainApplicationFile``/``mainClass`` → ``jars``/``pyFiles``/``sparkRFiles`` +
``mainClass``, ``arguments`` → ``driverArgs``, ``hadoopConf`` → ``spark.hadoop.*``,
``deps`` → ``jars``/``files``/``spark.jars.packages``..., ``dynamicAllocation`` →
``spark.dynamicAllocation.*``,
``restartPolicy`` → ``applicationTolerations.restartConfig``, ``timeToLiveSeconds`` →
``ttlAfterStopMillis`` (resources are retained until then, as Kubeflow keeps its driver pod),
and the pod fields Kubeflow's mutating webhook applies (volumes and mounts, env/envFrom,
security contexts, sidecars, init containers, scheduling fields) rendered straight into each
role's ``podTemplateSpec`` (the first container is Spark's; sidecars follow). Facts: Kubeflow's
``api/v1beta2/sparkapplication_types.go`` (reference §10). Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

import pydantic
from pydantic import Field

from sparkplane.errors import Problem, ValidationError
from sparkplane.spec.manifest import problems_from_pydantic
from sparkplane.spec.tolerations import SpecModel
from sparkplane.vocab import APACHE_API_VERSION, KUBEFLOW_GROUP, SPARK_APPLICATION

Obj = dict[str, Any]
#: The label Kubeflow puts on its drivers and executors (its SDK and Airflow find pods by it).
APP_NAME_LABEL = f"{KUBEFLOW_GROUP}/app-name"
LAUNCHED_LABEL = f"{KUBEFLOW_GROUP}/launched-by-spark-operator"
#: Kubeflow's default retry interval (seconds) when restartPolicy is not Never.
DEFAULT_RETRY_INTERVAL = 5
_CONTAINER = {"driver": "spark-kubernetes-driver", "executor": "spark-kubernetes-executor"}


class NamePath(SpecModel):
    """``configMaps`` entry: a ConfigMap mounted at ``path``."""

    name: str
    path: str


class SecretInfo(SpecModel):
    """``secrets`` entry: a Secret mounted at ``path``."""

    name: str
    path: str
    secret_type: Literal["GCPServiceAccount", "HadoopDelegationToken", "Generic"] = "Generic"


class KubeflowPodSpec(SpecModel):
    """``SparkPodSpec``: what ``driver`` and ``executor`` share."""

    template: dict[str, Any] | None = None
    cores: int | None = Field(default=None, ge=1)
    core_limit: str | None = None
    core_request: str | None = None
    memory: str | None = None
    memory_overhead: str | None = None
    memory_limit: str | None = None
    gpu: dict[str, Any] | None = None
    image: str | None = None
    config_maps: list[NamePath] = Field(default_factory=list)
    secrets: list[SecretInfo] = Field(default_factory=list)
    env: list[dict[str, Any]] = Field(default_factory=list)
    env_vars: dict[str, str] = Field(default_factory=dict)
    env_from: list[dict[str, Any]] = Field(default_factory=list)
    env_secret_key_refs: dict[str, dict[str, str]] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    volume_mounts: list[dict[str, Any]] = Field(default_factory=list)
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    pod_security_context: dict[str, Any] | None = None
    security_context: dict[str, Any] | None = None
    scheduler_name: str | None = None
    sidecars: list[dict[str, Any]] = Field(default_factory=list)
    init_containers: list[dict[str, Any]] = Field(default_factory=list)
    host_network: bool | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    dns_config: dict[str, Any] | None = None
    termination_grace_period_seconds: int | None = None
    service_account: str | None = None
    host_aliases: list[dict[str, Any]] = Field(default_factory=list)
    share_process_namespace: bool | None = None
    java_options: str | None = None
    lifecycle: dict[str, Any] | None = None
    ports: list[dict[str, Any]] = Field(default_factory=list)
    priority_class_name: str | None = None


class KubeflowDriverSpec(KubeflowPodSpec):
    """``driver``: the pod fields plus the driver-only ones."""

    pod_name: str | None = None
    kubernetes_master: str | None = None
    service_annotations: dict[str, str] = Field(default_factory=dict)
    service_labels: dict[str, str] = Field(default_factory=dict)


class KubeflowExecutorSpec(KubeflowPodSpec):
    """``executor``: the pod fields plus the executor count."""

    instances: int | None = Field(default=None, ge=1)
    delete_on_termination: bool | None = None


class KubeflowDeps(SpecModel):
    """``deps``: remote dependencies passed to spark-submit."""

    jars: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    py_files: list[str] = Field(default_factory=list)
    packages: list[str] = Field(default_factory=list)
    exclude_packages: list[str] = Field(default_factory=list)
    repositories: list[str] = Field(default_factory=list)
    archives: list[str] = Field(default_factory=list)


class KubeflowRestartPolicy(SpecModel):
    """``restartPolicy``: Never (default), OnFailure or Always, with retries and intervals."""

    type: Literal["Never", "OnFailure", "Always"] = "Never"
    on_submission_failure_retries: int | None = Field(default=None, ge=0)
    on_failure_retries: int | None = Field(default=None, ge=0)
    on_submission_failure_retry_interval: int | None = Field(default=None, ge=0)
    on_failure_retry_interval: int | None = Field(default=None, ge=0)


class KubeflowDynamicAllocation(SpecModel):
    """``dynamicAllocation`` → ``spark.dynamicAllocation.*``."""

    enabled: bool = False
    initial_executors: int | None = None
    min_executors: int | None = None
    max_executors: int | None = None
    shuffle_tracking_enabled: bool | None = None
    shuffle_tracking_timeout: int | None = None


class KubeflowUIOptions(SpecModel):
    """``sparkUIOptions`` (the Service part is honoured; ingress fields are refused)."""

    service_port: int | None = None
    service_port_name: str | None = None
    service_type: Literal["ClusterIP", "NodePort", "LoadBalancer"] | None = None
    service_annotations: dict[str, str] = Field(default_factory=dict)
    service_labels: dict[str, str] = Field(default_factory=dict)
    ingress_annotations: dict[str, str] = Field(default_factory=dict)
    ingress_tls: list[dict[str, Any]] = Field(default_factory=list, alias="ingressTLS")


class KubeflowSpec(SpecModel):
    """``SparkApplication.spec`` of ``sparkoperator.k8s.io/v1beta2``."""

    type: Literal["Java", "Python", "Scala", "R"] = "Scala"
    spark_version: str
    mode: Literal["cluster", "client", "in-cluster-client"] = "cluster"
    proxy_user: str | None = None
    image: str | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    image_pull_secrets: list[str] = Field(default_factory=list)
    main_class: str | None = None
    main_application_file: str | None = None
    arguments: list[str] = Field(default_factory=list)
    spark_conf: dict[str, str] = Field(default_factory=dict)
    hadoop_conf: dict[str, str] = Field(default_factory=dict)
    spark_config_map: str | None = None
    hadoop_config_map: str | None = None
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    driver: KubeflowDriverSpec
    executor: KubeflowExecutorSpec
    deps: KubeflowDeps = Field(default_factory=KubeflowDeps)
    restart_policy: KubeflowRestartPolicy = Field(default_factory=KubeflowRestartPolicy)
    node_selector: dict[str, str] = Field(default_factory=dict)
    #: Not in Kubeflow's SparkApplicationSpec (its structural CRD prunes it), but Airflow's
    #: SparkKubernetesOperator writes it: labels of both roles' pods (a role's own win).
    labels: dict[str, str] = Field(default_factory=dict)
    failure_retries: int | None = None
    retry_interval: int | None = None
    python_version: str | None = None
    memory_overhead_factor: str | None = None
    monitoring: dict[str, Any] | None = None
    batch_scheduler: str | None = None
    batch_scheduler_options: dict[str, Any] | None = None
    time_to_live_seconds: int | None = Field(default=None, ge=0)
    spark_ui_options: KubeflowUIOptions | None = Field(default=None, alias="sparkUIOptions")
    driver_ingress_options: list[dict[str, Any]] = Field(default_factory=list)
    dynamic_allocation: KubeflowDynamicAllocation | None = None
    suspend: bool | None = None
    driver_pod_disruption_budget: bool | None = None


#: Fields sparkplane refuses when set, with the reason (what a refused app's errorMessage says).
REFUSED: dict[str, str] = {
    "spec.mode": "only mode 'cluster' is served (client mode runs spark-submit in the operator)",
    "spec.monitoring": "the Prometheus JMX exporter is not injected by sparkplane's operator; "
    "use Spark's own PrometheusServlet (spark.ui.prometheus.enabled) in sparkConf",
    "spec.batchScheduler": "batch schedulers (volcano, yunikorn) are not integrated; use "
    "driver/executor schedulerName",
    "spec.batchSchedulerOptions": "batch schedulers are not integrated",
    "spec.sparkConfigMap": "mounting a spark-defaults ConfigMap is not supported; put the "
    "settings in sparkConf",
    "spec.hadoopConfigMap": "mounting a Hadoop ConfigMap is not supported; use hadoopConf",
    "spec.pythonVersion": "spark.kubernetes.pyspark.pythonVersion was removed from Spark; the "
    "image's python3 is used",
    "spec.failureRetries": "deprecated; use restartPolicy.onFailureRetries",
    "spec.retryInterval": "deprecated; use restartPolicy.onFailureRetryInterval",
    "spec.driverPodDisruptionBudget": "a driver PodDisruptionBudget is not created",
    "spec.driverIngressOptions": "driver ingresses are not created; use sparkUIOptions' Service",
    "spec.sparkUIOptions.ingressAnnotations": "the UI ingress is not created",
    "spec.sparkUIOptions.ingressTLS": "the UI ingress is not created",
    "spec.driver.kubernetesMaster": "the driver uses the in-cluster API server",
    "spec.driver.serviceAnnotations": "the driver Service's metadata is the operator's",
    "spec.driver.serviceLabels": "the driver Service's metadata is the operator's",
    "spec.driver.gpu": "set the GPU as a resource in driver.template",
    "spec.executor.gpu": "set the GPU as a resource in executor.template",
    "spec.driver.memoryLimit": "set the limit in driver.template's container resources",
    "spec.executor.memoryLimit": "set the limit in executor.template's container resources",
}


def _value(spec: Mapping[str, Any], path: str) -> Any:
    node: Any = spec
    for part in path.split(".")[1:]:
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def refused(raw_spec: Mapping[str, Any]) -> list[Problem]:
    """The refused fields ``raw_spec`` sets (``mode: cluster``, ``suspend: false`` are fine)."""
    out = []
    for path, why in REFUSED.items():
        value = _value(raw_spec, path)
        if value in (None, False, "", [], {}) or (path == "spec.mode" and value == "cluster"):
            continue
        if path == "spec.batchScheduler" and value == "kube-scheduler":
            continue
        out.append(Problem(path, f"not supported by sparkplane's operator: {why}"))
    return out


def parse(cr: Mapping[str, Any]) -> KubeflowSpec:
    """The spec of v1beta2 resource ``cr`` (ValidationError naming every bad field)."""
    raw = cr.get("spec") or {}
    name = (cr.get("metadata") or {}).get("name")
    subject = f"SparkApplication {name!r} (sparkoperator.k8s.io/v1beta2)"
    try:
        spec = KubeflowSpec.model_validate(raw)
    except pydantic.ValidationError as exc:
        found = [
            Problem(f"spec.{p.path}" if p.path else "spec", p.message, p.hint)
            for p in problems_from_pydantic(exc)
        ]
        raise ValidationError([*refused(raw), *found], subject=subject) from exc
    if problems := refused(raw):
        raise ValidationError(problems, subject=subject)
    return spec


def _env(role: KubeflowPodSpec) -> list[Obj]:
    env = [copy.deepcopy(e) for e in role.env]
    env += [{"name": k, "value": v} for k, v in sorted(role.env_vars.items())]
    env += [
        {"name": k, "valueFrom": {"secretKeyRef": {"name": ref["name"], "key": ref["key"]}}}
        for k, ref in sorted(role.env_secret_key_refs.items())
    ]
    for secret in role.secrets:
        if secret.secret_type == "GCPServiceAccount":
            env.append(
                {"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": f"{secret.path}/key.json"}
            )
        elif secret.secret_type == "HadoopDelegationToken":
            env.append(
                {"name": "HADOOP_TOKEN_FILE_LOCATION", "value": f"{secret.path}/hadoop.token"}
            )
    return env


def _volumes(spec: KubeflowSpec, role: KubeflowPodSpec) -> list[Obj]:
    """The app's volumes the role mounts, plus its configMaps and secrets as volumes."""
    mounted = {str(m.get("name")) for m in role.volume_mounts}
    out = [copy.deepcopy(v) for v in spec.volumes if str(v.get("name")) in mounted]
    out += [{"name": f"{c.name}-vol", "configMap": {"name": c.name}} for c in role.config_maps]
    out += [{"name": f"{s.name}-vol", "secret": {"secretName": s.name}} for s in role.secrets]
    return out


def _mounts(role: KubeflowPodSpec) -> list[Obj]:
    out = [copy.deepcopy(m) for m in role.volume_mounts]
    out += [{"name": f"{c.name}-vol", "mountPath": c.path} for c in role.config_maps]
    out += [{"name": f"{s.name}-vol", "mountPath": s.path} for s in role.secrets]
    return out


def pod_template(spec: KubeflowSpec, role_name: str) -> Obj | None:
    """The role's ``podTemplateSpec``: its ``template`` with the webhook's fields applied (None
    when there is nothing to apply)."""
    role: KubeflowPodSpec = spec.driver if role_name == "driver" else spec.executor
    template = copy.deepcopy(role.template or {})
    pod = template.setdefault("spec", {})
    containers = pod.setdefault("containers", [])
    if not containers:
        containers.append({"name": _CONTAINER[role_name]})
    main = containers[0]
    container_fields: dict[str, Any] = {
        "env": _env(role),
        "envFrom": copy.deepcopy(role.env_from),
        "volumeMounts": _mounts(role),
        "ports": copy.deepcopy(role.ports),
    }
    for key, values in container_fields.items():
        if values:
            main[key] = [*main.get(key, []), *values]
    for key, value in (("securityContext", role.security_context), ("lifecycle", role.lifecycle)):
        if value:
            main[key] = copy.deepcopy(value)
    containers.extend(copy.deepcopy(role.sidecars))
    pod_fields: dict[str, Any] = {
        "volumes": _volumes(spec, role),
        "initContainers": copy.deepcopy(role.init_containers),
        "hostAliases": copy.deepcopy(role.host_aliases),
    }
    for key, values in pod_fields.items():
        if values:
            pod[key] = [*pod.get(key, []), *values]
    scalars: dict[str, Any] = {
        "securityContext": role.pod_security_context,
        "schedulerName": role.scheduler_name,
        "hostNetwork": role.host_network,
        "dnsConfig": role.dns_config,
        "terminationGracePeriodSeconds": role.termination_grace_period_seconds,
        "shareProcessNamespace": role.share_process_namespace,
    }
    for key, value in scalars.items():
        if value is not None:
            pod[key] = copy.deepcopy(value)
    bare = template == {"spec": {"containers": [{"name": _CONTAINER[role_name]}]}}
    return None if bare else template


def _role(spec: KubeflowSpec, role_name: str, app_name: str) -> Obj:
    role: KubeflowPodSpec = spec.driver if role_name == "driver" else spec.executor
    out: Obj = {
        "labels": {**spec.labels, **role.labels, APP_NAME_LABEL: app_name, LAUNCHED_LABEL: "true"},
    }
    simple = {
        "cores": role.cores,
        "coreRequest": role.core_request,
        "coreLimit": role.core_limit,
        "memory": role.memory,
        "memoryOverhead": role.memory_overhead,
        "serviceAccount": role.service_account,
        "affinity": role.affinity,
        "priorityClassName": role.priority_class_name,
    }
    out |= {k: copy.deepcopy(v) for k, v in simple.items() if v is not None}
    for key, value in (
        ("annotations", role.annotations),
        ("nodeSelector", {**spec.node_selector, **role.node_selector}),
        ("tolerations", role.tolerations),
    ):
        if value:
            out[key] = copy.deepcopy(value)
    if isinstance(role, KubeflowExecutorSpec) and role.instances is not None:
        out["instances"] = role.instances
    return out


def _conf(spec: KubeflowSpec) -> dict[str, str]:
    conf = {f"spark.hadoop.{k}": v for k, v in spec.hadoop_conf.items()}
    conf |= dict(spec.spark_conf)
    deps = spec.deps
    for key, values in (
        ("spark.jars.packages", deps.packages),
        ("spark.jars.excludes", deps.exclude_packages),
        ("spark.jars.repositories", deps.repositories),
        ("spark.archives", deps.archives),
    ):
        if values:
            conf[key] = ",".join(values)
    for role_name, role in (("driver", spec.driver), ("executor", spec.executor)):
        if role.image:
            conf[f"spark.kubernetes.{role_name}.container.image"] = role.image
        if role.java_options:
            conf[f"spark.{role_name}.extraJavaOptions"] = role.java_options
    if spec.executor.delete_on_termination is not None:
        value = str(spec.executor.delete_on_termination).lower()
        conf["spark.kubernetes.executor.deleteOnTermination"] = value
    if spec.memory_overhead_factor:
        conf["spark.kubernetes.memoryOverheadFactor"] = spec.memory_overhead_factor
    dyn = spec.dynamic_allocation
    if dyn is not None and dyn.enabled:
        conf["spark.dynamicAllocation.enabled"] = "true"
        tracking = True if dyn.shuffle_tracking_enabled is None else dyn.shuffle_tracking_enabled
        conf["spark.dynamicAllocation.shuffleTracking.enabled"] = str(tracking).lower()
        for key, number in (
            ("initialExecutors", dyn.initial_executors),
            ("minExecutors", dyn.min_executors),
            ("maxExecutors", dyn.max_executors),
        ):
            if number is not None:
                conf[f"spark.dynamicAllocation.{key}"] = str(number)
        if dyn.shuffle_tracking_timeout is not None:
            conf["spark.dynamicAllocation.shuffleTracking.timeout"] = (
                f"{dyn.shuffle_tracking_timeout}ms"
            )
    return conf


def tolerations(spec: KubeflowSpec) -> Obj:
    """``applicationTolerations`` for Kubeflow's restart policy and TTL: resources are kept
    after the end (Kubeflow leaves its driver pod) and released with the resource
    ``timeToLiveSeconds`` after it.

    Kubeflow counts application and submission retries apart; Apache's failure cap counts
    failed submissions (scheduling failures) too, so with ``onSubmissionFailureRetries`` set
    application failures are capped only by the sum of both (documented)."""
    policy = spec.restart_policy
    failure_wait = policy.on_failure_retry_interval or DEFAULT_RETRY_INTERVAL
    submit_wait = policy.on_submission_failure_retry_interval or DEFAULT_RETRY_INTERVAL
    failures = policy.on_failure_retries or 0
    submissions = policy.on_submission_failure_retries or 0
    restart: Obj = {"restartPolicy": policy.type}
    if policy.type == "OnFailure":
        restart |= {
            "maxRestartAttempts": failures + submissions,
            "maxRestartOnFailure": None if submissions else failures,
            "maxRestartOnSchedulingFailure": submissions,
        }
    elif policy.type == "Always":  # Kubeflow: no cap of its own; the operator's bound applies
        restart["maxRestartAttempts"] = 1_000_000
    restart |= {
        "restartBackoffMillis": failure_wait * 1000,
        "restartBackoffMillisForFailure": failure_wait * 1000,
        "restartBackoffMillisForSchedulingFailure": submit_wait * 1000,
    }
    ttl = spec.time_to_live_seconds
    return {
        "restartConfig": restart,
        "resourceRetainPolicy": "Always",
        "ttlAfterStopMillis": -1 if ttl is None else ttl * 1000,
    }


def _main(spec: KubeflowSpec) -> Obj:
    main = spec.main_application_file
    deps = spec.deps
    out: Obj = {}
    if spec.type == "Python":
        files = [f for f in (main, *deps.py_files) if f]
        if files:
            out["pyFiles"] = ",".join(files)
    elif spec.type == "R":
        if main:
            out["sparkRFiles"] = main
    else:
        jars = [j for j in (main, *deps.jars) if j]
        if jars:
            out["jars"] = ",".join(jars)
        if spec.main_class:
            out["mainClass"] = spec.main_class
    if spec.type in ("Python", "R") and deps.jars:
        out["jars"] = ",".join(deps.jars)
    if deps.files:
        out["files"] = ",".join(deps.files)
    return out


def to_apache(cr: Mapping[str, Any]) -> Obj:
    """The ``spark.apache.org`` SparkApplication that runs v1beta2 resource ``cr`` (its
    metadata kept, uid included; no status). Raises ValidationError naming the fields."""
    spec = parse(cr)
    meta = copy.deepcopy(dict(cr.get("metadata") or {}))
    name = str(meta.get("name") or "")
    body: Obj = {
        **_main(spec),
        "driverArgs": list(spec.arguments),
        "sparkConf": _conf(spec),
        "runtimeVersions": {"sparkVersion": spec.spark_version},
        "applicationTolerations": tolerations(spec),
        "driver": _role(spec, "driver", name),
        "executor": _role(spec, "executor", name),
    }
    for key, value in (
        ("proxyUser", spec.proxy_user),
        ("image", spec.image),
        ("imagePullPolicy", spec.image_pull_policy),
    ):
        if value:
            body[key] = value
    if spec.image_pull_secrets:
        body["imagePullSecrets"] = list(spec.image_pull_secrets)
    for role_name in ("driver", "executor"):
        template = pod_template(spec, role_name)
        if template is not None:
            body[f"{role_name}Spec"] = {"podTemplateSpec": template}
    if spec.suspend:
        body["suspend"] = True  # the same field on both APIs
    ui = spec.spark_ui_options
    if ui is not None and (ui.service_port or ui.service_type):
        service: Obj = {"port": ui.service_port or 4040, "type": ui.service_type or "ClusterIP"}
        if ui.service_labels:
            service["labels"] = dict(ui.service_labels)
        if ui.service_annotations:
            service["annotations"] = dict(ui.service_annotations)
        body["sparkUI"] = {"service": service}
    return {
        "apiVersion": APACHE_API_VERSION,
        "kind": SPARK_APPLICATION,
        "metadata": meta,
        "spec": body,
    }
