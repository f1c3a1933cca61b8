"""The operator survives crashes and runs as two replicas; SparkCluster; metrics endpoint."""

from __future__ import annotations

import urllib.request

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.security.rules import OPERATOR_LEASE
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import (
    API,
    CrashingOperator,
    history,
    no_forbidden,
    operator_identity,
    pods,
    running_operator,
    spark_app,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.mark.parametrize("point", CrashingOperator.POINTS)
def test_killed_mid_reconcile_no_duplicate_driver(kube: Kube, namespace: str, point: str) -> None:
    """The status (DriverRequested) is committed before anything is created; a crash right
    after the commit or right after the creates leaves a state the next operator completes with
    exactly one driver."""
    with operator_identity(kube, namespace) as as_operator, no_forbidden():
        first = CrashingOperator(
            as_operator,
            OperatorSettings(
                namespaces=(namespace,), leader_election=False, workers=1, base_retry_seconds=60
            ),
            point,
        ).start()
        try:
            sim = {"outcome": "Succeeded", "run-for": "4s"}
            kube.create(spark_app("phoenix", sim=sim), namespace=namespace)
            assert first.crashed.wait(15)
        finally:
            first.stop()
    cr = kube.get(API, "SparkApplication", "phoenix", namespace)
    assert history(cr) == ["Submitted", "DriverRequested"]  # committed before acting
    before = pods(kube, namespace, "spark-role=driver")
    assert len(before) == (0 if point == "after_commit" else 1)

    with running_operator(kube, namespace, missing_driver_grace=0.5):
        cr = wait_state(kube, namespace, "phoenix", "RunningHealthy")
        drivers = pods(kube, namespace, "spark-role=driver")
        assert len(drivers) == 1
        if before:  # observed, not re-created
            assert drivers[0]["metadata"]["uid"] == before[0]["metadata"]["uid"]
        cr = wait_state(kube, namespace, "phoenix", "ResourceReleased")
    assert history(cr)[:2] == ["Submitted", "DriverRequested"]
    assert history(cr)[-2:] == ["Succeeded", "ResourceReleased"]


def test_two_replicas_one_leader_and_failover(kube: Kube, namespace: str) -> None:
    with operator_identity(kube, namespace) as as_operator, no_forbidden():
        _two_replicas(kube, as_operator, namespace)


def _two_replicas(kube: Kube, as_operator: Kube, namespace: str) -> None:
    lease = OPERATOR_LEASE  # the one Lease the shipped role may get and update
    settings = OperatorSettings(
        namespaces=(namespace,),
        workers=2,
        leader_election=True,
        lease_name=lease,
        lease_namespace=namespace,
        lease_seconds=3,
        renew_seconds=0.5,
    )
    a = Operator(as_operator, settings).start()
    b = Operator(as_operator, settings).start()
    stopped: list[Operator] = []
    try:
        wait_for(lambda: a.is_leader or b.is_leader, timeout=15, what="a leader")
        assert not (a.is_leader and b.is_leader)
        leader, follower = (a, b) if a.is_leader else (b, a)
        kube.create(spark_app("one"), namespace=namespace)
        wait_state(kube, namespace, "one", "RunningHealthy")
        leader.stop()
        stopped.append(leader)
        wait_for(lambda: follower.is_leader, timeout=15, what="the follower taking over")
        kube.create(spark_app("two"), namespace=namespace)
        wait_state(kube, namespace, "two", "RunningHealthy")
        got = kube.get("coordination.k8s.io/v1", "Lease", lease, namespace)
        assert got["spec"]["holderIdentity"] == follower.identity
    finally:
        for op in (a, b):
            if op not in stopped:
                op.stop()


def test_spark_cluster_basic_path(kube: Kube, namespace: str) -> None:
    cluster = {
        "apiVersion": API,
        "kind": "SparkCluster",
        "metadata": {"name": "qa"},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "clusterTolerations": {"instanceConfig": {"initWorkers": 2, "minWorkers": 1}},
            "sparkConf": {"spark.kubernetes.container.image": "apache/spark:4.0.0"},
        },
    }
    with running_operator(kube, namespace, simulate=False):
        kube.create(cluster, namespace=namespace)

        def state() -> str | None:
            got = kube.get_or_none(API, "SparkCluster", "qa", namespace)
            status = (got or {}).get("status") or {}
            return (status.get("currentState") or {}).get("currentStateSummary")

        wait_for(lambda: state() == "RunningHealthy", timeout=60, what="cluster RunningHealthy")
        for role in ("master", "worker"):
            sts = kube.get("apps/v1", "StatefulSet", f"qa-{role}", namespace)
            assert sts["metadata"]["ownerReferences"][0]["kind"] == "SparkCluster"
            assert kube.get("v1", "Service", f"qa-{role}-svc", namespace)
        workers = pods(kube, namespace, "spark-role=worker")
        assert len(workers) == 2
        kube.delete("apps/v1", "StatefulSet", "qa-master", namespace)
        wait_for(lambda: state() == "ResourceReleased", timeout=30, what="cluster released")
        got = kube.get(API, "SparkCluster", "qa", namespace)
        assert history(got) == ["Submitted", "RunningHealthy", "Failed", "ResourceReleased"]


def test_metrics_endpoint(kube: Kube, namespace: str) -> None:
    with running_operator(kube, namespace, metrics_port=0) as op:
        kube.create(spark_app("counted", sim={"outcome": "Succeeded"}), namespace=namespace)
        wait_state(kube, namespace, "counted", "ResourceReleased")
        port = op.metrics.port
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    assert 'sparkplane_operator_applications{state="ResourceReleased"} 1.0' in text
    assert "sparkplane_operator_state_seconds_bucket" in text
    assert "sparkplane_operator_reconcile_seconds_count" in text
