"""Kubeflow's v1alpha1 SparkConnect: the mapping onto Apache's SparkApplication, the CRD, and
the status flow through the real :class:`ConnectAdapter` over the real :class:`AppAdapter`
(its pod index wakes the SparkConnect; the driver fixtures stand for the server pod)."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.operator.core.connect_status import CONDITION, connect_status
from sparkplane.operator.core.decision import CreateResources
from sparkplane.operator.core.driver import build_attempt
from sparkplane.operator.core.kubeflow_status import INTERNAL
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.operator.deploy.crd import kubeflow_connect_crd
from sparkplane.operator.kinds.app_adapter import AppAdapter
from sparkplane.operator.kinds.connect_io import CONNECT, ConnectAdapter
from sparkplane.spec.connect import CONNECT_CLASS, CONNECT_PORT
from sparkplane.spec.kubeflow_connect import CONNECT_NAME_LABEL, to_apache
from sparkplane.vocab import KUBEFLOW_CONNECT_API_VERSION, format_instant

from .opfixtures import UID, at, driver, executor, make_cr


def connect_cr(**spec: Any) -> dict[str, Any]:
    """What the Kubeflow SDK's ``SparkClient.connect()`` creates (its shape, our sizes)."""
    body: dict[str, Any] = {
        "sparkVersion": "4.0.1",
        "image": "apache/spark:4.0.1",
        "sparkConf": {"spark.connect.grpc.binding.address": "0.0.0.0"},
        "server": {
            "cores": 1,
            "memory": "512m",
            "template": {"spec": {"containers": [], "serviceAccountName": "spark"}},
        },
        "executor": {"instances": 1, "cores": 1, "memory": "512m"},
        **spec,
    }
    return {
        "apiVersion": KUBEFLOW_CONNECT_API_VERSION,
        "kind": "SparkConnect",
        "metadata": {"name": "pi", "namespace": "ns1", "uid": UID, "generation": 1},
        "spec": body,
    }


def test_the_server_is_sparks_connect_server_rendered_by_the_driver_steps() -> None:
    apache = to_apache(connect_cr())
    spec = apache["spec"]
    assert spec["mainClass"] == CONNECT_CLASS
    assert spec["jars"] == "local:///opt/spark/jars/spark-connect_2.13-4.0.1.jar"
    assert spec["sparkConf"]["spark.executor.instances"] == "1"
    assert spec["sparkConf"]["spark.connect.grpc.binding.port"] == str(CONNECT_PORT)
    assert spec["driver"]["labels"][CONNECT_NAME_LABEL] == "pi"
    assert spec["executor"]["labels"][CONNECT_NAME_LABEL] == "pi"
    assert "sparkoperator.k8s.io/app-name" not in spec["driver"]["labels"]
    built = build_attempt(apache, "sparkplane")
    names = {(o["kind"], o["metadata"]["name"]) for o in built.objects}
    assert ("Service", "pi-server") in names  # Kubeflow's Service name
    service = next(o for o in built.objects if o["metadata"]["name"] == "pi-server")
    ports = {p["name"]: (p["port"], p.get("appProtocol")) for p in service["spec"]["ports"]}
    assert ports["spark-connect-server"] == (CONNECT_PORT, "grpc")
    assert service["spec"]["selector"] == {CONNECT_NAME_LABEL: "pi", "spark-role": "driver"}
    pod = built.driver_pod
    assert pod["spec"]["serviceAccountName"] == "spark"
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["tcpSocket"]["port"] == CONNECT_PORT
    assert CONNECT_CLASS in container["args"]
    # the probe keeps the pod un-Ready until the server listens; its executors reach it by the
    # driver Service's name before that, so that name resolves to a not-yet-Ready driver too
    (headless,) = [o for o in built.objects if o["metadata"]["name"] == "pi-0-driver-svc"]
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    plain = build_attempt(make_cr(), "sparkplane")  # no probe: exactly as spark-submit makes it
    (svc,) = [o for o in plain.objects if o["kind"] == "Service"]
    assert "publishNotReadyAddresses" not in svc["spec"]


def test_zero_executors_a_user_service_and_a_users_own_probe() -> None:
    probe = {"exec": {"command": ["true"]}}
    template = {
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "readinessProbe": probe}]}
    }
    service = {
        "metadata": {"name": "my-connect", "labels": {"team": "a"}},
        "spec": {"type": "NodePort"},
    }
    cr = connect_cr(executor={"instances": 0})
    cr["spec"]["server"] = {"template": template, "service": service}
    spec = to_apache(cr)["spec"]
    assert spec["sparkConf"]["spark.executor.instances"] == "0"
    entry = spec["driverServiceIngressList"][0]
    assert entry["serviceMetadata"]["name"] == "my-connect"
    assert entry["serviceMetadata"]["labels"] == {"team": "a", CONNECT_NAME_LABEL: "pi"}
    assert entry["serviceSpec"]["type"] == "NodePort" and entry["serviceSpec"]["ports"]
    container = spec["driverSpec"]["podTemplateSpec"]["spec"]["containers"][0]
    assert container["readinessProbe"] == probe


