"""Minted kubeconfigs: their shape, their loading, and files that are private from birth."""

from __future__ import annotations

import base64
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.kube.config import configuration, context_namespace
from sparkplane.usecases.kubeconfig import (
    Minted,
    build_kubeconfig,
    check_duration,
    write_private,
)
from tests.unit.security.conftest import Pki


def test_built_kubeconfig_embeds_the_ca_and_sets_the_namespace(pki: Pki, tmp_path: Path):
    doc = build_kubeconfig(
        server="https://127.0.0.1:6443",
        token="tok",
        namespace="spark-jobs",
        service_account="sparkplane-client",
        ca_pem=pki.ca,
    )
    cluster = doc["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == pki.ca
    assert doc["current-context"] == "sparkplane-client@sparkplane"
    path = write_private(tmp_path / "kc", Minted(doc, "", 3600).text())
    cfg = configuration(kubeconfig=path)
    assert cfg.host == "https://127.0.0.1:6443"
    assert cfg.ca_cert_data == pki.ca.decode()
    assert cfg.get_api_key_with_prefix("BearerToken") == "Bearer tok"
    assert context_namespace(path) == "spark-jobs"


def test_without_a_ca_the_system_trust_store_is_used(pki: Pki):
    doc = build_kubeconfig(
        server="https://k8s.example.com",
        token="t",
        namespace="n",
        service_account="s",
        ca_pem=None,
        cluster_name="prod",
    )
    assert doc["clusters"] == [{"name": "prod", "cluster": {"server": "https://k8s.example.com"}}]


def test_duration_has_the_api_servers_minimum():
    assert check_duration(timedelta(hours=1)) == 3600
    assert check_duration(timedelta(minutes=10)) == 600
    with pytest.raises(ValidationError, match="--duration: 540s is too short"):
        check_duration(timedelta(minutes=9))


def test_private_file_is_0600_even_over_a_world_readable_one(tmp_path: Path):
    target = tmp_path / "kc"
    target.write_text("old")
    target.chmod(0o644)
    old_umask = os.umask(0)  # even with a permissive umask
    try:
        write_private(target, yaml.safe_dump({"token": "x"}))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert yaml.safe_load(target.read_text()) == {"token": "x"}
    assert [p.name for p in tmp_path.iterdir()] == ["kc"]  # no temporary sibling left


def test_private_file_is_created_with_0600_not_chmodded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    modes: list[int] = []
    real_open = os.open

    def spy(path: str, flags: int, mode: int = 0o777) -> int:
        modes.append(mode)
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", spy)
    monkeypatch.setattr(os, "chmod", lambda *a, **k: pytest.fail("chmod after writing"))
    write_private(tmp_path / "kc", "data")
    assert modes == [0o600]


def test_duration_has_a_maximum_unless_forced():
    with pytest.raises(ValidationError, match=r"--duration: 3650d is longer than the 7d maximum"):
        check_duration(timedelta(days=3650))
    assert check_duration(timedelta(days=7)) == 7 * 86400
    assert check_duration(timedelta(days=3650), force=True) == 3650 * 86400
