"""Issue 26 against the real control plane, the operator acting with its shipped RBAC.

* Finding 6, bounds: ``@every 1s`` made 62 apps in 62 s, ``restartBackoffMillis: 0`` 111
  attempts in 45 s, ``initWorkers: 100000`` a StatefulSet of 100 000 replicas. Now the schedule
  and the cluster are refused (a status and a Warning Event naming the field, the limit and the
  setting; nothing created), the backoff is raised and the restarts stop at the operator's cap,
  and an app asking for too many executors fails before its driver exists.
* Finding 8: ``containers: "x"`` in a template (the CRD accepts it) made the operator retry
  forever with no status or Event; now the app or cluster fails with the field named.
* Finding 4 (the objects): a SparkCluster's Secret and NetworkPolicy are created by the
  operator's own role, its daemons take the secret from the Secret, and an app of the same
  namespace naming the cluster gets it too (the real refusal is tests/realnode).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core.scheduled_spec import GROUP, KIND, VERSION
from sparkplane.operator.core.settings import Limits
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.vocab import parse_time
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import (
    API,
    history,
    pods,
    running_operator,
    spark_app,
    wait_state,
)

pytestmark = pytest.mark.integration
LIMITS = Limits(
    min_schedule_seconds=60,
    min_restart_backoff_millis=1500,
    max_restart_attempts=2,
    max_workers=5,
    max_executors=10,
)
TERMINAL = ("ResourceReleased", "TerminatedWithoutReleaseResources")


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[Operator]:
    install_crds(kube)
    with running_operator(kube, namespace, limits=LIMITS) as op:
        yield op


def events(kube: Kube, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in kube.list("v1", "Event", namespace) if e["involvedObject"]["name"] == name]


def cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "SparkCluster",
        "metadata": {"name": name},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "sparkConf": {"spark.kubernetes.container.image": "apache/spark:4.0.0"},
            **spec,
        },
    }


def cluster_state(kube: Kube, namespace: str, name: str) -> str | None:
    got = kube.get_or_none(API, "SparkCluster", name, namespace)
    return (((got or {}).get("status") or {}).get("currentState") or {}).get("currentStateSummary")


def test_a_schedule_every_second_is_refused_and_makes_no_run(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    template = spark_app("unused", sim={"outcome": "Succeeded"})["spec"]
    body = {"schedule": "@every 1s", "template": template}
    kube.create(
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "metadata": {"name": "fast"},
            "spec": body,
        },
        namespace=namespace,
    )

    def refused() -> dict[str, Any] | None:
        got = kube.get(f"{GROUP}/{VERSION}", KIND, "fast", namespace)
        status = got.get("status") or {}
        return status if status.get("scheduleState") == "FailedValidation" else None

    status = wait_for(refused, timeout=20, what="the schedule refused")
    assert (
        "runs every 1s, more often than the operator's minimum interval of 60s"
        in (status["reason"])
    )
    assert "--min-schedule-seconds" in status["reason"]
    time.sleep(5)  # the 62-apps-in-62-s finding: five seconds, not one run
    assert not kube.list(API, "SparkApplication", namespace)
    operator.events.flush()
    (event,) = [e for e in events(kube, namespace, "fast") if e["reason"] == "FailedValidation"]
    assert event["type"] == "Warning" and "minimum interval of 60s" in event["message"]


def test_restarts_wait_the_minimum_backoff_and_stop_at_the_cap(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    tol = {
        "restartConfig": {
            "restartPolicy": "Always",
            "maxRestartAttempts": 1000,
            "restartBackoffMillis": 0,
        }
    }
    kube.create(spark_app("loop", tolerations=tol, sim={"outcome": "Failed"}), namespace=namespace)
    cr = wait_state(kube, namespace, "loop", *TERMINAL, timeout=60)
    info = cr["status"]["currentAttemptSummary"]["attemptInfo"]
    assert (info["id"], info["restartCounter"]) == (2, 2)  # attempts 0, 1, 2: not 111
    assert "above the operator's limit of 2 restarts" in cr["status"]["currentState"]["message"]
    entries = sorted(cr["status"]["stateTransitionHistory"].items(), key=lambda kv: int(kv[0]))
    restart = next(e for _, e in entries if e["currentStateSummary"] == "ScheduledToRestart")
    requested = next(e for _, e in entries if e["currentStateSummary"] == "DriverRequested")
    gap = parse_time(requested["lastTransitionTime"]) - parse_time(restart["lastTransitionTime"])
    assert gap.total_seconds() >= 1.4  # 0 ms asked, 1500 ms applied
    operator.events.flush()
    notes = [e["message"] for e in events(kube, namespace, "loop")]
    assert any("restartBackoffMillis 0 raised to the operator's minimum 1500 ms" in m
               for m in notes), notes  # fmt: skip


def test_too_many_executors_fail_before_any_driver_exists(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    app = spark_app("wide", conf={"spark.dynamicAllocation.maxExecutors": "100000"})
    kube.create(app, namespace=namespace)
    cr = wait_state(kube, namespace, "wide", *TERMINAL)
    assert history(cr) == ["Submitted", "Failed", "ResourceReleased"]
    message = cr["status"]["stateTransitionHistory"]["1"]["message"]
    assert "spec.sparkConf[spark.dynamicAllocation.maxExecutors]" in message
    assert "100000 executors exceed the operator's limit of 10" in message
    assert not pods(kube, namespace, "spark-role=driver")
    operator.events.flush()
    assert any("--max-executors" in e["message"] for e in events(kube, namespace, "wide"))


def test_a_cluster_of_100000_workers_is_refused_and_nothing_is_created(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    tol = {"instanceConfig": {"initWorkers": 100000, "minWorkers": 1, "maxWorkers": 100000}}
    kube.create(cluster("huge", clusterTolerations=tol), namespace=namespace)
    wait_for(lambda: cluster_state(kube, namespace, "huge") == "ResourceReleased", timeout=20,
             what="the cluster refused")  # fmt: skip
    got = kube.get(API, "SparkCluster", "huge", namespace)
    assert history(got) == ["Submitted", "SchedulingFailure", "ResourceReleased"]
    assert not kube.list("apps/v1", "StatefulSet", namespace)
    operator.events.flush()
    (event,) = [e for e in events(kube, namespace, "huge") if e["type"] == "Warning"]
    assert "initWorkers: 100000 workers exceed the operator's limit of 5" in event["message"]
    assert "--max-workers" in event["message"]


def test_a_template_with_containers_x_fails_with_its_field(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    app = spark_app("shapeless")
    app["spec"]["driverSpec"] = {"podTemplateSpec": {"spec": {"containers": "x"}}}
    kube.create(app, namespace=namespace)  # the CRD accepts it
    broken = cluster("shapeless-sc")
    broken["spec"]["workerSpec"] = {"statefulSetSpec": {"template": {"spec": {"containers": "x"}}}}
    kube.create(broken, namespace=namespace)
    cr = wait_state(kube, namespace, "shapeless", *TERMINAL)
    assert history(cr) == ["Submitted", "Failed", "ResourceReleased"]
    assert (
        "spec.driverSpec.podTemplateSpec" in cr["status"]["stateTransitionHistory"]["1"]["message"]
    )
    wait_for(lambda: cluster_state(kube, namespace, "shapeless-sc") == "ResourceReleased",
             timeout=20, what="the cluster failed")  # fmt: skip
    operator.events.flush()
    for name in ("shapeless", "shapeless-sc"):
        warnings = [e["message"] for e in events(kube, namespace, name) if e["type"] == "Warning"]
        assert any("containers: must be a list (got str)" in m for m in warnings), warnings
    assert not pods(kube, namespace, "spark-role")


def test_a_clusters_secret_and_policy_are_made_and_its_apps_get_the_secret(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    tol = {"instanceConfig": {"initWorkers": 1, "minWorkers": 1, "maxWorkers": 1}}
    kube.create(cluster("sc", clusterTolerations=tol), namespace=namespace)
    wait_for(lambda: cluster_state(kube, namespace, "sc") == "RunningHealthy", timeout=60,
             what="cluster RunningHealthy")  # fmt: skip
    secret = kube.get("v1", "Secret", "sc-spark-auth", namespace)  # admin reads it; the operator
    assert secret["immutable"] is True and len(secret["data"]["secret"]) >= 40  # never does
    policy = kube.get("networking.k8s.io/v1", "NetworkPolicy", "sc-spark-cluster", namespace)
    peers = [p["podSelector"]["matchLabels"] for r in policy["spec"]["ingress"] for p in r["from"]]
    assert peers == [{"spark.operator/spark-cluster-name": "sc"},
                     {"sparkplane.io/spark-cluster": "sc"}]  # fmt: skip
    for role in ("master", "worker"):
        (pod,) = pods(kube, namespace, f"spark-role={role}")
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["_SPARK_AUTH_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == "sc-spark-auth"
        assert '-Dspark.authenticate="true"' in env[f"SPARK_{role.upper()}_OPTS"]["value"]
    master = {"spark.master": f"spark://sc-master-svc.{namespace}.svc:7077"}
    kube.create(spark_app("member", conf=master, sim={"outcome": "Succeeded", "run-for": "30s"}),
                namespace=namespace)  # fmt: skip
    stranger = {"spark.master": "spark://nosuch-master-svc:7077"}
    long_run = {"outcome": "Succeeded", "run-for": "30s"}
    kube.create(spark_app("stranger", conf=stranger, sim=long_run), namespace=namespace)
    wait_state(kube, namespace, "member", "RunningHealthy", "DriverReady", "DriverStarted")
    wait_state(kube, namespace, "stranger", "RunningHealthy", "DriverReady", "DriverStarted")
    (member,) = pods(kube, namespace, "spark-role=driver,spark.operator/spark-app-name=member")
    assert member["metadata"]["labels"]["sparkplane.io/spark-cluster"] == "sc"
    env = {e["name"]: e for e in member["spec"]["containers"][0]["env"]}
    assert env["_SPARK_AUTH_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == "sc-spark-auth"
    (other,) = pods(kube, namespace, "spark-role=driver,spark.operator/spark-app-name=stranger")
    assert "sparkplane.io/spark-cluster" not in other["metadata"]["labels"]
    assert "_SPARK_AUTH_SECRET" not in {e["name"] for e in other["spec"]["containers"][0]["env"]}
    # released with its cluster: the NetworkPolicy by the operator, the Secret by the GC
    kube.delete(API, "SparkCluster", "sc", namespace)
    wait_for(
        lambda: kube.get_or_none("v1", "Secret", "sc-spark-auth", namespace) is None,
        timeout=60,
        what="the Secret gone with its SparkCluster",
    )
