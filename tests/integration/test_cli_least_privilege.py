"""The whole CLI under the least-privilege identity ``sparkplane rbac client`` creates.

An admin applies the client's RBAC and mints a service-account kubeconfig (``sparkplane
kubeconfig``, whose context names the namespace); every application command then runs with
only that kubeconfig and no ``-n``: submit, get, describe, wait, logs, events, ui, kill --wait.
What the client may not do fails with exit 6 (RBAC), not 7.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from sparkplane.kube import Kube
from sparkplane.vocab import SESSION_LABEL, SESSION_QUOTA_KEY
from tests.integration.helpers import wait_for
from tests.integration.test_cli import PI, run


@pytest.fixture
def client_rbac(kubeconfig, kube: Kube, namespace) -> Iterator[None]:
    """The client identity's RBAC; its ClusterRoleBinding (nodes) outlives the namespace, so
    it is removed here."""
    run(kubeconfig, "rbac", "client", "-n", namespace, "--apply")
    yield
    binding = f"sparkplane:client:cluster:{namespace}:sparkplane-client"
    kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding)


def test_every_command_works_as_the_client_identity(
    kubeconfig, kube: Kube, namespace, tmp_path, client_rbac
):
    client_config = tmp_path / "client.kubeconfig"
    run(
        kubeconfig,
        "kubeconfig",
        "--service-account",
        "sparkplane-client",
        "-n",
        namespace,
        "-o",
        str(client_config),
    )
    spec = yaml.safe_load(PI.read_text())
    spec["metadata"].pop("namespace", None)
    spec["spec"]["serviceAccount"] = "default"
    ann = spec["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann.update({"sim.sparkplane.io/run-for": "1h"})
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(spec))

    name = run(client_config, "submit", "-f", str(path)).stdout.strip()
    assert kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    run(client_config, "wait", name, "--for", "running", "--timeout", "60")
    listed = run(client_config, "get", "apps", "-o", "json").stdout
    assert name in listed
    assert name in run(client_config, "get", "apps", "-o", "wide").stdout
    assert "Running" in run(client_config, "describe", name).stdout
    assert run(client_config, "logs", name, "--tail", "1").stdout.strip()
    assert "Scheduled" in run(client_config, "events", name).stdout
    ui = run(client_config, "ui", name, "--no-port-forward", check=None)
    assert ui.returncode in (0, 1) and "Traceback" not in ui.stderr
    killed = run(client_config, "kill", name, "--wait", "--timeout", "90")
    assert "everything it owned is gone" in killed.stderr
    assert kube.list("v1", "Pod", namespace, label_selector="spark-role=driver") == []

    denied = run(client_config, "submit", "-f", str(path), "-n", "kube-system", check=6)
    assert "forbidden" in denied.stderr.lower() and "Traceback" not in denied.stderr
    gone = run(client_config, "ui", name, check=8)
    assert "no Spark application" in gone.stderr


def test_a_spark_4_3_app_gets_its_network_policy_and_a_role_without_it_creates_nothing(
    kubeconfig, kube: Kube, namespace, tmp_path, client_rbac
):
    """Spark 4.2+'s per-app NetworkPolicy, as the client identity: the shipped role may create
    it, it is owned by the driver pod (gone with it); a role of an older sparkplane (no
    networkpolicies) is refused before anything exists, naming the right (exit 6)."""
    client_config = tmp_path / "client.kubeconfig"
    run(kubeconfig, "kubeconfig", "--service-account", "sparkplane-client", "-n", namespace,
        "-o", str(client_config))  # fmt: skip
    spec = yaml.safe_load(PI.read_text())
    spec["metadata"].pop("namespace", None)
    spec["spec"].update(image="docker.io/sparkplane/spark:4.3.0", serviceAccount="default")
    spec["spec"]["runtimeVersions"]["sparkVersion"] = "4.3.0"
    spec["spec"].pop("sparkUI", None)
    ann = spec["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann.update({"sim.sparkplane.io/run-for": "1h"})
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(spec))

    name = run(client_config, "submit", "-f", str(path)).stdout.strip()
    [driver] = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    app_id = driver["metadata"]["labels"]["spark-app-selector"]
    [policy] = kube.list("networking.k8s.io/v1", "NetworkPolicy", namespace)
    assert policy["metadata"]["name"].endswith("-policy")
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "spark-role": "executor",
        "spark-app-selector": app_id,
    }
    [owner] = policy["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Pod", driver["metadata"]["uid"])
    run(client_config, "kill", name, "--wait", "--timeout", "90")
    wait_for(
        lambda: not kube.list("networking.k8s.io/v1", "NetworkPolicy", namespace),
        timeout=60,
        what="the NetworkPolicy removed with its driver pod",
    )

    role = kube.get("rbac.authorization.k8s.io/v1", "Role", "sparkplane:client", namespace)
    older = [r for r in role["rules"] if "networkpolicies" not in r.get("resources", [])]
    assert len(older) == len(role["rules"]) - 1
    kube.patch("rbac.authorization.k8s.io/v1", "Role", "sparkplane:client", {"rules": older},
               namespace)  # fmt: skip
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": f"system:serviceaccount:{namespace}:sparkplane-client",
            "resourceAttributes": {"namespace": namespace, "verb": "create",
                                   "group": "networking.k8s.io", "resource": "networkpolicies"},
        },
    }  # fmt: skip
    wait_for(
        lambda: not kube.create(review)["status"].get("allowed"),
        timeout=30,
        what="the authorizer to see the role without networkpolicies",
    )
    denied = run(client_config, "submit", "-f", str(path), check=6)
    assert "networkpolicies.networking.k8s.io" in denied.stderr, denied.stderr
    assert "nothing was created" in denied.stderr and "Traceback" not in denied.stderr
    assert kube.list("v1", "Pod", namespace) == []
    assert kube.list("v1", "ConfigMap", namespace, label_selector="spark-app-selector") == []


def test_a_namespaces_session_cap_refuses_the_next_session_and_gc_ends_the_newest(
    kubeconfig, kube: Kube, namespace, tmp_path, client_rbac
):
    """The cap on concurrent Spark Connect sessions is the admin's ResourceQuota entry
    (the API server accepts it though nothing it counts exists without Kubeflow's CRD): as the
    client identity, a session past it is refused (exit 5, the quota named, nothing created);
    one started past it anyway (here: the admin lowers the cap) is ended by gc, running as its
    shipped identity, the newest first."""
    run(kubeconfig, "rbac", "gc", "-n", namespace, "--apply")
    client_config = tmp_path / "client.kubeconfig"
    gc_config = tmp_path / "gc.kubeconfig"
    for account, path in (("sparkplane-client", client_config), ("sparkplane-gc", gc_config)):
        run(
            kubeconfig, "kubeconfig", "--service-account", account, "-n", namespace, "-o", str(path)
        )

    def cap(sessions: int) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "sessions", "namespace": namespace},
            "spec": {"hard": {SESSION_QUOTA_KEY: str(sessions)}},
        }
        kube.apply(body)

    def create(name: str, check: int | None = 0) -> Any:
        return run(
            client_config,
            "session",
            "create",
            name,
            "--no-wait",
            "--idle-timeout",
            "0",  # KWOK runs no Spark REST API to ask for the idle time
            "--conf",
            "spark.kubernetes.driver.annotation.sim.sparkplane.io/run-for=1h",
            check=check,
        )

    def drivers() -> list[str]:
        pods = kube.list("v1", "Pod", namespace, label_selector=SESSION_LABEL)
        return sorted(p["metadata"]["labels"][SESSION_LABEL] for p in pods)

    cap(1)
    create("first")
    refused = create("second", check=5)
    assert "already runs 1 of its 1 Spark Connect sessions" in refused.stderr, refused.stderr
    assert "ResourceQuota sessions" in refused.stderr and "Traceback" not in refused.stderr
    assert drivers() == ["first"]
    listed = run(client_config, "session", "list")
    assert "1 of 1 sessions (ResourceQuota sessions)" in listed.stderr, listed.stderr
    secrets = [s["metadata"]["name"] for s in kube.list("v1", "Secret", namespace)]
    assert not [s for s in secrets if s.startswith("second")], secrets

    cap(2)
    create("second")
    wait_for(lambda: drivers() == ["first", "second"], timeout=30, what="both drivers")
    cap(1)
    ended = json.loads(run(gc_config, "gc", "-o", "json").stdout)
    mine = {d["name"]: d for d in ended if d["name"].startswith(("first", "second"))}
    assert [n for n, d in mine.items() if d["delete"]] == [
        next(n for n in mine if n.startswith("second"))
    ], mine
    assert "beyond its namespace's cap of 1" in next(
        d["reason"] for d in mine.values() if d["delete"]
    )
    wait_for(lambda: drivers() == ["first"], timeout=60, what="the newest session ended")
