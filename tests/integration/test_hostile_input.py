"""Hostile input through the CLI on the real cluster (issue 12): refused early, one message,
exit 2, no traceback, and nothing created in the namespace. Plus causes named right: a quota
403 is not RBAC, an RBAC 403 is, and an object too large is not a network error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sparkplane.errors import QuotaExceededError, TooLargeError, ValidationError
from sparkplane.kube import Kube
from sparkplane.kube.ownership import create_owned
from tests.hostile_inputs import PI, build
from tests.integration.helpers import pod, wait_for

KINDS = (
    ("v1", "Pod"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("v1", "Secret"),
    ("networking.k8s.io/v1", "Ingress"),
)


def cli(kubeconfig: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    return subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def created(kube: Kube, namespace: str) -> list[str]:
    """Everything in ``namespace`` that a submission could have made."""
    return [
        f"{kind}/{o['metadata']['name']}"
        for api, kind in KINDS
        for o in kube.list(api, kind, namespace)
        if o["metadata"]["name"] != "kube-root-ca.crt"
    ]


def test_every_hostile_input_is_refused_with_one_message_and_creates_nothing(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    cases = build(tmp_path / "hostile")
    assert len(cases) >= 55
    failures: list[str] = []
    for case in cases:
        proc = cli(kubeconfig, *case.args, *(("-n", namespace) if case.namespaced else ()))
        text = proc.stderr
        ok = (
            proc.returncode == 2
            and case.expect in text
            and "Traceback" not in text + proc.stdout
            and (not case.one_problem or ": 1 problem; nothing was created" in text)
        )
        if not ok:
            failures.append(f"{case.name}: rc={proc.returncode}\n{text[-600:]}")
    assert not failures, "\n".join(failures)
    assert created(kube, namespace) == []


def test_quota_403_is_not_reported_as_rbac(kubeconfig: Path, kube: Kube, namespace: str) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "no-pods"},
            "spec": {"hard": {"pods": "0"}},
        },
        namespace,
    )
    # the quota controller must have computed usage before admission enforces it
    wait_for(
        lambda: (kube.get("v1", "ResourceQuota", "no-pods", namespace).get("status") or {}).get(
            "hard"
        ),
        timeout=30,
        what="quota status",
    )
    with pytest.raises(QuotaExceededError):
        kube.create(pod("probe"), namespace)
    proc = cli(kubeconfig, "submit", "-f", str(PI), "-n", namespace)
    assert proc.returncode == 7, proc.stderr  # a submission refused at its first create
    assert "ResourceQuota exceeded" in proc.stderr and "not an RBAC problem" in proc.stderr
    assert "auth can-i" not in proc.stderr and "Traceback" not in proc.stderr
    assert created(kube, namespace) == []


def test_rbac_403_says_rbac(kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path) -> None:
    # the gc identity may list and delete pods, nothing else: submitting is an RBAC refusal
    assert cli(kubeconfig, "rbac", "gc", "-n", namespace, "--apply").returncode == 0
    target = tmp_path / "gc.kubeconfig"
    minted = cli(
        kubeconfig,
        *("kubeconfig", "--service-account", "sparkplane-gc", "-n", namespace),
        *("--duration", "15m", "-o", str(target)),
    )
    assert minted.returncode == 0, minted.stderr

    def refused() -> subprocess.CompletedProcess[str] | None:
        proc = cli(target, "submit", "-f", str(PI), "-n", namespace)
        return proc if "forbidden: cannot create pods" in proc.stderr else None

    proc = wait_for(refused, timeout=30, what="an RBAC refusal", interval=1)
    assert proc.returncode == 6 and "ResourceQuota" not in proc.stderr
    assert f"kubectl auth can-i create pods -n {namespace}" in proc.stderr
    assert created(kube, namespace) == []


def test_too_large_is_not_a_network_error(kube: Kube, namespace: str) -> None:
    def configmap(size: int) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"big-{size}"},
            "data": {"blob": "x" * size},
        }

    # straight to the API: a 10 MiB body is cut off by the server (was a raw SSLEOFError)
    # (depending on timing the server answers 413 or closes the connection: both are "too large")
    with pytest.raises(TooLargeError, match=r"too large|10\.0 MiB"):
        kube.create(configmap(10 * 1024 * 1024), namespace)
    with pytest.raises(TooLargeError, match="1048576 bytes"):
        kube.create(configmap(1024 * 1024 + 10), namespace)
    # through a submission: refused before the driver pod is created
    with pytest.raises(ValidationError, match="a ConfigMap holds at most 1 MiB"):
        create_owned(kube, pod("app-driver"), [configmap(1024 * 1024 + 10)], namespace=namespace)
    assert created(kube, namespace) == []
