"""Helpers for the operator's integration tests: CR builders, waits, a running operator."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparkplane.devcluster.simulator import DriverSimulator
from sparkplane.kube import Kube
from sparkplane.operator.naming import DEFAULT_OPERATOR_NAME, OPERATOR_NAME_LABEL
from sparkplane.operator.runner import Operator
from sparkplane.operator.settings import OperatorSettings, ReconcileSettings
from sparkplane.operator.states import history_states
from tests.integration.helpers import wait_for

API = "spark.apache.org/v1"
SIM = "spark.kubernetes.driver.annotation.sim.sparkplane.io"


def spark_app(
    name: str,
    *,
    tolerations: dict[str, Any] | None = None,
    conf: dict[str, str] | None = None,
    sim: dict[str, str] | None = None,
    executors: int = 0,
) -> dict[str, Any]:
    """A small SparkApplication; ``sim`` are ``sim.sparkplane.io/*`` driver annotations."""
    spark_conf = {
        "spark.kubernetes.container.image": "apache/spark:4.0.0",
        "spark.executor.instances": str(executors),
        "spark.kubernetes.driver.request.cores": "10m",
        "spark.kubernetes.executor.request.cores": "10m",
        "spark.driver.memory": "128m",
        "spark.executor.memory": "128m",
        **{f"{SIM}/{k}": v for k, v in (sim or {}).items()},
        **(conf or {}),
    }
    return {
        "apiVersion": API,
        "kind": "SparkApplication",
        "metadata": {"name": name},
        "spec": {
            "mainClass": "org.apache.spark.examples.SparkPi",
            "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "sparkConf": spark_conf,
            "applicationTolerations": tolerations or {},
        },
    }


def state_of(kube: Kube, namespace: str, name: str) -> str | None:
    cr = kube.get_or_none(API, "SparkApplication", name, namespace)
    return (((cr or {}).get("status") or {}).get("currentState") or {}).get("currentStateSummary")


def wait_state(
    kube: Kube, namespace: str, name: str, *states: str, timeout: float = 30
) -> dict[str, Any]:
    """Wait until the app's current state is one of ``states``; return the CR."""

    def check() -> dict[str, Any] | None:
        cr = kube.get_or_none(API, "SparkApplication", name, namespace)
        current = (((cr or {}).get("status") or {}).get("currentState") or {}).get(
            "currentStateSummary"
        )
        return cr if current in states else None

    found: dict[str, Any] = wait_for(
        check, timeout=timeout, what=f"{namespace}/{name} in {states}", interval=0.2
    )
    return found


def history(cr: dict[str, Any]) -> list[str]:
    return history_states(cr.get("status") or {})


def pods(kube: Kube, namespace: str, selector: str) -> list[dict[str, Any]]:
    return kube.list("v1", "Pod", namespace, label_selector=selector)


@contextmanager
def running_operator(
    kube: Kube,
    namespace: str,
    *,
    simulate: bool = True,
    missing_driver_grace: float | None = None,
    **settings: Any,
) -> Iterator[Operator]:
    """An operator (and the driver simulator) watching only ``namespace``."""
    options: dict[str, Any] = {"namespaces": (namespace,), "leader_election": False, "workers": 4}
    options.update(settings)
    if missing_driver_grace is not None:
        options["reconcile"] = ReconcileSettings(missing_driver_grace_seconds=missing_driver_grace)
    operator = Operator(kube, OperatorSettings(**options)).start()
    sim = DriverSimulator(kube, namespace).start() if simulate else None
    try:
        yield operator
    finally:
        operator.stop()
        if sim is not None:
            sim.stop()


def leftover(kind: str, cr: dict[str, Any]) -> dict[str, Any]:
    """An object of an attempt that is over, as a crash between commit and delete leaves it."""
    meta = cr["metadata"]
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": f"{meta['name']}-left-{kind.lower()}",
            "labels": {OPERATOR_NAME_LABEL: DEFAULT_OPERATOR_NAME, "spark-app-selector": "old"},
            "ownerReferences": [
                {
                    "apiVersion": API,
                    "kind": "SparkApplication",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
    }
    if kind == "Service":
        body["spec"] = {"clusterIP": "None", "ports": [{"port": 7078}]}
    else:
        body["data"] = {"k": "v"}
    return body
