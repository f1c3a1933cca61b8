"""Split brain: a leader frozen with SIGSTOP and thawed after another replica took over.

Two ``sparkplane operator run`` processes with leader election share a Lease. While 24 apps
are in flight the leader is frozen for 30 s (the lease is 6 s): the other replica takes the
Lease and finishes every app. Then the frozen one runs again, with its stale caches and its
queue full of keys. The test watches every pod, ConfigMap and Service of the namespace from the
start and asserts that no driver pod name was ever created twice (one uid per name: no attempt's
driver ran twice) and that nothing is left once every app is ResourceReleased (a ConfigMap or
Service whose create was already leaving the frozen process may land late; the sweeper must
remove it). Twice, so the second round freezes whichever replica leads then.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.kube.informer import Informer
from sparkplane.operator.deploy.install import install_crds
from sparkplane.security.rules import OPERATOR_LEASE
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import API, operator_kubeconfig, spark_app, state_of

pytestmark = pytest.mark.integration
APPS = 24
FREEZE_SECONDS = 30.0
LEASE_SECONDS = 6


class Creations:
    """Every uid ever seen per (kind, name), from watches opened before anything exists."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.uids: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.lock = threading.Lock()
        self.informers = [
            Informer(kube, "v1", kind, namespace=namespace)
            for kind in ("Pod", "ConfigMap", "Service")
        ]
        for informer in self.informers:
            informer.add_handler(self._record)

    def _record(self, event: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if meta["name"] == "kube-root-ca.crt":
            return
        with self.lock:
            self.uids[(str(obj.get("kind")), meta["name"])].add(meta["uid"])

    def __enter__(self) -> Creations:
        for informer in self.informers:
            informer.start().wait_synced(30)
        return self

    def __exit__(self, *exc: object) -> None:
        for informer in self.informers:
            informer.stop()

    def duplicates(self, kind: str) -> dict[tuple[str, str], set[str]]:
        with self.lock:
            return {k: set(v) for k, v in self.uids.items() if k[0] == kind and len(v) > 1}

    def drivers(self) -> int:
        with self.lock:
            return sum(1 for kind, name in self.uids if kind == "Pod" and name.endswith("-driver"))

    def live(self) -> list[str]:
        return [
            f"{informer.kind}/{obj['metadata']['name']}"
            for informer in self.informers
            for obj in informer.list()
            if obj["metadata"]["name"] != "kube-root-ca.crt"
        ]


@pytest.fixture
def replicas(kube: Kube, namespace: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Two ``operator run`` processes acting as the operator's service account with the
    shipped RBAC (never as admin), sharing the one Lease that role may renew."""
    lease = OPERATOR_LEASE
    kubeconfig = operator_kubeconfig(kube, namespace, tmp_path / "operator.kubeconfig")
    exe = str(Path(sys.executable).parent / "sparkplane")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for identity in ("replica-a", "replica-b"):
        log = (tmp_path / f"{identity}.log").open("wb")
        procs[identity] = subprocess.Popen(
            [
                exe,
                "operator",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "-n",
                namespace,
                "--lease-name",
                lease,
                "--lease-namespace",
                namespace,
                "--lease-seconds",
                str(LEASE_SECONDS),
                "--workers",
                "4",
                "--sweep-seconds",
                "5",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "POD_NAME": identity},
        )
    try:
        yield {"procs": procs, "lease": lease, "logs": tmp_path}
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGCONT)
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        for identity in procs:  # shown by pytest when the test failed
            print(f"--- {identity}:", (tmp_path / f"{identity}.log").read_text()[-3000:])


def _forbidden(logs: Path) -> list[str]:
    """Lines of the replicas' logs where the API refused the shipped RBAC."""
    return [
        f"{path.name}: {line}"
        for path in sorted(logs.glob("replica-*.log"))
        for line in path.read_text(errors="replace").splitlines()
        if "forbidden" in line.lower()
    ]


def _holder(kube: Kube, namespace: str, lease: str) -> str | None:
    got = kube.get_or_none("coordination.k8s.io/v1", "Lease", lease, namespace)
    return ((got or {}).get("spec") or {}).get("holderIdentity")


def _freeze_round(
    kube: Kube, namespace: str, replicas: dict[str, Any], seen: Creations, round_: int
) -> None:
    procs, lease = replicas["procs"], replicas["lease"]
    leader = wait_for(lambda: _holder(kube, namespace, lease), timeout=60, what="a leader")
    other = next(name for name in procs if name != leader)
    names = [f"r{round_}-app-{i:02d}" for i in range(APPS)]
    before = seen.drivers()
    for name in names:
        sim = {"outcome": "Succeeded", "run-for": "3s"}
        kube.create(spark_app(name, sim=sim), namespace=namespace)
    wait_for(lambda: seen.drivers() - before >= APPS // 3, timeout=60, what="drivers started")
    procs[leader].send_signal(signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        wait_for(
            lambda: _holder(kube, namespace, lease) == other,
            timeout=FREEZE_SECONDS,
            what=f"{other} taking the lease",
        )
        wait_for(
            lambda: all(state_of(kube, namespace, n) == "ResourceReleased" for n in names),
            timeout=FREEZE_SECONDS,
            interval=1.0,
            what="every app released by the new leader",
        )
        time.sleep(max(0.0, FREEZE_SECONDS - (time.monotonic() - frozen_at)))
    finally:
        procs[leader].send_signal(signal.SIGCONT)
    time.sleep(LEASE_SECONDS + 4)  # the thawed replica runs on its stale state
    assert seen.duplicates("Pod") == {}, "a driver pod of an attempt was created twice"
    wait_for(lambda: not seen.live(), timeout=30, what="no leftovers")
    assert all(state_of(kube, namespace, n) == "ResourceReleased" for n in names)
    assert seen.drivers() - before == APPS  # one driver per app, no second attempt


def test_frozen_leader_never_relaunches_or_leaks(
    kube: Kube, namespace: str, replicas: dict[str, Any]
) -> None:
    install_crds(kube)
    with Creations(kube, namespace) as seen:
        for round_ in range(2):
            _freeze_round(kube, namespace, replicas, seen, round_)
    for name, proc in replicas["procs"].items():
        assert proc.poll() is None, f"{name} died"
    assert not _forbidden(replicas["logs"]), _forbidden(replicas["logs"])[:10]
    # the sweeper (the backstop this test relies on) was never refused by the API; a thawed
    # replica's sweep stopped by its own fence ("not the leader") is the fence working
    lines = [
        line
        for path in replicas["logs"].glob("replica-*.log")
        for line in path.read_text(errors="replace").splitlines()
        if "sweep failed" in line and "not the leader" not in line
    ]
    assert not lines, lines[:10]
    for name in [f"r{r}-app-{i:02d}" for r in range(2) for i in range(APPS)]:
        cr = kube.get(API, "SparkApplication", name, namespace)
        assert cr["status"]["currentAttemptSummary"]["attemptInfo"]["id"] == 0
