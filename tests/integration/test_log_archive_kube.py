"""The in-cluster log archive (ConfigMaps in the app's namespace) on the real control plane.

The operator runs in-process with ``SPARKPLANE_LOG_ARCHIVE=kube``, KWOK plays the drivers and
serves their (simulated) logs through the API. Proves: the operator's release archives to a
ConfigMap that ``sparkplane logs`` reads as the least-privilege client identity; a driver
deleted with ``kubectl delete`` semantics (a DELETE with a grace period) is archived by the
operator; a log far over the ConfigMap limit is capped and accepted by the API server; expired
archives are removed by ``gc`` (as the gc identity) and by the operator's prune round.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sparkplane.history import pack
from sparkplane.history.archive import META, ArchiveMeta
from sparkplane.history.kube_store import KubeStore
from sparkplane.history.logs import read_archived
from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.deletions import REASON, prune_round
from sparkplane.settings import Settings
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator, spark_app, wait_state
from tests.integration.test_cli import run

pytestmark = pytest.mark.integration
HOLD = "sparkplane.io/test-hold"  # a finalizer: keeps a deleted pod visible, like a grace period


@pytest.fixture(scope="session")
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.fixture
def kube_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", "kube")
    monkeypatch.setenv("SPARKPLANE_CACHE_DIR", str(tmp_path / "cache"))  # no local archive


def _archive(kube: Kube, namespace: str, app: str) -> dict[str, Any] | None:
    return kube.get_or_none("v1", "ConfigMap", pack.configmap_name(app), namespace)


def _meta(cm: dict[str, Any]) -> ArchiveMeta:
    return ArchiveMeta.from_json(cm["data"][META].encode())


def _identity(kubeconfig: Path, kube: Kube, namespace: str, role: str, out: Path) -> Path:
    run(kubeconfig, "rbac", role, "-n", namespace, "--apply")
    account = f"sparkplane-{role}"
    run(kubeconfig, "kubeconfig", "--service-account", account, "-n", namespace, "-o", str(out))
    return out


@pytest.fixture
def client_identity(kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path) -> Iterator[Path]:
    yield _identity(kubeconfig, kube, namespace, "client", tmp_path / "client.kubeconfig")
    binding = f"sparkplane:client:cluster:{namespace}:sparkplane-client"
    kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding)


def test_released_app_is_read_from_its_configmap_by_the_client_identity(
    kube: Kube,
    namespace: str,
    crds: None,
    kube_archive: None,
    client_identity: Path,
    tmp_path: Path,
) -> None:
    app = spark_app("pi", sim={"outcome": "Succeeded", "run-for": "2s"})
    with running_operator(kube, namespace):
        kube.create(app, namespace=namespace)
        wait_state(kube, namespace, "pi", "ResourceReleased", timeout=60)
    cm = _archive(kube, namespace, "pi")
    assert cm is not None and cm["metadata"]["labels"][pack.LABEL] == "true"
    meta = _meta(cm)
    assert (meta.app, meta.reason, meta.driver_pod) == (
        "pi",
        "released by the operator",
        "pi-0-driver",
    )
    assert not cm["metadata"].get("ownerReferences")  # outlives the driver and the app
    assert kube.get_or_none("v1", "Pod", "pi-0-driver", namespace) is None

    # a laptop with no local archive, as the least-privilege client identity
    env = {"SPARKPLANE_CACHE_DIR": str(tmp_path / "laptop"), "SPARKPLANE_LOG_ARCHIVE": ""}
    shown = run(client_identity, "logs", "pi", env_extra=env)
    assert "Pi is roughly 3.1418" in shown.stdout
    assert "from the archive" in shown.stderr and "released by the operator" in shown.stderr
    tail = run(client_identity, "logs", "pi", "--tail", "1", env_extra=env)
    assert tail.stdout.strip() == "INFO SparkContext: Successfully stopped SparkContext"


def test_kubectl_delete_of_a_running_driver_is_archived_by_the_operator(
    kube: Kube, namespace: str, crds: None, kube_archive: None
) -> None:
    app = spark_app("victim", sim={"run-for": "1h"})
    with running_operator(kube, namespace):
        kube.create(app, namespace=namespace)
        wait_state(kube, namespace, "victim", "RunningHealthy", timeout=60)
        pod = kube.get("v1", "Pod", "victim-0-driver", namespace)
        # KWOK removes a deleted pod at once; a finalizer keeps it terminating, as a kubelet
        # does for the grace period, with its log still served
        kube.patch("v1", "Pod", "victim-0-driver", {"metadata": {"finalizers": [HOLD]}}, namespace)
        kube.delete("v1", "Pod", "victim-0-driver", namespace, grace_period_seconds=30)
        cm = wait_for(
            lambda: _archive(kube, namespace, "victim"), timeout=30, what="archive of victim"
        )
        kube.patch("v1", "Pod", "victim-0-driver", {"metadata": {"finalizers": None}}, namespace)
        meta = _meta(cm)
        assert meta.reason == REASON and meta.pod_uid == pod["metadata"]["uid"]
        found = read_archived(namespace, "victim", settings=Settings.load(), kube=kube)
        assert found is not None and "Pi is roughly 3.1418" in found[1]
        wait_for(
            lambda: kube.get_or_none("v1", "Pod", "victim-0-driver", namespace) is None,
            timeout=30,
            what="the driver gone",
        )
    kept = _archive(kube, namespace, "victim")
    assert kept is not None and _meta(kept).pod_uid == pod["metadata"]["uid"]


def _files(app: str, namespace: str, *, ago: timedelta, retain: int) -> dict[str, bytes]:
    meta = ArchiveMeta(
        namespace=namespace,
        app=app,
        driver_pod=f"{app}-driver",
        archived_at=(datetime.now(UTC) - ago).isoformat(timespec="seconds"),
        reason="killed",
        retain_seconds=retain,
    )
    return {"driver.log": f"the log of {app}\n".encode(), META: meta.to_json()}


def test_a_log_far_over_the_limit_is_capped_and_accepted(kube: Kube, namespace: str) -> None:
    store = KubeStore(kube, [namespace])
    noise = os.urandom(40 * 60_000).hex()  # ~4.8 MB that gzip cannot shrink
    lines = [f"line {i:06d} {noise[i * 80 : i * 80 + 80]}" for i in range(60_000)]
    files = _files("big", namespace, ago=timedelta(0), retain=600)
    files["driver.log"] = ("\n".join(lines) + "\n").encode()
    store.replace(f"{namespace}/big/", files)  # the API server takes it: under 1 MiB
    cm = _archive(kube, namespace, "big")
    assert cm is not None
    stored = sum(len(v) for v in cm["binaryData"].values()) * 3 // 4
    assert stored <= pack.BUDGET
    found = read_archived(namespace, "big", settings=Settings.load(), store=store)
    assert found is not None
    meta, kept = found
    assert meta.truncated and kept[0] == lines[0] and kept[-1] == lines[-1]
    assert any("lines dropped here" in line for line in kept)
    assert json.loads(cm["data"][META])["truncated"] is True


def test_expired_archives_are_removed_by_gc_and_by_the_operator(
    kubeconfig: Path,
    kube: Kube,
    namespace: str,
    tmp_path: Path,
    client_identity: Path,
) -> None:
    store = KubeStore(kube, [namespace])
    for app in ("old", "older"):
        store.replace(
            f"{namespace}/{app}/", _files(app, namespace, ago=timedelta(hours=2), retain=60)
        )
    store.replace(f"{namespace}/fresh/", _files("fresh", namespace, ago=timedelta(0), retain=3600))
    assert store.keys(f"{namespace}/") == sorted(
        f"{namespace}/{a}/{f}" for a in ("fresh", "old", "older") for f in ("driver.log", META)
    )
    env = {"SPARKPLANE_LOG_ARCHIVE": "kube", "SPARKPLANE_CACHE_DIR": str(tmp_path / "c")}
    # the gc CronJob's identity may create archives but not list or delete ConfigMaps (issue
    # 12): its run succeeds and leaves them to the operator
    gc_config = _identity(kubeconfig, kube, namespace, "gc", tmp_path / "gc.kubeconfig")
    run(gc_config, "gc", "-n", namespace, env_extra=env)
    assert _archive(kube, namespace, "old") is not None
    # a user's `gc` with the client's rights (configmaps list/delete) drops the expired ones
    run(client_identity, "gc", env_extra=env)
    assert _archive(kube, namespace, "old") is None and _archive(kube, namespace, "older") is None
    assert _archive(kube, namespace, "fresh") is not None

    store.replace(
        f"{namespace}/stale/", _files("stale", namespace, ago=timedelta(hours=1), retain=1)
    )
    # the operator's periodic round, with the store its settings name (the chart's: kube)
    prune_round(kube, (namespace,), settings=Settings(log_archive="kube"))
    assert _archive(kube, namespace, "stale") is None
    assert _archive(kube, namespace, "fresh") is not None
