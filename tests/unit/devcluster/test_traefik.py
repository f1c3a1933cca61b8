"""Traefik in the dev cluster: its least-privilege role, its ports and its build patches."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane_devcluster import traefik
from sparkplane_devcluster.components import Ports


def test_its_role_reads_and_updates_only_what_the_ingress_provider_needs() -> None:
    verbs = {
        (group, resource): tuple(rule["verbs"])
        for rule in traefik.RULES
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    reads = {k: v for k, v in verbs.items() if "/" not in k[1] and k[1] != "nodes"}
    assert all(v == ("get", "list", "watch") for v in reads.values())
    assert verbs[("", "nodes")] == ("list", "watch")
    assert verbs[("networking.k8s.io", "ingresses/status")] == ("update",)
    assert ("", "pods") not in verbs and ("", "configmaps") not in verbs


def test_it_listens_on_the_clusters_own_port_on_loopback() -> None:
    port = Ports(20000).traefik
    argv = traefik.argv(Path("/bin/traefik"), port)
    assert "--entryPoints.websecure.address=127.0.0.1:20018" in argv
    assert "--entryPoints.websecure.http.tls=true" in argv  # a cleartext client is refused
    assert port - 20000 < 19 and port != 20017  # in its range; +17 is a test's Airflow


def test_the_patches_fail_loudly_when_the_source_changed(tmp_path: Path) -> None:
    for name, _, _ in traefik.PATCHES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("package x\n")
    with pytest.raises(RuntimeError, match="does not contain"):
        traefik._patch(tmp_path)
