"""The same application as a Kubeflow ``sparkoperator.k8s.io/v1beta2`` SparkApplication.

What ``sparkplane submit --mode kubeflow`` (and ``SparkPlane.submit(mode="kubeflow")``) creates
for the Kubeflow Spark operator, from the same spec or spark-submit flags as a native submit:
``type``/``mode``/``sparkVersion``/``mainApplicationFile``/``mainClass``/``arguments`` from the
main resource, ``image`` and pull settings, the service account,
labels, annotations, env and node selector on ``driver``/``executor``, cores/memory/instances
from the mapped conf, and every other setting as ``sparkConf`` (the operator passes it to its
spark-submit). Pod templates go to ``driver/executor.template`` (Kubeflow 2.1+), ``sparkUI`` to
``sparkUIOptions``; typed volumes are native-only and refused with a reason.
Called by :mod:`sparkplane.usecases.submit`. Pure.
"""

from __future__ import annotations

from typing import Any

from sparkplane.errors import Problem, ValidationError
from sparkplane.render.conf import UNKNOWN_VERSION, _spark_version
from sparkplane.spec.conf import K8S, main_resource, mapped_conf, with_spark_version
from sparkplane.spec.models import SparkApp
from sparkplane.vocab import EXECUTOR_ROLE, KUBEFLOW_API_VERSION

API_VERSION = KUBEFLOW_API_VERSION
_TYPES = {"java": "Scala", "python": "Python", "r": "R"}


def _role(conf: dict[str, str], role: str, app: SparkApp) -> dict[str, Any]:
    spec = app.spec
    out: dict[str, Any] = {}
    cores = conf.get(f"spark.{role}.cores")
    if cores and cores.isdigit():
        out["cores"] = int(cores)
    if conf.get(f"spark.{role}.memory"):
        out["memory"] = conf[f"spark.{role}.memory"]
    if role == EXECUTOR_ROLE and (n := conf.get("spark.executor.instances", "")).isdigit():
        out["instances"] = int(n)
    if spec.service_account:
        out["serviceAccount"] = spec.service_account
    for key, values in (
        ("labels", {**app.metadata.labels, **spec.labels}),
        ("annotations", dict(spec.annotations)),
        ("nodeSelector", dict(spec.node_selector)),
    ):
        if values:
            out[key] = values
    if spec.env:
        out["env"] = [{"name": k, "value": v} for k, v in sorted(spec.env.items())]
    if spec.priority_class_name:
        out["priorityClassName"] = spec.priority_class_name
    if spec.tolerations:
        out["tolerations"] = list(spec.tolerations)
    if spec.affinity:
        out["affinity"] = dict(spec.affinity)
    return out


def _ui_options(app: SparkApp) -> dict[str, Any]:
    """``sparkUI`` as Kubeflow's ``sparkUIOptions`` (its operator makes the Service/Ingress)."""
    ui = app.spec.spark_ui
    out: dict[str, Any] = {}
    if ui is None:
        return out
    if ui.service is not None:
        out["servicePort"] = ui.service.port
        out["serviceType"] = ui.service.type
        if ui.service.labels:
            out["serviceLabels"] = dict(ui.service.labels)
        if ui.service.annotations:
            out["serviceAnnotations"] = dict(ui.service.annotations)
    if ui.ingress is not None:
        if ui.ingress.annotations:
            out["ingressAnnotations"] = dict(ui.ingress.annotations)
        if ui.ingress.tls:
            out["ingressTLS"] = [
                t.model_dump(by_alias=True, exclude_none=True) for t in ui.ingress.tls
            ]
    return out


def render_kubeflow_cr(app: SparkApp) -> dict[str, Any]:
    """``app`` as a Kubeflow SparkApplication (ValidationError if it cannot be expressed)."""
    spec = app.spec
    version = _spark_version(app)
    main = main_resource(app)
    problems = []
    if version is None:
        problems.append(UNKNOWN_VERSION)
    if main is None or main.resource is None:
        problems.append(
            Problem("spec", "Kubeflow needs a main application file (a jar, .py or .R)")
        )
    for field, value in (("spec.volumes", spec.volumes),):
        if value:
            problems.append(
                Problem(
                    field, "not expressible in sparkoperator.k8s.io/v1beta2", "use --mode native"
                )
            )
    if problems or version is None or main is None or main.resource is None:
        raise ValidationError(problems, subject=f"Kubeflow SparkApplication {app.name!r}")
    conf = with_spark_version(mapped_conf(app), version)  # Kubeflow does not replace it
    conf.pop(f"{K8S}.namespace", None)
    image = conf.pop(f"{K8S}.container.image", None)  # spec.image or sparkConf's
    body: dict[str, Any] = {
        "type": _TYPES.get(str(main.type), "Scala"),
        "mode": "cluster",
        "sparkVersion": version,
        "mainApplicationFile": main.resource,
        "arguments": list(spec.driver_args),
        "restartPolicy": {"type": "Never"},
    }
    if main.type == "java":
        body["mainClass"] = main.main_class
    if image:
        body["image"] = image
    if spec.image_pull_policy:
        body["imagePullPolicy"] = spec.image_pull_policy
    if spec.image_pull_secrets:
        body["imagePullSecrets"] = list(spec.image_pull_secrets)
    if spec.proxy_user:
        body["proxyUser"] = spec.proxy_user
    body["sparkConf"] = conf
    body["driver"] = _role(conf, "driver", app)
    body["executor"] = _role(conf, "executor", app)
    for role, holder in (("driver", spec.driver_spec), ("executor", spec.executor_spec)):
        if holder and holder.pod_template_spec:  # Kubeflow >= 2.1: driver/executor.template
            body[role]["template"] = dict(holder.pod_template_spec)
    if spec.spark_ui is not None:
        body["sparkUIOptions"] = _ui_options(app)
    meta: dict[str, Any] = {"name": app.metadata.name}
    if app.metadata.namespace:
        meta["namespace"] = app.metadata.namespace
    if app.metadata.labels:
        meta["labels"] = dict(app.metadata.labels)
    if app.metadata.annotations:
        meta["annotations"] = dict(app.metadata.annotations)
    return {"apiVersion": API_VERSION, "kind": "SparkApplication", "metadata": meta, "spec": body}
