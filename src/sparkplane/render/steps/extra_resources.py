"""Operator-style extra resources: ``configMapSpecs`` and ``driverServiceIngressList``.

``configMapSpecs`` become ConfigMaps created before the driver (pre-resources), as the
operator does; each ``driverServiceIngressList`` entry becomes a Service (selector defaults to
the driver's labels) and, with an ``ingressSpec``, an Ingress. Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, clone


class ExtraResourcesStep:
    """Render the operator's extra ConfigMaps, Services and Ingresses natively."""

    name = "extra-resources"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        spec = conf.app.spec
        pre: list[Obj] = []
        for cm in spec.config_map_specs:
            meta: Obj = {"name": cm.name, "labels": dict(cm.labels)}
            if cm.annotations:
                meta["annotations"] = dict(cm.annotations)
            pre.append(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(cm.data)}
            )
        post: list[Obj] = []
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
        return state.evolve(pre_resources=pre, resources=post)
