"""Spark Connect sessions on the real node, as a user with sparkplane's client role only.

One real Spark Connect server (the costly part, ~1-2 min) carries the flow: ``session()`` hands
back a ready SparkSession, ``range`` and ``sql`` run on it; then a REAL Jupyter kernel (nbclient,
``.venv-jupyter``) runs ``examples/session.ipynb``, which attaches to it by name, runs a
DataFrame job and SQL, shows ``session.ui()`` (the UI answering through its port-forward, the
jobs from the driver's REST API), reads ``session.logs()`` and the short repr (no token); a
SECOND kernel runs the same notebook and re-attaches; a client without the token (or with a
wrong one) is refused by Spark's own check; the client cannot read the token's Secret; ``gc``
as the clean-up CronJob's identity leaves the session alone while it is active and ends it once
idle past its timeout, after which ``logs()`` reads the archive, and nothing it owned remains.
A second session, deleted before it serves, checks ``session_delete`` leaves nothing.

The notebook's session is also exposed through an Ingress (``expose="ingress"``) served by a REAL
ingress controller, Traefik (``dev-cluster traefik up``), TLS on: a pyspark client from the host,
as its own process trusting the CA sparkplane made, runs ``spark.range(10).count()`` through it
with the token; the same without the token is refused (UNAUTHENTICATED); a cleartext client is
refused by the TLS entry point; its Ingress, Service and TLS Secret go with the session.

``test_async_sessions``: ``AsyncSparkPlane`` starts two sessions at once (``asyncio.gather``),
both answer, and a ticker on the loop keeps ticking throughout (the loop is never blocked).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sparkplane import AsyncSparkPlane, SparkPlane
from sparkplane.errors import ForbiddenError
from sparkplane.kube import Kube
from sparkplane.settings import Settings
from sparkplane.usecases.session import saved_ca, saved_token
from sparkplane.vocab import SESSION_LABEL
from sparkplane_devcluster import DevCluster
from sparkplane_devcluster.traefik import serves_certificate
from tests.integration.helpers import wait_for
from tests.realnode.conftest import SERVICE_ACCOUNT
from tests.realnode.jupyter import run_notebook
from tests.realnode.sparkapps import SPARK_IMAGE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

IDLE_TIMEOUT = 30  # seconds: short, so that the TTL ends the session within the test
SIZING: dict[str, Any] = {
    "image": SPARK_IMAGE,
    "executors": 1,
    "driver_memory": "768m",
    "executor_memory": "512m",
    "driver_cores": "200m",  # the real node has 2 CPUs
    "executor_cores": "200m",
    "service_account": SERVICE_ACCOUNT,
}

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "session.ipynb"


def minted(kubeconfig: Path, namespace: str, identity: str, account: str, dest: Path) -> Path:
    """A kubeconfig of service account ``account`` holding sparkplane's ``identity`` role."""
    with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as sp:
        sp.rbac(identity, namespace, service_account=account, apply=True)
        dest.write_text(sp.kubeconfig(account, namespace).text())
    return dest


KINDS = [("v1", k) for k in ("Pod", "ConfigMap", "Service")] + [("networking.k8s.io/v1", "Ingress")]


def owned_leftovers(kube: Kube, namespace: str, name: str) -> list[str]:
    """What a session made that still exists (read as admin: the Secret too)."""
    left = [
        f"{kind}/{o['metadata']['name']}"
        for api, kind in KINDS
        for o in kube.list(api, kind, namespace)
        if not o["metadata"].get("deletionTimestamp")
        and o["metadata"].get("name", "").startswith(f"{name}-")
    ]
    secrets = kube.list("v1", "Secret", namespace, label_selector=f"{SESSION_LABEL}={name}")
    return left + [f"Secret/{s['metadata']['name']}" for s in secrets]


EXTERNAL_CLIENT = Path(__file__).with_name("external_client.py")
HOST = "localhost"  # the Ingress's host: the host reaches Traefik on loopback


