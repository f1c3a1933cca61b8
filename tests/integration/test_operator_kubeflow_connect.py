"""Kubeflow's v1alpha1 SparkConnect through sparkplane's operator on the KWOK dev cluster.

A tenant (a service account holding sparkplane's ``client`` role only) creates a SparkConnect
shaped as the Kubeflow SDK's ``SparkClient.connect()`` makes it; the operator acts as its
service account with the shipped RBAC (no ``forbidden`` in its log); the driver simulator
plays the server's Spark driver (it starts the executor the spec asks for). Checked: the
server's objects (pod ``<name>-server`` running Spark's Connect server, Service
``<name>-server`` with the gRPC port 15002, ConfigMap, executor), all controlled by the
SparkConnect; Kubeflow's status (``NotReady`` then ``Ready``, the ``ServerPodReady``
condition, ``server`` {podName, podIp, serviceName}, ``executors`` by phase); and deleting the
SparkConnect removes every one of them. The real-node twin (real Spark, the real Kubeflow SDK)
is in tests/realnode/test_kubeflow_clients.py.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane import SparkPlane
from sparkplane.kube import Kube, connect
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.spec.connect import CONNECT_CLASS, CONNECT_PORT
from sparkplane.spec.kubeflow_connect import CONNECT_NAME_LABEL
from sparkplane.vocab import KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator

NAME = "conn"
TENANT = "tenant"


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[Operator]:
    install_crds(kube)
    with running_operator(kube, namespace) as op:
        yield op


@pytest.fixture
def tenant(kube: Kube, kubeconfig: Path, namespace: str) -> Iterator[Kube]:
    """A gateway acting as service account ``tenant`` with sparkplane's client role only."""
    with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as sp:
        sp.rbac("client", namespace, service_account=TENANT, apply=True)
        minted = sp.kubeconfig(TENANT, namespace)
    with tempfile.TemporaryDirectory(prefix="sp-tenant-") as tmp:
        path = Path(tmp) / "tenant.kubeconfig"
        path.write_text(minted.text())
        client = Kube(connect(kubeconfig=path))
    try:
        yield client
    finally:
        client.close()
        binding = f"sparkplane:client:cluster:{namespace}:{TENANT}"
        kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding)


def _connect() -> dict[str, Any]:
    """The SparkConnect the Kubeflow SDK's ``connect()`` creates (its fields; small sizes)."""
    return {
        "apiVersion": KUBEFLOW_CONNECT_API_VERSION,
        "kind": SPARK_CONNECT,
        "metadata": {"name": NAME},
        "spec": {
            "sparkVersion": "4.0.1",
            "image": "apache/spark:4.0.1",
            "sparkConf": {
                "spark.connect.grpc.binding.address": "0.0.0.0",
                "spark.kubernetes.driver.request.cores": "10m",
                "spark.kubernetes.executor.request.cores": "10m",
            },
            "server": {"cores": 1, "memory": "512m"},
            "executor": {"instances": 1, "cores": 1, "memory": "512m"},
        },
    }


def _status(kube: Kube, namespace: str) -> dict[str, Any]:
    cr = kube.get_or_none(KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT, NAME, namespace)
    return dict((cr or {}).get("status") or {})


def _states(kube: Kube, namespace: str, version: str, until: str, timeout: float) -> list[str]:
    """Every ``status.state`` the SparkConnect had until ``until``: a watch from its
    creation's resourceVersion sees each status write, however short (polling could miss
    one, and a read after the create could already be past the first)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while until not in seen and time.monotonic() < deadline:
        for event in kube.watch(
            KUBEFLOW_CONNECT_API_VERSION,
            SPARK_CONNECT,
            namespace,
            resource_version=version,
            field_selector=f"metadata.name={NAME}",
            timeout_seconds=max(1, int(deadline - time.monotonic())),
        ):
            version = event.object["metadata"]["resourceVersion"]
            state = (event.object.get("status") or {}).get("state")
            if state and (not seen or seen[-1] != state):
                seen.append(state)
            if state == until:
                break
    assert until in seen, f"{NAME} did not reach {until} in {timeout:.0f} s (seen {seen})"
    return seen


def _owned(kube: Kube, namespace: str) -> set[str]:
    """``Kind/name`` of every pod, Service and ConfigMap the SparkConnect or its server owns."""
    found = set()
    for kind in ("Pod", "Service", "ConfigMap"):
        for obj in kube.list("v1", kind, namespace):
            refs = obj["metadata"].get("ownerReferences") or []
            if any(r["kind"] == SPARK_CONNECT or r["name"] == f"{NAME}-server" for r in refs):
                found.add(f"{kind}/{obj['metadata']['name']}")
    return found


def test_a_tenants_sparkconnect_serves_reports_kubeflows_status_and_is_deleted_whole(
    kube: Kube, namespace: str, operator: Operator, tenant: Kube
) -> None:
    created = tenant.create(_connect(), namespace=namespace)
    uid, version = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    seen = _states(kube, namespace, version, "Ready", timeout=90)
    assert seen[0] == "NotReady" and set(seen) == {"NotReady", "Ready"}, seen

    # the server: Spark's Connect server, controlled by the SparkConnect, Kubeflow's names
    server = kube.get("v1", "Pod", f"{NAME}-server", namespace)
    owner = next(r for r in server["metadata"]["ownerReferences"] if r.get("controller"))
    assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
        KUBEFLOW_CONNECT_API_VERSION,
        SPARK_CONNECT,
        uid,
    )
    assert server["metadata"]["labels"][CONNECT_NAME_LABEL] == NAME
    container = server["spec"]["containers"][0]
    assert CONNECT_CLASS in container["args"]
    assert container["readinessProbe"]["tcpSocket"]["port"] == CONNECT_PORT
    service = kube.get("v1", "Service", f"{NAME}-server", namespace)
    grpc = next(p for p in service["spec"]["ports"] if p["port"] == CONNECT_PORT)
    assert grpc.get("appProtocol") == "grpc"
    assert service["spec"]["selector"][CONNECT_NAME_LABEL] == NAME

    # Kubeflow's status, once the simulated driver's executor runs
    def executors_running() -> dict[str, Any] | None:
        status = _status(kube, namespace)
        return status if status.get("executors") == {"running": 1} else None

    status = wait_for(executors_running, timeout=60, what="status.executors {'running': 1}")
    assert status is not None
    assert status["state"] == "Ready"
    assert status["server"]["podName"] == f"{NAME}-server"
    assert status["server"]["serviceName"] == f"{NAME}-server"
    assert status["server"]["podIp"] == server["status"]["podIP"]
    (condition,) = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "ServerPodReady",
        "True",
        "ServerPodReady",
    )
    assert status["startTime"] and status["lastUpdateTime"]
    executor = kube.list("v1", "Pod", namespace, label_selector="spark-role=executor")
    assert [e["metadata"]["labels"][CONNECT_NAME_LABEL] for e in executor] == [NAME]

    # deleting the SparkConnect (as the tenant) removes the server and all it made
    made = _owned(kube, namespace)
    assert {f"Pod/{NAME}-server", f"Service/{NAME}-server"} <= made, made
    assert any(m.startswith("ConfigMap/") for m in made), made
    tenant.delete(KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT, NAME, namespace)
    wait_for(
        lambda: (
            not _owned(kube, namespace)
            and not kube.list("v1", "Pod", namespace, label_selector=CONNECT_NAME_LABEL)
        ),
        timeout=90,
        what="the garbage collector removing the server's objects and executors",
    )
