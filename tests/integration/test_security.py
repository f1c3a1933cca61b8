"""Least privilege on the real API server (RBAC on): generated roles, minted kubeconfigs.

Each test applies an identity with ``sparkplane rbac ... --apply``, mints its kubeconfig with
``sparkplane kubeconfig --service-account`` and then acts as that service account: what its
job needs works, everything else is refused with a ForbiddenError that names the verb, the
resource and the ``kubectl auth can-i`` check.
"""

from __future__ import annotations

import base64
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sparkplane.cli import security as cli
from sparkplane.errors import ForbiddenError, NotFoundError
from sparkplane.kube import Kube, connect
from sparkplane.security.rbac import render
from sparkplane.security.rules import Identity
from sparkplane.vocab import owner_reference
from tests.integration.helpers import delete_namespace, pod, wait_for

RUNNER = CliRunner()


def _cli(*args: str) -> str:
    result = RUNNER.invoke(cli.app, list(args))
    assert result.exit_code == 0, f"{args}: {result.output}\n{result.exception!r}"
    return result.stdout


@pytest.fixture
def other_namespace(kube: Kube) -> Iterator[str]:
    name = f"sp-other-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    delete_namespace(kube, name)


@pytest.fixture
def as_identity(
    kube: Kube, kubeconfig: Path, tmp_path: Path
) -> Iterator[Callable[[Identity, str], Kube]]:
    """Apply an identity in a namespace through the CLI and return a gateway acting as it."""
    made: list[tuple[Kube, list[dict[str, Any]]]] = []

    def make(identity: Identity, namespace: str) -> Kube:
        _cli("rbac", identity.value, "-n", namespace, "--apply", "--kubeconfig", str(kubeconfig))
        objects = [o.body for o in render(identity, namespace)]
        account = objects[0]["metadata"]["name"]
        target = tmp_path / f"{identity.value}.kubeconfig"
        _cli(
            "kubeconfig",
            "--service-account",
            account,
            "-n",
            namespace,
            "--duration",
            "15m",
            "-o",
            str(target),
            "--kubeconfig",
            str(kubeconfig),
        )
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        doc = yaml.safe_load(target.read_text())
        assert doc["contexts"][0]["context"]["namespace"] == namespace
        assert doc["clusters"][0]["cluster"]["certificate-authority-data"]
        client = Kube(connect(kubeconfig=target))
        # the RBAC authorizer reads roles from a watch cache: wait until the binding is visible
        wait_for(
            lambda: _allowed(lambda: client.list("v1", "Pod", namespace)),
            timeout=30,
            what=f"{identity.value} RBAC to take effect",
        )
        made.append((client, objects))
        return client

    yield make
    for client, objects in made:
        client.close()
        for obj in objects:
            if obj["kind"] == "ClusterRoleBinding":  # the only cluster-scoped object we own
                try:
                    kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
                except NotFoundError:
                    pass


def _allowed(call: Callable[[], object]) -> bool:
    try:
        call()
    except ForbiddenError:
        return False
    return True


def _refused(call: Callable[[], object], verb: str, resource: str, namespace: str = "") -> str:
    with pytest.raises(ForbiddenError) as info:
        call()
    message = str(info.value)
    ns_flag = f" -n {namespace}" if namespace else ""
    assert f"cannot {verb} {resource}" in message, message
    assert f"kubectl auth can-i {verb} {resource}{ns_flag}" in message, message
    return message


