"""The same application as a ``spark.apache.org/v1`` SparkApplication for the operator.

Native-only fields are folded into what the operator understands: typed settings become
``sparkConf`` keys (the same mapping as native rendering), placement and priority class go
into ``driverSpec``/``executorSpec`` pod templates, ``sparkUI`` becomes a
``driverServiceIngressList`` entry, and the Python/R runner is made explicit in ``mainClass``.
``runtimeVersions.sparkVersion`` is required by the CRD; it is inferred from the image tag
when absent. Called by the CLI and the operator mode. Pure.
"""

from __future__ import annotations

from typing import Any

from sparkplane.errors import Problem, ValidationError
from sparkplane.render.conf import UNKNOWN_VERSION, _spark_version
from sparkplane.render.steps.executor_template import role_template
from sparkplane.spec.conf import K8S, main_resource, mapped_conf
from sparkplane.spec.models import SparkApp
from sparkplane.vocab import APACHE_API_VERSION

API_VERSION = APACHE_API_VERSION


def render_operator_cr(app: SparkApp) -> dict[str, Any]:
    """``app`` as a SparkApplication manifest (raises ValidationError if not expressible)."""
    version = _spark_version(app)
    main = main_resource(app)
    problems = []
    if version is None:
        problems.append(UNKNOWN_VERSION)
    if main is None:
        problems.append(Problem("spec", "nothing to run: set mainClass, pyFiles or sparkRFiles"))
    if problems or version is None or main is None:
        raise ValidationError(problems, subject=f"SparkApplication {app.name!r}")
    spec = app.spec
    conf = mapped_conf(app)
    conf.pop(f"{K8S}.namespace", None)  # the operator forces the CR's namespace
    body: dict[str, Any] = {"mainClass": main.main_class}
    for key, value in (
        ("jars", spec.jars),
        ("pyFiles", spec.py_files),
        ("sparkRFiles", spec.spark_r_files),
        ("files", spec.files),
        ("proxyUser", spec.proxy_user),
    ):
        if value:
            body[key] = value
    body["sparkConf"] = conf
    body["driverArgs"] = list(spec.driver_args)
    runtime = (
        spec.runtime_versions.model_dump(by_alias=True, exclude_none=True)
        if spec.runtime_versions
        else {"sparkVersion": version}
    )
    body["runtimeVersions"] = runtime
    body["deploymentMode"] = spec.deployment_mode.value
    for role, key in (("driver", "driverSpec"), ("executor", "executorSpec")):
        template = role_template(app, role)
        if template is not None:
            template.pop("apiVersion", None)
            template.pop("kind", None)
            body[key] = {"podTemplateSpec": template}
    body["applicationTolerations"] = spec.application_tolerations.model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    ingress_list = [
        e.model_dump(by_alias=True, exclude_none=True) for e in spec.driver_service_ingress_list
    ]
    ingress_list += _ui_entries(app)
    if ingress_list:
        body["driverServiceIngressList"] = ingress_list
    for key, items in (
        ("driverHttpRouteList", spec.driver_http_route_list),
        ("driverGrpcRouteList", spec.driver_grpc_route_list),
    ):
        if items:
            body[key] = list(items)
    if spec.config_map_specs:
        body["configMapSpecs"] = [c.model_dump(by_alias=True) for c in spec.config_map_specs]
    if spec.suspend:
        body["suspend"] = True
    meta: dict[str, Any] = {"name": app.metadata.name}
    if app.metadata.namespace:
        meta["namespace"] = app.metadata.namespace
    if app.metadata.labels:
        meta["labels"] = dict(app.metadata.labels)
    if app.metadata.annotations:
        meta["annotations"] = dict(app.metadata.annotations)
    return {"apiVersion": API_VERSION, "kind": "SparkApplication", "metadata": meta, "spec": body}


def _ui_entries(app: SparkApp) -> list[dict[str, Any]]:
    ui = app.spec.spark_ui
    if ui is None or (ui.service is None and ui.ingress is None):
        return []
    name = app.metadata.name
    port = ui.service.port if ui.service else 4040
    svc_type = ui.service.type if ui.service else "ClusterIP"
    target = int(mapped_conf(app).get("spark.ui.port") or 4040)
    svc_meta: dict[str, Any] = {"name": f"{name}-ui-svc"}
    if ui.service and ui.service.labels:
        svc_meta["labels"] = dict(ui.service.labels)
    if ui.service and ui.service.annotations:
        svc_meta["annotations"] = dict(ui.service.annotations)
    entry: dict[str, Any] = {
        "serviceMetadata": svc_meta,
        "serviceSpec": {
            "type": svc_type,
            "ports": [{"name": "spark-ui", "port": port, "targetPort": target, "protocol": "TCP"}],
        },
        "ingressMetadata": {"name": f"{name}-ui-ingress"},
    }
    ing = ui.ingress
    if ing is not None:
        if ing.annotations:
            entry["ingressMetadata"]["annotations"] = dict(ing.annotations)
        rule: dict[str, Any] = {
            "http": {
                "paths": [
                    {
                        "path": ing.path,
                        "pathType": ing.path_type,
                        "backend": {
                            "service": {"name": f"{name}-ui-svc", "port": {"number": port}}
                        },
                    }
                ]
            }
        }
        if ing.host:
            rule["host"] = ing.host
        spec: dict[str, Any] = {"rules": [rule]}
        if ing.class_name:
            spec["ingressClassName"] = ing.class_name
        if ing.tls:
            spec["tls"] = [t.model_dump(by_alias=True, exclude_none=True) for t in ing.tls]
        entry["ingressSpec"] = spec
    return [entry]
