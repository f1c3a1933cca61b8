"""Request shapes and error mapping of the gateway (pure parts; behaviour is in integration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkplane.errors import (
    AlreadyExistsError,
    ConfigError,
    ConflictError,
    ForbiddenError,
    GoneError,
    KubeError,
    NotFoundError,
)
from sparkplane.kube import Resource, connect
from sparkplane.kube.discovery import Discovery
from sparkplane.kube.errors import error_for
from sparkplane.vocab import describe, owner_reference


def test_resource_paths():
    pods = Resource("v1", "Pod", "pods", True)
    assert pods.path("ns") == "/api/v1/namespaces/ns/pods"
    assert pods.path("ns", "p", "log") == "/api/v1/namespaces/ns/pods/p/log"
    assert pods.path() == "/api/v1/pods"
    crd = Resource("spark.apache.org/v1", "SparkApplication", "sparkapplications", True)
    assert crd.path("a", "x") == "/apis/spark.apache.org/v1/namespaces/a/sparkapplications/x"
    nodes = Resource("v1", "Node", "nodes", False)
    assert nodes.path("ignored", "n1") == "/api/v1/nodes/n1"


def test_discovery_refreshes_once_for_unknown_kinds():
    calls: list[str] = []
    served = [
        {"resources": []},
        {
            "resources": [
                {"name": "podgroups", "kind": "PodGroup", "namespaced": True},
                {"name": "podgroups/status", "kind": "PodGroup", "namespaced": True},
            ]
        },
    ]

    def fetch(path: str) -> dict:
        calls.append(path)
        return served[min(len(calls) - 1, 1)]

    disc = Discovery(fetch)
    with pytest.raises(KubeError, match="is the CRD installed"):
        disc.resolve("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert calls == ["/apis/scheduling.volcano.sh/v1beta1"]  # a fresh answer is not re-fetched
    res = disc.resolve("scheduling.volcano.sh/v1beta1", "PodGroup")  # the CRD came since
    assert res.plural == "podgroups" and res.namespaced
    assert calls == ["/apis/scheduling.volcano.sh/v1beta1"] * 2
    disc.resolve("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert len(calls) == 2  # cached
    with pytest.raises(KubeError, match="is the CRD installed"):
        disc.resolve("scheduling.volcano.sh/v1beta1", "Queue")


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFoundError),
        (409, "AlreadyExists", AlreadyExistsError),
        (409, "Conflict", ConflictError),
        (410, "Expired", GoneError),
        (403, "Forbidden", ForbiddenError),
        (422, "Invalid", KubeError),
    ],
)
def test_error_mapping_keeps_status(code, reason, cls):
    body = json.dumps({"kind": "Status", "reason": reason, "message": "nope", "code": code})
    exc = error_for(
        code, body.encode(), verb="create", plural="pods", namespace="ns", obj="Pod ns/p"
    )
    assert type(exc) is cls
    assert exc.code == code and exc.reason == reason and exc.status["message"] == "nope"


def test_forbidden_suggests_can_i():
    exc = error_for(403, b"{}", verb="list", plural="secrets", namespace="team", obj="Secret x")
    assert "kubectl auth can-i list secrets -n team" in str(exc)


def test_owner_reference_and_describe():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "d", "uid": "u1", "namespace": "n"},
    }
    assert owner_reference(pod) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "d",
        "uid": "u1",
        "controller": True,
    }
    assert describe(pod) == "Pod n/d"


def test_named_kubeconfig_must_exist(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        connect(kubeconfig=tmp_path / "missing")


def test_named_context_must_exist(tmp_path: Path):
    cfg = tmp_path / "kc"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://x'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: one, context: {cluster: c,"
        " user: u}}]\ncurrent-context: one\n"
    )
    with pytest.raises(ConfigError, match="'two' is not in"):
        connect(kubeconfig=cfg, context="two")
    assert connect(kubeconfig=cfg, context="one").configuration.host == "https://x"


def test_explicit_server_requires_token_and_ca():
    with pytest.raises(ConfigError, match="without a token"):
        connect(server="https://x")
    with pytest.raises(ConfigError, match="CA certificate"):
        connect(server="https://x", token="t")


def test_kubeflows_api_not_served_names_the_operator_that_serves_it() -> None:
    disc = Discovery(lambda path: {"resources": []})
    with pytest.raises(KubeError, match="sparkplane operator install --operator") as err:
        disc.resolve("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    assert "Kubeflow's Spark operator" in str(err.value)