def _configmap(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner:
        meta["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def _service(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner:
        meta["ownerReferences"] = [owner_reference(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"clusterIP": "None", "selector": {"app": name}, "ports": [{"port": 7078}]},
    }


def _executor_set(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    """A StatefulSet of executors as Spark's statefulset allocator makes one (replicas 0)."""
    template = pod(f"{name}-template", labels={"spark-role": "executor", "set": name})
    template["spec"]["restartPolicy"] = "Always"  # a StatefulSet's pods always restart
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "ownerReferences": [owner_reference(owner)]},
        "spec": {
            "replicas": 0,
            "serviceName": name,
            "selector": {"matchLabels": {"set": name}},
            "template": {
                "metadata": {"labels": template["metadata"]["labels"]},
                "spec": template["spec"],
            },
        },
    }


def _secret(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner:
        meta["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {"k": "v"}}


def test_client_submits_monitors_and_kills_in_its_namespace_only(
    kube: Kube, namespace: str, other_namespace: str, as_identity: Callable[[Identity, str], Kube]
):
    kube.create(_secret("admin-secret"), namespace)
    client = as_identity(Identity.CLIENT, namespace)

    # submit: the driver, then its ConfigMap, Service and a Secret, owned by the driver
    annotations = {"sim.sparkplane.io/outcome": "Succeeded", "sim.sparkplane.io/run-for": "120s"}
    driver = client.create(pod("app-driver", annotations=annotations), namespace)
    client.create(_configmap("app-conf", driver), namespace)
    client.create(_service("app-svc", driver), namespace)
    client.create(_secret("app-token", driver), namespace)

    # monitor: status, logs, events, nodes
    wait_for(
        lambda: (
            client.get("v1", "Pod", "app-driver", namespace)["status"].get("phase") == "Running"
        ),
        timeout=30,
        what="driver Running",
    )
    lines = wait_for(lambda: list(client.logs("app-driver", namespace)), timeout=30, what="logs")
    assert lines
    assert client.list("v1", "Event", namespace) is not None
    assert client.list("v1", "Node")
    assert client.get("v1", "Service", "app-svc", namespace)

    # Secrets: may create, never read, not even its own (get/list return the data)
    _refused(
        lambda: client.get("v1", "Secret", "admin-secret", namespace), "get", "secrets", namespace
    )
    _refused(
        lambda: client.get("v1", "Secret", "app-token", namespace), "get", "secrets", namespace
    )
    _refused(lambda: client.list("v1", "Secret", namespace), "list", "secrets", namespace)
    _refused(
        lambda: client.delete("v1", "Secret", "admin-secret", namespace),
        "delete",
        "secrets",
        namespace,
    )

    # another namespace: nothing
    _refused(
        lambda: client.create(pod("intruder"), other_namespace), "create", "pods", other_namespace
    )
    _refused(lambda: client.list("v1", "Pod", other_namespace), "list", "pods", other_namespace)

    # cluster-scoped writes
    _refused(
        lambda: client.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"{namespace}-x"}}
        ),
        "create",
        "namespaces",
    )
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"sp-escalate-{namespace}"},
        "rules": [],
    }
    _refused(lambda: client.create(role), "create", "clusterroles")

    # kill: delete the driver; the garbage collector takes what it owned
    client.delete("v1", "Pod", "app-driver", namespace, grace_period_seconds=0)
    wait_for(
        lambda: (
            client.get_or_none("v1", "ConfigMap", "app-conf", namespace) is None
            and client.get_or_none("v1", "Pod", "app-driver", namespace) is None
        ),
        timeout=60,
        what="driver and its ConfigMap gone",
    )
    assert kube.get_or_none("v1", "Secret", "app-token", namespace) is None or wait_for(
        lambda: kube.get_or_none("v1", "Secret", "app-token", namespace) is None,
        timeout=60,
        what="owned Secret garbage-collected",
    )


def test_driver_creates_its_executors_and_nothing_more(
    kube: Kube, namespace: str, other_namespace: str, as_identity: Callable[[Identity, str], Kube]
):
    driver = as_identity(Identity.DRIVER, namespace)
    owner = kube.create(pod("app-driver"), namespace)

    executor = driver.create(pod("app-exec-1", labels={"spark-role": "executor"}), namespace)
    assert executor["metadata"]["name"] == "app-exec-1"
    driver.create(_service("app-exec-svc", owner), namespace)
    driver.create(_configmap("spark-exec-conf-map", owner), namespace)
    driver.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "app-exec-1-pvc-0"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        namespace,
    )
    assert [p["metadata"]["name"] for p in driver.list("v1", "Pod", namespace)]
    driver.patch(
        "v1",
        "Pod",
        "app-exec-1",
        {"metadata": {"labels": {"spark-exec-inactive": "true"}}},
        namespace,
    )
    driver.delete("v1", "Pod", "app-exec-1", namespace, grace_period_seconds=0)
    # issue 27: Spark's statefulset allocator (Apache's workload role grants the same)
    sts = driver.create(_executor_set("app-exec-set", owner), namespace)
    driver.patch("apps/v1", "StatefulSet", "app-exec-set", {"spec": {"replicas": 0}}, namespace)
    assert [s["metadata"]["name"] for s in driver.list("apps/v1", "StatefulSet", namespace)] == [
        sts["metadata"]["name"]
    ]
    driver.delete("apps/v1", "StatefulSet", "app-exec-set", namespace)

    _refused(lambda: driver.create(_secret("stolen"), namespace), "create", "secrets", namespace)
    _refused(lambda: driver.list("v1", "Secret", namespace), "list", "secrets", namespace)
    _refused(lambda: driver.create(pod("x"), other_namespace), "create", "pods", other_namespace)
    _refused(lambda: driver.list("v1", "Node"), "list", "nodes")
    _refused(lambda: driver.list("v1", "Event", namespace), "list", "events", namespace)
    _refused(
        lambda: driver.create(
            {
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": "ui"},
                "spec": {"defaultBackend": {"service": {"name": "x", "port": {"number": 80}}}},
            },
            namespace,
        ),
        "create",
        "ingresses",
        namespace,
    )


