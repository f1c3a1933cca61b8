"""Basic driver step (Spark's ``BasicDriverFeatureStep``): name, image, ports, env, resources.

Adds the pod name, labels and annotations; the container name (kept from a template, else
``spark-kubernetes-driver``), image and pull policy; the RPC, block manager and UI ports
(plus Spark Connect from 4.1); ``SPARK_USER``, ``SPARK_APPLICATION_ID``, driverEnv and the
pod-IP bind address; CPU and memory with Spark's overhead formula; restartPolicy Never,
node selector, pull secrets and scheduler; from 4.3, the container's
``securityContext.allowPrivilegeEscalation`` (false unless the conf says true). System
properties: pod name, app id, ``submitInDriver`` and the default overhead factor. Pure.

Deviation: driverEnv entries are sorted by name (Spark emits them in hash order).
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf, at_least
from sparkplane.render.memory import driver_memory, java_double
from sparkplane.render.state import DriverState, Obj, append, clone, env_var, section
from sparkplane.spec.conf import K8S, split_list
from sparkplane.spec.conf_keys import custom_resources
from sparkplane.vocab import DRIVER_CONTAINER

CONNECT_PORT_NAME = "spark-connect"
"""The name of Spark Connect's gRPC port on the driver (Spark 4.1+)."""


def driver_ports(conf: DriverConf) -> list[tuple[str, int]]:
    """(name, port) of the driver's ports, as the container and the Service expose them."""
    block = conf.get("spark.driver.blockManager.port") or conf.get("spark.blockManager.port")
    ports = [
        ("driver-rpc-port", int(conf.get("spark.driver.port") or 7078)),
        ("blockmanager", int(block or 7079)),
        ("spark-ui", int(conf.get("spark.ui.port") or 4040)),
    ]
    if at_least(conf.spark_version, (4, 1)):
        port = int(conf.get("spark.connect.grpc.binding.port") or 15002)
        ports.append((CONNECT_PORT_NAME, port))
    return ports


class BasicDriverStep:
    """Spark's basic driver feature; always first."""

    name = "basic-driver"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        memory = driver_memory(conf.conf, non_jvm=conf.main.type != "java")
        pod = clone(state.pod)
        meta = section(pod, "metadata")
        meta["name"] = conf.driver_pod_name
        section(meta, "labels").update(conf.driver_labels())
        annotations = conf.driver_annotations()
        if annotations:
            section(meta, "annotations").update(annotations)
        spec = section(pod, "spec")
        spec["restartPolicy"] = "Never"
        selector = {
            **conf.prefixed(f"{K8S}.node.selector."),
            **conf.prefixed(f"{K8S}.driver.node.selector."),
        }
        if selector:
            section(spec, "nodeSelector").update(selector)
        pull = split_list(conf.get(f"{K8S}.container.image.pullSecrets"))
        append(spec, "imagePullSecrets", [{"name": s} for s in pull])
        scheduler = conf.get(f"{K8S}.driver.scheduler.name") or conf.get(f"{K8S}.scheduler.name")
        if scheduler:
            spec["schedulerName"] = scheduler
        return state.evolve(
            pod=pod,
            container=self._container(state.container, conf, memory.total_mib),
            properties={
                f"{K8S}.driver.pod.name": conf.driver_pod_name,
                "spark.app.id": conf.ids.app_id,
                f"{K8S}.submitInDriver": "true",
                f"{K8S}.memoryOverheadFactor": java_double(memory.default_factor),
            },
        )

    def _container(self, base: Obj, conf: DriverConf, total_mib: int) -> Obj:
        container = clone(base)
        container.setdefault("name", DRIVER_CONTAINER)
        container["image"] = conf.get(f"{K8S}.driver.container.image") or conf.get(
            f"{K8S}.container.image"
        )
        container["imagePullPolicy"] = (
            conf.get(f"{K8S}.container.image.pullPolicy") or "IfNotPresent"
        )
        append(
            container,
            "ports",
            [
                {"containerPort": port, "name": name, "protocol": "TCP"}
                for name, port in driver_ports(conf)
            ],
        )
        env = [
            env_var("SPARK_USER", conf.app.spec.proxy_user or conf.ctx.spark_user),
            env_var("SPARK_APPLICATION_ID", conf.ids.app_id),
        ]
        env += [env_var(k, v) for k, v in conf.prefixed(f"{K8S}.driverEnv.").items()]
        env.append(
            {
                "name": "SPARK_DRIVER_BIND_ADDRESS",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}},
            }
        )
        append(container, "env", env)
        resources = section(container, "resources")
        requests, limits = section(resources, "requests"), section(resources, "limits")
        requests["cpu"] = (
            conf.get(f"{K8S}.driver.request.cores") or conf.get("spark.driver.cores") or "1"
        )
        limit_cpu = conf.get(f"{K8S}.driver.limit.cores")
        if limit_cpu:
            limits["cpu"] = limit_cpu
        requests["memory"] = limits["memory"] = f"{total_mib}Mi"
        for name, attrs in custom_resources(conf.conf, "driver").items():
            if "amount" in attrs and "vendor" in attrs:
                limits[f"{attrs['vendor']}/{name}"] = attrs["amount"]
        if at_least(conf.spark_version, (4, 3)):
            section(container, "securityContext")["allowPrivilegeEscalation"] = (
                allow_privilege_escalation(conf)
            )
        return container


def allow_privilege_escalation(conf: DriverConf) -> bool:
    """Spark 4.3's ``spark.kubernetes.driver.securityContext.allowPrivilegeEscalation``
    (falling back to ``spark.kubernetes.securityContext.allowPrivilegeEscalation``, default
    false), which its ``BasicDriverFeatureStep`` writes on the driver container."""
    value = conf.get(f"{K8S}.driver.securityContext.allowPrivilegeEscalation") or conf.get(
        f"{K8S}.securityContext.allowPrivilegeEscalation"
    )
    return (value or "false").strip().lower() == "true"