@pytest.mark.parametrize(
    ("field", "value", "path"),
    [
        ("executor", {"instances": -1}, "spec.executor.instances"),
        ("server", {"cores": 0}, "spec.server.cores"),
        ("serverr", {}, "spec.serverr"),
    ],
)
def test_bad_fields_are_named(field: str, value: Any, path: str) -> None:
    with pytest.raises(ValidationError) as err:
        to_apache(connect_cr(**{field: value}))
    assert path in str(err.value)


def test_crd_has_kubeflows_names_columns_and_status() -> None:
    crd = kubeflow_connect_crd()
    assert crd["metadata"]["name"] == "sparkconnects.sparkoperator.k8s.io"
    assert crd["spec"]["names"]["shortNames"] == ["sparkconn"]
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["subresources"] == {"status": {}}
    columns = [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Age", ".metadata.creationTimestamp"),
        ("Status", ".status.state"),
        ("PodName", ".status.server.podName"),
    ]
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    assert schema["spec"]["required"] == ["executor", "server", "sparkVersion"]
    assert {"podName", "podIp", "serviceName"} == set(
        schema["status"]["properties"]["server"]["properties"]
    )


class _Clock:
    def __init__(self) -> None:
        self.now = at(0)

    def __call__(self) -> datetime:
        return self.now


def _server(pod: dict[str, Any]) -> dict[str, Any]:
    """A fixture driver as the operator names and owns a SparkConnect's server pod."""
    pod = copy.deepcopy(pod)
    pod["metadata"]["name"] = "pi-server"
    pod["metadata"]["labels"][CONNECT_NAME_LABEL] = "pi"
    pod["status"]["podIP"] = "10.0.0.7"
    for ref in pod["metadata"]["ownerReferences"]:
        ref |= {"apiVersion": KUBEFLOW_CONNECT_API_VERSION, "kind": "SparkConnect"}
    return pod


def test_status_flow_not_ready_ready_completed_and_ownership() -> None:
    clock = _Clock()
    apps = AppAdapter(None, ReconcileSettings(), clock)  # type: ignore[arg-type]
    adapter = ConnectAdapter(apps)
    cr = connect_cr()
    first = adapter.decide(cr)
    assert first.status is not None and first.status["state"] == "NotReady"
    assert first.status["server"] == {"serviceName": "pi-server", "podName": "pi-server"}
    create = next(a for a in first.actions if isinstance(a, CreateResources))
    owners = [
        r for o in create.objects for r in o["metadata"]["ownerReferences"] if r["uid"] == UID
    ]
    assert {(r["apiVersion"], r["kind"], r["controller"]) for r in owners} == {
        (KUBEFLOW_CONNECT_API_VERSION, "SparkConnect", True)
    }
    assert {o["metadata"]["name"] for o in create.objects} >= {"pi-server"}
    cr["status"] = first.status

    clock.now = at(5)
    worker = executor(1)
    worker["metadata"]["uid"] = "e-uid"
    keys = [k for pod in (_server(driver()), worker) for k in apps._on_pod("ADDED", pod)]
    assert keys == [(CONNECT, "ns1", "pi")] * 2  # the server's and its executor's events
    ready = adapter.decide(cr)
    assert ready.status is not None
    assert ready.status["state"] == "Ready"
    assert ready.status["server"] == {
        "serviceName": "pi-server",
        "podName": "pi-server",
        "podIp": "10.0.0.7",
    }
    assert ready.status["executors"] == {"running": 1}
    (condition,) = ready.status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        CONDITION,
        "True",
        "ServerPodReady",
    )
    assert ready.status["startTime"] == first.status["startTime"]
    cr["status"] = ready.status
    clock.now = at(6)
    assert adapter.decide(cr).status is None  # nothing new: no write (lastUpdateTime kept)

    clock.now = at(30)
    list(apps._on_pod("MODIFIED", _server(driver(phase="Succeeded"))))
    done = adapter.decide(cr)
    assert done.status is not None and done.status["state"] == "Completed"
    assert done.status["conditions"][0]["reason"] == "Completed"
    assert done.status["lastUpdateTime"] == format_instant(at(30))
    assert INTERNAL in done.status


def test_a_refused_spec_ends_failed_and_creates_nothing() -> None:
    apps = AppAdapter(None, ReconcileSettings(), _Clock())  # type: ignore[arg-type]
    decision = ConnectAdapter(apps).decide(connect_cr(executor={"instances": -1}))
    assert not decision.actions
    assert decision.status is not None and decision.status["state"] == "Failed"
    assert "spec.executor.instances" in decision.status["conditions"][0]["message"]


def test_no_internal_status_keeps_what_is_there() -> None:
    cr = connect_cr()
    cr["status"] = {"state": "Ready"}
    assert connect_status(cr, None, (), "t") == {"state": "Ready"}
