"""Spark Connect sessions on the real node, as a user with sparkplane's client role only.

One real Spark Connect server (the costly part, ~1-2 min) carries the flow: ``session()`` hands
back a ready SparkSession, ``range`` and ``sql`` run on it; a second Python process re-attaches by
name; a client without the token (or with a wrong one) is refused by Spark's own check; the
client cannot read the token's Secret; ``gc`` as the clean-up CronJob's identity leaves the
session alone while it is active and ends it once idle past its timeout, and nothing it owned
remains. A second session, deleted before it serves, checks ``session_delete`` leaves nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from sparkplane import SparkPlane
from sparkplane.errors import ForbiddenError
from sparkplane.kube import Kube
from sparkplane.settings import Settings
from sparkplane.vocab import SESSION_LABEL
from tests.integration.helpers import wait_for
from tests.realnode.conftest import SERVICE_ACCOUNT
from tests.realnode.sparkapps import SPARK_IMAGE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

IDLE_TIMEOUT = 30  # seconds: short, so that the TTL ends the session within the test
SIZING = {
    "image": SPARK_IMAGE,
    "executors": 1,
    "driver_memory": "768m",
    "executor_memory": "512m",
    "driver_cores": "200m",  # the real node has 2 CPUs
    "executor_cores": "200m",
    "service_account": SERVICE_ACCOUNT,
}

SECOND_PROCESS = """
import sys
from sparkplane import SparkPlane
with SparkPlane.connect(namespace=sys.argv[1]) as sp:
    with sp.session_attach("nb") as session:
        print("answer", session.spark().sql("SELECT 6 * 7 AS x").collect()[0].x)
"""


def minted(kubeconfig: Path, namespace: str, identity: str, account: str, dest: Path) -> Path:
    """A kubeconfig of service account ``account`` holding sparkplane's ``identity`` role."""
    with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as sp:
        sp.rbac(identity, namespace, service_account=account, apply=True)
        dest.write_text(sp.kubeconfig(account, namespace).text())
    return dest


def owned_leftovers(kube: Kube, namespace: str, name: str) -> list[str]:
    """What a session made that still exists (read as admin: the Secret too)."""
    left = [
        f"{kind}/{o['metadata']['name']}"
        for kind in ("Pod", "ConfigMap", "Service")
        for o in kube.list("v1", kind, namespace)
        if not o["metadata"].get("deletionTimestamp")
        and o["metadata"].get("name", "").startswith(f"{name}-")
    ]
    secrets = kube.list("v1", "Secret", namespace, label_selector=f"{SESSION_LABEL}={name}")
    return left + [f"Secret/{s['metadata']['name']}" for s in secrets]


def test_session_flow(kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path) -> None:
    client_cfg = minted(kubeconfig, namespace, "client", "notebook", tmp_path / "client")
    gc_cfg = minted(kubeconfig, namespace, "gc", "sparkplane-gc", tmp_path / "gc")
    settings = replace(Settings.load(), cache_dir=tmp_path / "cache")
    progress: list[str] = []
    started = time.monotonic()
    sp = SparkPlane.connect(kubeconfig=client_cfg, namespace=namespace, settings=settings)
    with sp.session(
        "nb", keep=True, idle_timeout=IDLE_TIMEOUT, on_progress=progress.append, **SIZING
    ) as spark:
        ready = time.monotonic() - started
        assert spark.range(1000).selectExpr("sum(id) AS s").collect()[0].s == 499500
        assert spark.sql("SELECT 1 + 1 AS x").collect()[0].x == 2
    assert "serving" in progress, progress
    print(f"session() to ready: {ready:.1f}s; progress: {progress}")

    # another process of the same user re-attaches by name (its token saved at create)
    env = {
        **os.environ,
        "KUBECONFIG": str(client_cfg),
        "SPARKPLANE_CACHE_DIR": str(settings.cache_dir),
    }
    out = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, namespace],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert "answer 42" in out.stdout, out.stdout + out.stderr

    # without the token, or with a wrong one, Spark's own check refuses the client
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql.connect.session import SparkSession

    with sp.session_attach("nb") as session:
        for url in (session.url(token=False), f"sc://localhost:{session.port}/;token=wrong"):
            stranger = SparkSession.builder.remote(url).create()
            with pytest.raises(SparkConnectGrpcException, match="UNAUTHENTICATED"):
                stranger.range(3).count()
    # ...and the client role cannot read the token's Secret (only admins can)
    with pytest.raises(ForbiddenError):
        sp.kube.get("v1", "Secret", "nb-connect-token", namespace)

    info = sp.session_get("nb")
    assert info.owner == f"system:serviceaccount:{namespace}:notebook"
    assert info.idle_timeout == timedelta(seconds=IDLE_TIMEOUT)
    assert info.idle is not None and info.idle < timedelta(seconds=IDLE_TIMEOUT)

    # the clean-up CronJob's identity: an active session stays, an idle one is ended
    with SparkPlane.connect(kubeconfig=gc_cfg, namespace=namespace, settings=settings) as gc:
        first = [d for d in gc.gc(older_than=None) if d.name == info.pod]
        assert first and not first[0].delete, first
        wait_for(
            lambda: (sp.session_get("nb").idle or timedelta()) >= timedelta(seconds=IDLE_TIMEOUT),
            timeout=IDLE_TIMEOUT + 120,
            what="the session to be idle past its timeout",
            interval=3.0,
        )
        ended = [d for d in gc.gc(older_than=None) if d.name == info.pod]
        assert ended and ended[0].delete and "idle" in ended[0].reason, ended
    wait_for(
        lambda: not owned_leftovers(kube, namespace, "nb"),
        timeout=120,
        what="nothing left of session nb",
    )
    assert sp.session_list() == []

    # session_delete: a second session, ended before it serves, leaves nothing either
    sp.session_create("gone", wait=False, **SIZING)
    assert owned_leftovers(kube, namespace, "gone")
    sp.session_delete("gone", wait=True)
    wait_for(lambda: not owned_leftovers(kube, namespace, "gone"), timeout=60, what="nothing left")
    sp.close()
