"""The three ways to load credentials (sparkplane.kube.config), without temporary files."""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from sparkplane.errors import ConfigError
from sparkplane.kube.config import (
    ca_pem,
    configuration,
    connect,
    context_namespace,
    endpoint,
)
from tests.unit.security.conftest import Pki


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _kubeconfig(pki: Pki, *, user: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "dev",
                "cluster": {
                    "server": "https://127.0.0.1:6443",
                    "certificate-authority-data": _b64(pki.ca),
                },
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": user
                or {
                    "client-certificate-data": _b64(pki.cert),
                    "client-key-data": _b64(pki.key),
                },
            }
        ],
        "contexts": [
            {"name": "dev", "context": {"cluster": "dev", "user": "admin", "namespace": "jobs"}}
        ],
        "current-context": "dev",
    }
    doc.update(extra)
    return doc


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point tempfile (and so every mkstemp) at an empty directory we can watch."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    assert tempfile.gettempdir() == str(d)
    return d


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


# -- finding: the official loader leaves key material in temp files ----------------------


def test_official_loader_writes_embedded_certs_to_temp_files(
    pki: Pki, tmp_path: Path, private_tmp: Path
):
    """Why we load kubeconfigs ourselves: kubernetes' loader mkstemp()s every ``*-data`` field
    and removes the files only at interpreter exit (atexit), so a killed process leaves its
    client key behind. If this starts failing, the library changed: revisit config.py."""
    path = _write(tmp_path / "kc", _kubeconfig(pki))
    cfg = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(path), client_configuration=cfg)
    written = sorted(p.read_bytes() for p in private_tmp.iterdir())
    assert pki.key in written and pki.ca in written


# -- way 1: kubeconfig ----------------------------------------------------------------------


def test_kubeconfig_with_embedded_data_creates_no_temp_files(
    pki: Pki, tmp_path: Path, private_tmp: Path
):
    before = set(os.listdir(tempfile.gettempdir()))
    cfg = configuration(kubeconfig=_write(tmp_path / "kc", _kubeconfig(pki)))
    assert set(os.listdir(tempfile.gettempdir())) == before == set()
    assert cfg.host == "https://127.0.0.1:6443"
    assert cfg.ca_cert_data == pki.ca.decode()
    assert cfg.ssl_ca_cert is None
    assert Path(cfg.cert_file).read_bytes() == pki.cert
    assert Path(cfg.key_file).read_bytes() == pki.key
    assert cfg.cert_file.startswith("/proc/self/fd/")
    # the TLS layer accepts what we built
    ctx = ssl.create_default_context(cadata=cfg.ca_cert_data)
    ctx.load_cert_chain(cfg.cert_file, cfg.key_file)


def test_connect_returns_a_client_and_keeps_the_pool_size(pki: Pki, tmp_path: Path):
    api = connect(kubeconfig=_write(tmp_path / "kc", _kubeconfig(pki)))
    assert api.configuration.connection_pool_maxsize == 64
    where = endpoint(api)
    assert (where.server, where.ca_pem, where.verify) == ("https://127.0.0.1:6443", pki.ca, True)
    api.close()


def test_named_kubeconfig_or_context_must_exist(pki: Pki, tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist \\(it was named explicitly\\)"):
        configuration(kubeconfig=tmp_path / "missing")
    path = _write(tmp_path / "kc", _kubeconfig(pki))
    with pytest.raises(ConfigError, match=r"context .prod. is not in .*known contexts: dev"):
        configuration(kubeconfig=path, context="prod")


def test_named_context_never_falls_back_to_the_current_one(pki: Pki, tmp_path: Path):
    doc = _kubeconfig(pki)
    doc["clusters"].append({"name": "other", "cluster": {"server": "https://other:6443"}})
    doc["contexts"].append({"name": "other", "context": {"cluster": "other", "user": "admin"}})
    path = _write(tmp_path / "kc", doc)
    assert configuration(kubeconfig=path).host == "https://127.0.0.1:6443"
    assert configuration(kubeconfig=path, context="other").host == "https://other:6443"
    assert context_namespace(path) == "jobs"
    assert context_namespace(path, "other") is None


def test_kubeconfig_env_list_is_merged_first_definition_wins(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    first = _kubeconfig(pki)
    first.pop("current-context")
    second = _kubeconfig(pki, **{"current-context": "dev"})
    second["clusters"][0]["cluster"]["server"] = "https://shadowed:1"
    a, b = _write(tmp_path / "a", first), _write(tmp_path / "b", second)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "none"), str(a), str(b)]))
    cfg = configuration()
    assert cfg.host == "https://127.0.0.1:6443"  # from a, though current-context came from b


