"""Headless driver Service step (Spark's ``DriverServiceFeatureStep``, reference §3.7).

Adds the ``<prefix>-driver-svc`` Service (clusterIP None, selector = the driver's labels,
RPC/block manager/UI ports, and from Spark 4.1 Spark Connect's, ``appProtocol: grpc`` from 4.2)
through which executors reach the driver, and sets
``spark.driver.host``, ``spark.driver.port`` and ``spark.driver.blockManager.port``. Pure.

Deviations: the Service also carries sparkplane's labels on every object (``spark-role``,
``spark-app-name``, ``app-name``); Spark puts only ``spark-app-selector`` on it. And when the
driver container has a readiness probe (from its pod template: Kubeflow's SparkConnect server
probes its gRPC port), the Service publishes not-ready addresses: a headless Service's DNS name
resolves only to Ready pods otherwise, and Spark's executors must reach the driver through it
before the probe can pass (the Connect server opens its port after its SparkContext has waited
for them), so they fail to resolve it and the server gives up after three (Spark's
``EXCEED_MAX_EXECUTOR_FAILURES``, exit code 11). Kubeflow's own SparkConnect avoids the name
altogether (``spark.driver.host`` is the pod's IP).
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf, at_least
from sparkplane.render.state import DriverState, Obj
from sparkplane.render.steps.basic_driver import CONNECT_PORT_NAME, driver_ports
from sparkplane.spec.conf import K8S, split_list
from sparkplane.vocab import APP_SELECTOR_LABEL


def driver_service(conf: DriverConf, *, probed: bool = False) -> Obj:
    """The headless Service object for the driver (``probed``: the driver container has a
    readiness probe, so the Service publishes the driver's address before it is Ready)."""
    meta: Obj = {
        "name": conf.ids.driver_service_name,
        "labels": {
            APP_SELECTOR_LABEL: conf.ids.app_id,
            **conf.prefixed(f"{K8S}.driver.service.label."),
        },
    }
    annotations = conf.prefixed(f"{K8S}.driver.service.annotation.")
    if annotations:
        meta["annotations"] = annotations
    spec: Obj = {
        "clusterIP": "None",
        "ipFamilies": split_list(conf.get(f"{K8S}.driver.service.ipFamilies") or "IPv4"),
        "ipFamilyPolicy": conf.get(f"{K8S}.driver.service.ipFamilyPolicy") or "SingleStack",
        "ports": [_port(name, port, conf) for name, port in driver_ports(conf)],
        "selector": conf.driver_labels(),
    }
    if probed:
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def _port(name: str, port: int, conf: DriverConf) -> Obj:
    out: Obj = {"name": name, "port": port, "targetPort": port}
    if name == CONNECT_PORT_NAME and at_least(conf.spark_version, (4, 2)):
        out["appProtocol"] = "grpc"  # Spark 4.2+ marks the Spark Connect port
    return out


class DriverServiceStep:
    """Expose the driver to its executors."""

    name = "driver-service"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        service = driver_service(conf, probed="readinessProbe" in state.container)
        ports = {p["name"]: str(p["port"]) for p in service["spec"]["ports"]}
        return state.evolve(
            resources=[service],
            properties={
                "spark.driver.host": f"{conf.ids.driver_service_name}.{conf.namespace}.svc",
                "spark.driver.port": ports["driver-rpc-port"],
                "spark.driver.blockManager.port": ports["blockmanager"],
            },
        )
