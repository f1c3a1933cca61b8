"""Spark UI step: an optional UI Service and Ingress (``spec.sparkUI``), as in the seed article.

The Service ``<prefix>-ui-svc`` selects the driver pod and forwards to its ``spark-ui`` port;
the Ingress ``<prefix>-ui-ingress`` routes ``host``/``path`` to that Service. An Ingress
implies the Service. Spark itself creates neither (the headless driver Service also exposes
the UI port inside the cluster). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj
from sparkplane.spec.models import SparkApp, UIServiceSpec


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When ``spec.sparkUI`` asks for a Service or an Ingress."""
    ui = app.spec.spark_ui
    return ui is not None and (ui.service is not None or ui.ingress is not None)


def ui_objects(conf: DriverConf) -> list[Obj]:
    """The UI Service and, if asked for, the Ingress (for an app :func:`applies` to)."""
    ui = conf.app.spec.spark_ui
    assert ui is not None, "the spark-ui step applies only with spec.sparkUI"
    svc_spec = ui.service or UIServiceSpec()
    svc_name = conf.ids.ui_service_name
    ui_port = int(conf.get("spark.ui.port") or 4040)
    svc_meta: Obj = {"name": svc_name, "labels": dict(svc_spec.labels)}
    if svc_spec.annotations:
        svc_meta["annotations"] = dict(svc_spec.annotations)
    service: Obj = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": svc_meta,
        "spec": {
            "type": svc_spec.type,
            "selector": conf.driver_labels(),
            "ports": [
                {
                    "name": "spark-ui",
                    "port": svc_spec.port,
                    "targetPort": ui_port,
                    "protocol": "TCP",
                }
            ],
        },
    }
    out = [service]
    ing = ui.ingress
    if ing is not None:
        path = {
            "path": ing.path,
            "pathType": ing.path_type,
            "backend": {"service": {"name": svc_name, "port": {"number": svc_spec.port}}},
        }
        rule: Obj = {"http": {"paths": [path]}}
        if ing.host:
            rule["host"] = ing.host
        spec: Obj = {"rules": [rule]}
        if ing.class_name:
            spec["ingressClassName"] = ing.class_name
        if ing.tls:
            spec["tls"] = [t.model_dump(by_alias=True, exclude_none=True) for t in ing.tls]
        meta: Obj = {"name": f"{conf.ids.resource_prefix}-ui-ingress", "labels": dict(ing.labels)}
        if ing.annotations:
            meta["annotations"] = dict(ing.annotations)
        out.append(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": meta,
                "spec": spec,
            }
        )
    return out


class SparkUIStep:
    """Expose the Spark UI outside the headless Service."""

    name = "spark-ui"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        return state.evolve(resources=ui_objects(conf))