def test_relative_paths_resolve_against_the_kubeconfig_and_token_files_are_read(
    pki: Pki, tmp_path: Path
):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(pki.ca)
    (tmp_path / "token").write_text("s3cret\n")
    doc = _kubeconfig(pki, user={"tokenFile": "token"})
    doc["clusters"][0]["cluster"] = {
        "server": "https://x:6443",
        "certificate-authority": "pki/ca.crt",
        "tls-server-name": "kubernetes",
    }
    cfg = configuration(kubeconfig=_write(tmp_path / "kc", doc))
    assert cfg.ssl_ca_cert == str(tmp_path / "pki" / "ca.crt")
    assert cfg.tls_server_name == "kubernetes"
    assert cfg.get_api_key_with_prefix("BearerToken") == "Bearer s3cret"


def test_token_user_and_insecure_cluster(pki: Pki, tmp_path: Path):
    doc = _kubeconfig(pki, user={"token": "abc"})
    doc["clusters"][0]["cluster"] = {"server": "https://x", "insecure-skip-tls-verify": True}
    cfg = configuration(kubeconfig=_write(tmp_path / "kc", doc))
    assert cfg.verify_ssl is False
    assert cfg.get_api_key_with_prefix("BearerToken") == "Bearer abc"


def test_basic_auth_is_refused_with_a_reason(pki: Pki, tmp_path: Path):
    doc = _kubeconfig(pki, user={"username": "u", "password": "p"})
    with pytest.raises(ConfigError, match=r"removed in 1\.19"):
        configuration(kubeconfig=_write(tmp_path / "kc", doc))


def test_exec_plugin_users_are_delegated_but_certs_stay_off_disk(
    pki: Pki, tmp_path: Path, private_tmp: Path
):
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "sh",
            "args": [
                "-c",
                'echo \'{"apiVersion":"client.authentication.k8s.io/v1beta1",'
                '"kind":"ExecCredential","status":{"token":"from-plugin"}}\'',
            ],
            "interactiveMode": "Never",
        }
    }
    cfg = configuration(kubeconfig=_write(tmp_path / "kc", _kubeconfig(pki, user=user)))
    assert "from-plugin" in str(cfg.get_api_key_with_prefix("BearerToken"))
    assert cfg.ca_cert_data == pki.ca.decode()
    assert cfg.verify_ssl is True
    assert list(private_tmp.iterdir()) == []


def test_nothing_found_is_an_error_unless_inside_a_pod(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ConfigError, match="no kubeconfig found"):
        configuration()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    with pytest.raises(ConfigError, match="not running inside a cluster"):
        configuration()  # tried the in-cluster service account (no token mounted here)


# -- way 2: in-cluster ------------------------------------------------------------------------


def test_in_cluster_outside_a_pod_is_a_clear_error():
    with pytest.raises(ConfigError, match="not running inside a cluster"):
        configuration(in_cluster=True)


# -- way 3: explicit server + token + CA (APISERVER, TOKEN, CACERT) ---------------------------


def test_cacert_may_be_pem_base64_or_a_path(pki: Pki, tmp_path: Path, private_tmp: Path):
    (tmp_path / "ca.crt").write_bytes(pki.ca)
    forms = [pki.ca.decode(), _b64(pki.ca), str(tmp_path / "ca.crt")]
    before = set(os.listdir(tempfile.gettempdir()))
    for form in forms:
        cfg = configuration(server="https://api:6443", token="t0k", ca_cert=form)
        assert cfg.ca_cert_data.strip() == pki.ca.decode().strip()
        assert cfg.host == "https://api:6443"
        assert cfg.get_api_key_with_prefix("BearerToken") == "Bearer t0k"
    assert set(os.listdir(tempfile.gettempdir())) == before


def test_explicit_way_refuses_incomplete_or_bad_input(pki: Pki):
    with pytest.raises(ConfigError, match="without a token"):
        configuration(server="https://api", ca_cert=pki.ca.decode())
    with pytest.raises(ConfigError, match="does not disable TLS verification"):
        configuration(server="https://api", token="t")
    with pytest.raises(ConfigError, match="neither PEM text, base64 of PEM, nor an existing"):
        ca_pem("not a cert!")
    with pytest.raises(ConfigError, match="usable CA certificate"):
        ca_pem(_b64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))


def test_explicit_way_wins_over_a_kubeconfig(pki: Pki, tmp_path: Path):
    path = _write(tmp_path / "kc", _kubeconfig(pki))
    cfg = configuration(kubeconfig=path, server="https://explicit", token="t", ca_cert=_b64(pki.ca))
    assert cfg.host == "https://explicit"
