"""Operator-style extra resources: ``configMapSpecs`` and ``driverServiceIngressList``.

``configMapSpecs`` become ConfigMaps created with the driver's other dependents, owned by the
driver pod from the moment they exist (the kubelet waits for a ConfigMap volume that is not
there yet): a submission killed before its driver exists leaves none behind, one killed after
it is completed by a retry or removed by ``gc``, and a name that is taken fails the submission
instead of adopting someone else's ConfigMap. (Apache's operator creates them before the driver;
sparkplane's operator creates every object before the driver, owned by the SparkApplication.)
Each ``driverServiceIngressList`` entry becomes a Service (selector defaults to the driver's
labels) and, with an ``ingressSpec``, an Ingress. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, clone
from sparkplane.spec.models import SparkApp


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When the spec has ``configMapSpecs`` or ``driverServiceIngressList`` entries."""
    return bool(app.spec.config_map_specs or app.spec.driver_service_ingress_list)


class ExtraResourcesStep:
    """Render the operator's extra ConfigMaps, Services and Ingresses natively."""

    name = "extra-resources"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        spec = conf.app.spec
        post: list[Obj] = []
        for cm in spec.config_map_specs:
            meta: Obj = {"name": cm.name, "labels": dict(cm.labels)}
            if cm.annotations:
                meta["annotations"] = dict(cm.annotations)
            post.append(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(cm.data)}
            )
        for entry in spec.driver_service_ingress_list:
            svc_spec = clone(entry.service_spec)
            svc_spec.setdefault("selector", conf.driver_labels())
            post.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": clone(entry.service_metadata),
                    "spec": svc_spec,
                }
            )
            if entry.ingress_spec is not None:
                post.append(
                    {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "Ingress",
                        "metadata": clone(entry.ingress_metadata),
                        "spec": clone(entry.ingress_spec),
                    }
                )
        return state.evolve(resources=post)
