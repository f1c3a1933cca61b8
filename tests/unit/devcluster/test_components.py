"""Command lines, configs and certificates of the dev cluster (no processes started)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import padding

from sparkplane_devcluster import alloc, components
from sparkplane_devcluster.build import Binaries, cached_binaries
from sparkplane_devcluster.cluster import node_ready
from sparkplane_devcluster.pki import ensure_pki

BINS = Binaries(*(Path(f"/bin/{n}") for n in ("etcd", "apiserver", "kcm", "sched", "kwok")))


def test_ports_derive_from_one_base_and_are_distinct():
    ports = components.Ports(20000)
    named = ports.named()
    assert named["kube-apiserver"] == 20000
    assert len(set(named.values())) == alloc.PORT_COUNT - 1 == 18  # base + 17: a test's Airflow
    assert set(named.values()) == set(alloc.port_range(20000)) - {20017}
    assert ports.s3 == 20013 and named["seaweedfs (S3)"] == 20013


def test_apiserver_runs_rbac_with_default_admission_and_loopback(tmp_path: Path):
    pki = ensure_pki(tmp_path / "pki")
    argv = components.apiserver_argv(BINS, components.Ports(20000), pki, tmp_path)
    assert "--authorization-mode=Node,RBAC" in argv
    assert "--advertise-address=127.0.0.1" in argv
    assert "--secure-port=20000" in argv
    assert not any(a.startswith(("--admission-control", "--disable-admission")) for a in argv)
    assert any(a.startswith("--service-account-signing-key-file=") for a in argv)


def test_controller_manager_runs_every_default_controller(tmp_path: Path):
    pki = ensure_pki(tmp_path / "pki")
    argv = components.controller_manager_argv(BINS, components.Ports(1), pki, tmp_path / "kc")
    assert "--controllers=*" in argv
    assert "--use-service-account-credentials=true" in argv


def test_stages_cover_the_documented_pod_lifecycle():
    text = resources.files("sparkplane_devcluster").joinpath("data/stages.yaml").read_text()
    docs = list(yaml.safe_load_all(text))
    names = {d["metadata"]["name"] for d in docs}
    assert {"sp-pod-running", "sp-pod-succeed", "sp-pod-fail", "sp-pod-delete"} <= names
    assert {"sp-node-initialize", "sp-node-heartbeat", "sp-job-pod-complete"} <= names
    config = components.kwok_config(text, Path("/d.log"), Path("/e.log"), 1)
    logs = list(yaml.safe_load_all(config))[-2]
    assert logs["kind"] == "ClusterLogs"
    assert logs["spec"]["logs"][-1]["logsFile"] == "/d.log"


def test_node_manifest_keeps_pods_capacity():
    node = components.node_manifest("n", "4", "16Gi", 30)
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "30"}


def test_pki_chain_and_sans(tmp_path: Path):
    pki = ensure_pki(tmp_path)
    ca = x509.load_pem_x509_certificate(pki.file("ca.crt").read_bytes())
    api = x509.load_pem_x509_certificate(pki.file("apiserver.crt").read_bytes())
    ca.public_key().verify(  # type: ignore[union-attr, call-arg]
        api.signature, api.tbs_certificate_bytes, padding.PKCS1v15(), api.signature_hash_algorithm
    )
    sans = api.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    admin = x509.load_pem_x509_certificate(pki.file("admin.crt").read_bytes())
    assert "O=system:masters" in admin.subject.rfc4514_string()
    before = pki.file("ca.crt").read_bytes()
    ensure_pki(tmp_path)  # idempotent: does not regenerate
    assert pki.file("ca.crt").read_bytes() == before


def test_kubeconfig_embeds_credentials(tmp_path: Path):
    pki = ensure_pki(tmp_path)
    cfg = yaml.safe_load(components.kubeconfig("https://127.0.0.1:1", pki))
    assert cfg["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:1"
    assert cfg["users"][0]["user"]["client-key-data"]


def test_cached_binaries_requires_every_executable(tmp_path: Path):
    assert cached_binaries(tmp_path) is None


@pytest.mark.parametrize(
    ("conditions", "taints", "ready"),
    [
        ([{"type": "Ready", "status": "True"}], [], True),
        (
            [{"type": "Ready", "status": "True"}],
            [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
            False,
        ),
        ([{"type": "Ready", "status": "False"}], [], False),
    ],
)
def test_node_ready_needs_condition_and_no_blocking_taint(conditions, taints, ready):
    node = {"status": {"conditions": conditions}, "spec": {"taints": taints}}
    assert node_ready(node) is ready
