"""Kueue in the dev cluster, for real: the project's commands bring it up and set up queues, and
the Workload sparkplane builds for a queued SparkApplication is admitted by Kueue's own
webhooks and scheduler within the quota.

Two teams' LocalQueues share one ClusterQueue whose quota fits one app: team A's Workload is
admitted (all its executors), team B's waits with Kueue's reason and no admission, and is
admitted once team A's app is deleted (its Workload goes with it: the app owns it). The
SparkApplications are real objects (their CRD installed) but no operator runs here: this
proves the dev cluster's Kueue and the Workload (operator/core/workload.py), not the
operator's wiring. If Kueue cannot start the test fails (never skips).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core import workload as wl
from sparkplane.operator.core.driver import build_attempt, owner_ref
from sparkplane.operator.deploy.install import install_crds
from sparkplane.vocab import KUEUE_API_VERSION, QUEUE_NAME_LABEL, WORKLOAD
from sparkplane_devcluster.cluster import default_cache_dir
from tests.integration.helpers import delete_namespace, wait_for
from tests.integration.operator_helpers import API, spark_app
from tests.integration.test_cli import run

pytestmark = pytest.mark.integration


def _dev_cluster_env() -> dict[str, str]:
    """`sparkplane dev-cluster ...` addresses the suite's own cluster."""
    state = os.environ.get("SPARKPLANE_TEST_STATE_DIR") or str(default_cache_dir() / "test-cluster")
    return {
        "SPARKPLANE_STATE_DIR": state,
        "SPARKPLANE_DEV_PORT_BASE": os.environ.get("SPARKPLANE_TEST_PORT_BASE", "17443"),
    }


@pytest.fixture(scope="module")
def kueue(kubeconfig: Path) -> None:
    """Kueue started through the project's command (idempotent on a kept cluster)."""
    run(None, "dev-cluster", "kueue", "up", timeout=900, env_extra=_dev_cluster_env())


@pytest.fixture
def teams(kube: Kube, kueue: None) -> Iterator[tuple[str, str, str]]:
    """Two teams' namespaces with a LocalQueue ``team`` each on one new ClusterQueue of 3 CPUs."""
    suffix = uuid.uuid4().hex[:6]
    a, b, cq = f"team-a-{suffix}", f"team-b-{suffix}", f"shared-{suffix}"
    out = run(
        None,
        *("dev-cluster", "kueue", "queues", "-n", a, "-n", b),
        *("--cluster-queue", cq, "--local-queue", "team", "--cpu", "3", "--memory", "8Gi"),
        timeout=300,
        env_extra=_dev_cluster_env(),
    ).stdout
    assert f"ClusterQueue/{cq}" in out and f"LocalQueue/{b}/team" in out
    yield a, b, cq
    for ns in (a, b):
        delete_namespace(kube, ns)
    kube.delete(KUEUE_API_VERSION, "ClusterQueue", cq)


def _queued_app(kube: Kube, namespace: str) -> dict[str, Any]:
    """A real SparkApplication naming the queue: driver 1 CPU + 1 executor of 1 CPU."""
    cr = spark_app(
        "pi",
        executors=1,
        conf={
            "spark.kubernetes.driver.request.cores": "1",
            "spark.kubernetes.executor.request.cores": "1",
        },
    )
    cr["metadata"]["labels"] = {QUEUE_NAME_LABEL: "team"}
    created = kube.create(cr, namespace)
    return {"apiVersion": API, "kind": "SparkApplication", **created}


def _workload(kube: Kube, cr: dict[str, Any]) -> dict[str, Any]:
    built = build_attempt(cr, "sparkplane-operator")
    obj = wl.build_workload(
        cr,
        built.app_id,
        built.driver_pod,
        cr["spec"]["sparkConf"],
        non_jvm=False,
        owner=owner_ref(cr),
    )
    return kube.create(obj)


def _get(kube: Kube, w: dict[str, Any]) -> dict[str, Any]:
    meta = w["metadata"]
    return kube.get(KUEUE_API_VERSION, WORKLOAD, meta["name"], meta["namespace"])


@pytest.mark.timeout(600)
def test_two_teams_share_a_quota_the_second_waits_until_the_first_ends(
    kube: Kube, teams: tuple[str, str, str]
) -> None:
    a, b, _ = teams
    install_crds(kube)
    app_a = _queued_app(kube, a)
    first = _workload(kube, app_a)
    got = wait_for(
        lambda: wl.admission(_get(kube, first)), timeout=120, what="team A's Workload admitted"
    )
    assert got.executors == 1

    second = _workload(kube, _queued_app(kube, b))
    pending = wait_for(
        lambda: (w := _get(kube, second)).get("status", {}).get("conditions") and w,
        timeout=120,
        what="team B's Workload evaluated by Kueue",
    )
    assert wl.admission(pending) is None
    assert "insufficient" in wl.pending_message(pending).lower(), pending["status"]

    kube.delete(API, "SparkApplication", app_a["metadata"]["name"], a)  # the app ends
    wait_for(
        lambda: kube.get_or_none(KUEUE_API_VERSION, WORKLOAD, first["metadata"]["name"], a) is None,
        timeout=120,
        what="team A's Workload deleted with its app",
    )
    got = wait_for(
        lambda: wl.admission(_get(kube, second)), timeout=120, what="team B's Workload admitted"
    )
    assert got.executors == 1
