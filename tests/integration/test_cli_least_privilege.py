"""The whole CLI under the least-privilege identity ``sparkplane rbac client`` creates.

An admin applies the client's RBAC and mints a service-account kubeconfig (``sparkplane
kubeconfig``, whose context names the namespace); every application command then runs with
only that kubeconfig and no ``-n``: submit, get, describe, wait, logs, events, ui, kill --wait.
What the client may not do fails with exit 6 (RBAC), not 7.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from sparkplane.kube import Kube
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