def from_outside(url: str, ca: Path, port: int) -> dict[str, Any]:
    """What a Spark Connect client process on the host gets through the Ingress: with the
    token, without it, and in cleartext (:mod:`tests.realnode.external_client`)."""
    bare = url.split(";token=", maxsplit=1)[0]
    plain = url.replace(";use_ssl=true", "")
    assert plain.startswith(f"sc://{HOST}:{port}/;token=")  # pyspark sends it to localhost
    env = {**os.environ, "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(ca)}
    ran = subprocess.run(
        [sys.executable, str(EXTERNAL_CLIENT), url, bare, plain],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    found: dict[str, Any] = json.loads(ran.stdout.strip().splitlines()[-1])
    return found


def test_session_flow(
    real_cluster: DevCluster, kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    real_cluster.traefik_up(progress=lambda m: print(f"[traefik] {m}", flush=True))
    ingress_port = real_cluster.ports.traefik
    exposed = {"expose": "ingress", "host": HOST, "ingress_port": ingress_port}
    client_cfg = minted(kubeconfig, namespace, "client", "notebook", tmp_path / "client")
    gc_cfg = minted(kubeconfig, namespace, "gc", "sparkplane-gc", tmp_path / "gc")
    settings = replace(Settings.load(), cache_dir=tmp_path / "cache")
    sp = SparkPlane.connect(kubeconfig=client_cfg, namespace=namespace, settings=settings)

    # the notebook, in a REAL Jupyter kernel, creates the session (its token saved for this
    # user), runs a DataFrame job and SQL, shows its UI and log; a second kernel re-attaches
    env = {
        "KUBECONFIG": str(client_cfg),
        "SPARKPLANE_CACHE_DIR": str(settings.cache_dir),
        "SESSION_NAMESPACE": namespace,
        "SESSION_NAME": "nb",
        "SESSION_OPTIONS": json.dumps({**SIZING, **exposed, "idle_timeout": IDLE_TIMEOUT}),
    }
    for kernel in ("first", "second"):
        started = time.monotonic()
        ran = run_notebook(NOTEBOOK, env, tmp_path / kernel)
        print(f"{kernel} kernel ran the notebook in {time.monotonic() - started:.1f}s")
        assert ran.returncode == 0, ran.text + ran.stderr
        attach, dataframe, sql, ui, logs, closed = ran.cells[1:]
        assert "event loop running: True" in attach, attach  # Jupyter's loop runs the cell
        reattached = "attaching to the running session nb" in attach
        assert reattached == (kernel == "second"), attach
        assert reattached or "serving" in attach, attach  # the first one's progress
        assert "state=Running" in attach and f"namespace={namespace}" in attach, attach
        assert "groups: 10 first: {'k': 0, 'count': 10000}" in dataframe, dataframe
        assert "499500" in sql, sql
        assert "UI answers: 200" in ui and "Spark UI: http://127.0.0.1:" in ui, ui
        succeeded = json.loads(ui.splitlines()[-1].replace("'", '"'))["SUCCEEDED"]
        assert succeeded >= 2, ui  # this kernel's two queries' jobs at least
        assert logs.strip(), "no driver log lines"
        assert "state=closed" in closed, closed
        token = saved_token(settings, sp.kube, namespace, "nb")
        assert token and token not in ran.text, "the token was shown in the notebook"

    # without the token, or with a wrong one, Spark's own check refuses the client
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    from pyspark.sql.connect.session import SparkSession

    held = sp.session_attach("nb")  # kept past the end: its logs() then read the archive
    assert held.spark().sql("SELECT 6 * 7 AS x").collect()[0].x == 42  # activity: not idle
    for url in (held.url(token=False), f"sc://localhost:{held.port}/;token=wrong"):
        stranger = SparkSession.builder.remote(url).create()
        with pytest.raises(SparkConnectGrpcException, match="UNAUTHENTICATED"):
            stranger.range(3).count()
    # ...and the client role cannot read the token's Secret (only admins can)
    with pytest.raises(ForbiddenError):
        sp.kube.get("v1", "Secret", "nb-connect-token", namespace)

    # from outside the cluster, through the Ingress Traefik serves, TLS on
    url, ca = held.external_url(), saved_ca(settings, sp.kube, namespace, "nb")
    assert url == f"sc://{HOST}:{ingress_port}/;use_ssl=true;token={token}" and ca, (url, ca)
    assert held.ca_file == ca
    wait_for(  # Traefik serves the session's certificate once it has loaded its Ingress
        lambda: serves_certificate(ingress_port, HOST, ca),
        timeout=60,
        what="Traefik to route the session's Ingress",
    )
    outside = from_outside(url, ca, ingress_port)
    print(f"from outside: {outside}")
    assert outside["with_token"] == {"count": 10}, outside
    assert "UNAUTHENTICATED" in outside["without_token"].get("error", ""), outside
    # a cleartext client: Traefik's entry point has no cleartext route, the server is never reached
    assert "status: 404" in outside["plaintext"].get("error", ""), outside

    info = sp.session_get("nb")
    assert info.endpoint == f"{HOST}:{ingress_port}"
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
    assert "state=Ended" in repr(held)
    archived = list(held.logs())  # the driver is gone: from the archive gc wrote
    assert any("SparkConnectServer" in line for line in archived), archived[-5:]
    assert list(sp.session_logs("nb")) == archived  # by the session's name, as `session logs nb`
    held.close()

    # session_delete: a second session, ended before it serves, leaves nothing either
    sp.session_create("gone", wait=False, **SIZING)
    assert owned_leftovers(kube, namespace, "gone")
    sp.session_delete("gone", wait=True)
    wait_for(lambda: not owned_leftovers(kube, namespace, "gone"), timeout=60, what="nothing left")
    sp.close()


TICK = 0.05  # the loop's ticker: asleep this long between ticks
# two servers at once on the 2-CPU node: drivers only, dynamic allocation from 0 executors (none
# starts: a local relation's query is answered by the driver itself)
DRIVER_ONLY: dict[str, Any] = {
    **SIZING,
    "executors": 0,
    "conf": {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "0",
    },
}


def test_async_sessions(kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path) -> None:
    client_cfg = minted(kubeconfig, namespace, "client", "notebook", tmp_path / "client")
    settings = replace(Settings.load(), cache_dir=tmp_path / "cache")

    async def answer(sp: AsyncSparkPlane, name: str) -> int:
        async with sp.session(name, **DRIVER_ONLY) as spark:

            def query() -> int:
                frame = spark.createDataFrame([(6, 7)], ["a", "b"]).selectExpr("a * b AS x")
                return int(frame.collect()[0].x)

            return await asyncio.to_thread(query)  # pyspark's client blocks: off the loop

    async def main() -> tuple[list[int], list[float], float]:
        ticks: list[float] = []
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(TICK)

        ticking = asyncio.create_task(ticker())
        started = time.monotonic()
        async with await AsyncSparkPlane.connect(
            kubeconfig=client_cfg, namespace=namespace, settings=settings
        ) as sp:
            answers = list(await asyncio.gather(answer(sp, "one"), answer(sp, "two")))
        took = time.monotonic() - started
        stop.set()
        await ticking
        return answers, ticks, took

    answers, ticks, took = asyncio.run(main())
    assert answers == [42, 42]
    gaps = [later - earlier for earlier, later in itertools.pairwise(ticks)]
    print(f"two sessions at once: {took:.1f}s, {len(ticks)} ticks, longest gap {max(gaps):.2f}s")
    # a blocking call would stop the ticker for the seconds a session takes to start; a loaded
    # 2-core machine may delay a tick, never by that much
    assert max(gaps) < 2.0, f"the loop was blocked for {max(gaps):.1f}s"
    assert len(ticks) >= took / TICK / 4, (len(ticks), took)
    for name in ("one", "two"):
        wait_for(
            lambda name=name: not owned_leftovers(kube, namespace, name),  # type: ignore[misc]
            timeout=120,
            what=f"nothing left of session {name}",
        )