def test_hard_way_server_token_and_base64_ca_reach_the_cluster(
    kube: Kube, namespace: str, kubeconfig: Path, as_identity: Callable[[Identity, str], Kube]
):
    as_identity(Identity.GC, namespace)
    text = _cli(
        "kubeconfig",
        "--service-account",
        "sparkplane-gc",
        "-n",
        namespace,
        "--kubeconfig",
        str(kubeconfig),
    )
    doc = yaml.safe_load(text)
    server = doc["clusters"][0]["cluster"]["server"]
    ca_b64 = doc["clusters"][0]["cluster"]["certificate-authority-data"]  # as in a Secret
    token = doc["users"][0]["user"]["token"]
    for ca in (ca_b64, base64.b64decode(ca_b64).decode()):
        gc = Kube(connect(server=server, token=token, ca_cert=ca))
        try:
            assert gc.list("v1", "Pod", namespace) == []
            # gc may read pods (to archive their logs) but never Secrets
            _refused(
                lambda g=gc: g.get("v1", "Secret", "x", namespace), "get", "secrets", namespace
            )
        finally:
            gc.close()


def test_kubeconfig_for_a_missing_service_account_says_so(
    kube: Kube, namespace: str, kubeconfig: Path
):
    result = RUNNER.invoke(
        cli.app,
        [
            "kubeconfig",
            "--service-account",
            "nobody",
            "-n",
            namespace,
            "--kubeconfig",
            str(kubeconfig),
        ],
    )
    assert isinstance(result.exception, NotFoundError)
    message = str(result.exception)
    assert f"service account {namespace}/nobody does not exist" in message
    assert "sparkplane rbac" in message


def test_driver_cannot_read_other_apps_conf_and_gc_reads_by_name_only(
    kube: Kube, namespace: str, as_identity: Callable[[Identity, str], Kube]
):
    """Issue 12: the narrowed rights, checked by the real authorizer."""
    other = kube.create(pod("other-app-driver"), namespace)
    secret_conf = _configmap("other-app-conf", other)
    secret_conf["data"] = {"spark.properties": "spark.hadoop.fs.s3a.secret.key=hunter2"}
    kube.create(secret_conf, namespace)
    kube.create(_service("other-app-svc", other), namespace)

    driver = as_identity(Identity.DRIVER, namespace)
    _refused(
        lambda: driver.get("v1", "ConfigMap", "other-app-conf", namespace),
        "get",
        "configmaps",
        namespace,
    )
    _refused(lambda: driver.list("v1", "ConfigMap", namespace), "list", "configmaps", namespace)
    _refused(
        lambda: driver.get("v1", "Service", "other-app-svc", namespace),
        "get",
        "services",
        namespace,
    )
    _refused(lambda: driver.list("v1", "Service", namespace), "list", "services", namespace)
    # what it needs still works: its executor ConfigMap, deleted by label on stop
    mine = _configmap("spark-exec-mine-conf-map")
    mine["metadata"]["labels"] = {"spark-app-selector": "spark-mine", "spark-role": "executor"}
    driver.create(mine, namespace)
    driver.raw(
        "DELETE",
        f"/api/v1/namespaces/{namespace}/configmaps",
        query={"labelSelector": "spark-app-selector=spark-mine"},
    )
    assert kube.get_or_none("v1", "ConfigMap", "spark-exec-mine-conf-map", namespace) is None
    assert kube.get_or_none("v1", "ConfigMap", "other-app-conf", namespace) is not None

    gc = as_identity(Identity.GC, namespace)
    assert gc.get("v1", "ConfigMap", "other-app-conf", namespace)["metadata"]["name"]
    _refused(lambda: gc.list("v1", "ConfigMap", namespace), "list", "configmaps", namespace)
    _refused(
        lambda: gc.delete("v1", "ConfigMap", "other-app-conf", namespace),
        "delete",
        "configmaps",
        namespace,
    )
