"""Kueue's pieces that are pure: its configuration, the queues, the webhook certificate, and
which of the module's webhooks are registered (on a manifest shaped like the module's)."""

from __future__ import annotations

import base64
import ipaddress
from pathlib import Path

import yaml
from cryptography import x509

from sparkplane_devcluster import kueue


def test_config_binds_loopback_and_keeps_certificate_management(tmp_path: Path) -> None:
    cfg = kueue.config(20015, 20016, tmp_path)
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 20015, "certDir": str(tmp_path)}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:20016"
    assert cfg["internalCertManagement"]["enable"] is True
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["metrics"] == {"bindAddress": "0"}


def test_queue_objects_one_cluster_queue_and_a_local_queue_per_namespace() -> None:
    quota = kueue.Quota("shared", "team", cpu="2", memory="4Gi", namespaces=("a", "b"))
    flavor, cq, *locals_ = kueue.queue_objects(quota)
    assert flavor["kind"] == "ResourceFlavor"
    group = cq["spec"]["resourceGroups"][0]
    assert group["flavors"][0]["name"] == flavor["metadata"]["name"]
    assert {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]} == {
        "cpu": "2",
        "memory": "4Gi",
    }
    assert [(q["metadata"]["namespace"], q["spec"]["clusterQueue"]) for q in locals_] == [
        ("a", "shared"),
        ("b", "shared"),
    ]
    assert kueue.names(locals_) == ["LocalQueue/a/team", "LocalQueue/b/team"]


def test_cert_secret_is_valid_for_the_service_name_and_loopback() -> None:
    data = kueue.cert_secret()["data"]
    ca = x509.load_pem_x509_certificate(base64.b64decode(data["ca.crt"]))
    cert = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
    ca_sans = ca.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ca_sans.get_values_for_type(x509.DNSName) == [kueue.CA_NAME]
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [f"{kueue.SERVICE}.{kueue.NAMESPACE}.svc"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert cert.issuer == ca.subject


def test_kueue_api_and_queued_pod_webhooks_are_registered_at_the_url(tmp_path: Path) -> None:
    def hook(name: str, group: str, path: str) -> dict[str, object]:
        return {
            "name": name,
            "clientConfig": {"service": {"name": "webhook-service", "path": path}},
            "rules": [{"apiGroups": [group], "resources": ["x"]}],
        }

    doc = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [
            hook("mjob", "batch", "/mutate-job"),
            hook("mwl", kueue.GROUP, "/mutate-wl"),
            hook("mpod.kb.io", "", "/mutate--v1-pod"),
        ],
    }
    manifests = tmp_path / "config" / "components" / "webhook" / "manifests.yaml"
    manifests.parent.mkdir(parents=True)
    manifests.write_text(yaml.safe_dump(doc))
    (out,) = kueue.webhook_configurations(tmp_path, "https://127.0.0.1:9")
    assert out["metadata"] == {"name": "kueue-mutating-webhook-configuration"}
    assert [(h["name"], h["clientConfig"]) for h in out["webhooks"]] == [
        ("mwl", {"url": "https://127.0.0.1:9/mutate-wl"}),
        ("mpod.kb.io", {"url": "https://127.0.0.1:9/mutate--v1-pod"}),
    ]
    pods = out["webhooks"][1]
    # only pods naming a queue reach Kueue: a pod without the label is never blocked by it
    assert pods["objectSelector"] == {
        "matchExpressions": [{"key": "kueue.x-k8s.io/queue-name", "operator": "Exists"}]
    }
    assert "objectSelector" not in out["webhooks"][0]


def test_a_quota_that_is_not_a_quantity_is_refused_naming_the_option() -> None:
    import pytest

    from sparkplane.errors import DevClusterError

    kueue.check_quota(kueue.Quota(cpu="500m", memory="16Gi"))
    with pytest.raises(DevClusterError, match="--memory '16GB' is not a Kubernetes quantity"):
        kueue.check_quota(kueue.Quota(memory="16GB"))
