"""Headless driver Service step (Spark's ``DriverServiceFeatureStep``, reference §3.7).

Adds the ``<prefix>-driver-svc`` Service (clusterIP None, selector = the driver's labels,
RPC/block manager/UI ports, and from Spark 4.1 Spark Connect's, ``appProtocol: grpc`` from 4.2)
through which executors reach the driver, and sets
``spark.driver.host``, ``spark.driver.port`` and ``spark.driver.blockManager.port``. Pure.

Deviation: the Service also carries sparkplane's labels on every object (``spark-role``,
``spark-app-name``, ``app-name``); Spark puts only ``spark-app-selector`` on it.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf, at_least
from sparkplane.render.state import DriverState, Obj
from sparkplane.render.steps.basic_driver import CONNECT_PORT_NAME, driver_ports
from sparkplane.spec.conf import K8S, split_list
from sparkplane.vocab import APP_SELECTOR_LABEL


def driver_service(conf: DriverConf) -> Obj:
    """The headless Service object for the driver."""
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
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "clusterIP": "None",
            "ipFamilies": split_list(conf.get(f"{K8S}.driver.service.ipFamilies") or "IPv4"),
            "ipFamilyPolicy": conf.get(f"{K8S}.driver.service.ipFamilyPolicy") or "SingleStack",
            "ports": [_port(name, port, conf) for name, port in driver_ports(conf)],
            "selector": conf.driver_labels(),
        },
    }


def _port(name: str, port: int, conf: DriverConf) -> Obj:
    out: Obj = {"name": name, "port": port, "targetPort": port}
    if name == CONNECT_PORT_NAME and at_least(conf.spark_version, (4, 2)):
        out["appProtocol"] = "grpc"  # Spark 4.2+ marks the Spark Connect port
    return out


class DriverServiceStep:
    """Expose the driver to its executors."""

    name = "driver-service"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        service = driver_service(conf)
        ports = {p["name"]: str(p["port"]) for p in service["spec"]["ports"]}
        return state.evolve(
            resources=[service],
            properties={
                "spark.driver.host": f"{conf.ids.driver_service_name}.{conf.namespace}.svc",
                "spark.driver.port": ports["driver-rpc-port"],
                "spark.driver.blockManager.port": ports["blockmanager"],
            },
        )
