"""Helpers for the operator's integration tests: CR builders, waits, a running operator.

The operator of every test runs as its own service account with the RBAC the project ships
(``sparkplane rbac operator``: the rules of deploy/), never as admin (:func:`operator_identity`),
and a test fails on any ``forbidden`` in the operator's log (:func:`no_forbidden`): a rule the
shipped role lacks must show up here, not in production.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from sparkplane.kube import Kube, connect
from sparkplane.operator.core.decision import Notice, Transition
from sparkplane.operator.core.naming import DEFAULT_OPERATOR_NAME, OPERATOR_NAME_LABEL
from sparkplane.operator.core.settings import Limits, OperatorSettings, ReconcileSettings
from sparkplane.operator.core.states import AppStateSummary, history_states
from sparkplane.operator.runtime.runner import Key, Operator
from sparkplane.security.rbac import render as render_rbac
from sparkplane.security.rules import Identity
from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private
from sparkplane_devcluster.simulator import DriverSimulator
from tests.integration.helpers import wait_for

OPERATOR_ACCOUNT = "sparkplane-operator"
#: the integration tests' bounds: short schedules and backoffs are what they exercise
TEST_LIMITS = Limits(min_schedule_seconds=1, min_restart_backoff_millis=0)

API = "spark.apache.org/v1"
REQUESTED = AppStateSummary.DRIVER_REQUESTED.value
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


def operator_kubeconfig(kube: Kube, namespace: str, target: Path) -> Path:
    """Apply the shipped operator RBAC for ``namespace`` (``sparkplane rbac operator -n NS``:
    its ServiceAccount, Role and RoleBinding there, its Lease Role) with ``kube`` (admin), and
    write a kubeconfig acting as that service account (a bound token) to ``target``."""
    for obj in render_rbac(Identity.OPERATOR, namespace):
        kube.apply(obj.body)
    minted = mint_kubeconfig(kube, OPERATOR_ACCOUNT, namespace)
    return write_private(target, minted.text())


@contextmanager
def operator_identity(kube: Kube, namespace: str) -> Iterator[Kube]:
    """A client acting as the operator's service account with its shipped RBAC in ``namespace``."""
    with tempfile.TemporaryDirectory(prefix="sp-operator-") as tmp:
        path = operator_kubeconfig(kube, namespace, Path(tmp) / "operator.kubeconfig")
        client = Kube(connect(kubeconfig=path))
    try:
        yield client
    finally:
        client.close()
        for obj in render_rbac(Identity.OPERATOR, namespace):  # cluster-scoped: not the ns's
            if obj.body["kind"] == "ClusterRoleBinding":
                kube.delete(obj.body["apiVersion"], obj.body["kind"], obj.body["metadata"]["name"])


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@contextmanager
def no_forbidden() -> Iterator[list[str]]:
    """Collect the operator's log (every level); fail if any line says ``forbidden``."""
    handler = _Collect()
    logger = logging.getLogger("sparkplane")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    refused = [line for line in handler.lines if "forbidden" in line.lower()]
    assert not refused, "the operator's shipped RBAC was refused:\n" + "\n".join(refused[:10])


@contextmanager
def running_operator(
    kube: Kube,
    namespace: str,
    *,
    simulate: bool = True,
    missing_driver_grace: float | None = None,
    operator_kube: Kube | None = None,
    limits: Limits = TEST_LIMITS,
    **settings: Any,
) -> Iterator[Operator]:
    """An operator (and the driver simulator) watching only ``namespace``.

    The operator acts as its service account with the shipped RBAC (``operator_kube``, or one
    made by :func:`operator_identity`), never as ``kube`` (admin: the simulator's, which plays
    the Spark drivers); any ``forbidden`` in its log fails the test.
    """
    options: dict[str, Any] = {"namespaces": (namespace,), "leader_election": False, "workers": 4}
    options.update(settings)
    grace = (
        {}
        if missing_driver_grace is None
        else {"missing_driver_grace_seconds": missing_driver_grace}
    )
    options["reconcile"] = ReconcileSettings(limits=limits, **grace)
    with ExitStack() as stack:
        acting = operator_kube or stack.enter_context(operator_identity(kube, namespace))
        stack.enter_context(no_forbidden())
        operator = Operator(acting, OperatorSettings(**options)).start()
        sim = DriverSimulator(kube, namespace).start() if simulate else None
        try:
            yield operator
        finally:
            operator.events.flush()
            operator.stop()
            if sim is not None:
                sim.stop()


class Crash(Exception):
    """Stands for the process dying in the middle of a reconcile."""


class CrashingOperator(Operator):
    """An :class:`Operator` that dies (raises :class:`Crash`) at ``point`` of the reconcile that
    requests a driver: ``after_commit`` (the DriverRequested status is written, nothing created
    yet) or ``after_actions`` (the driver's objects created, the transitions not yet published).

    The loop reaches the process only through its host (``remember`` right after each status
    commit, ``publish`` after the actions), so the crash is injected there, from the test side;
    the worker logs the error and, with a long ``base_retry_seconds``, does not try again;
    every later reconcile dies at once.
    """

    POINTS = ("after_commit", "after_actions")

    def __init__(self, kube: Kube, settings: OperatorSettings, point: str) -> None:
        assert point in self.POINTS, point
        super().__init__(kube, settings)
        self.point = point
        self.crashed = threading.Event()

    def reconcile(self, key: Key) -> float | None:
        """Dead after the crash: a reconcile a watch event queues before :meth:`stop` (the
        driver pod's creation does, on a loaded machine) does nothing, as in a killed process."""
        if self.crashed.is_set():
            raise Crash(f"killed {self.point}")
        return super().reconcile(key)

    def remember(self, key: Key, written: dict[str, Any]) -> None:
        super().remember(key, written)
        state = ((written.get("status") or {}).get("currentState") or {}).get("currentStateSummary")
        if self.point == "after_commit" and state == REQUESTED:
            self._die()

    def publish(
        self,
        written: dict[str, Any],
        transitions: Iterable[Transition],
        notices: Iterable[Notice] = (),
    ) -> None:
        transitions = tuple(transitions)
        if self.point == "after_actions" and any(t.dst == REQUESTED for t in transitions):
            self._die()
        super().publish(written, transitions, notices)

    def _die(self) -> None:
        self.crashed.set()
        raise Crash(f"killed {self.point}")


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
