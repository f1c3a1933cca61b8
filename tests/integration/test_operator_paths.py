"""The operator on the real control plane: every path of the state machine, by its history.

The operator runs in-process (watching only the test's namespace) with the Spark driver
simulator; KWOK plays the drivers through ``sim.sparkplane.io/*`` annotations.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from sparkplane.kube import Kube
from sparkplane.model import AppPhase, Reason, classify_apache_cr
from sparkplane.operator.core.states import history_states
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
TERMINAL = ("ResourceReleased", "TerminatedWithoutReleaseResources")


@pytest.fixture(scope="session")
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.fixture
def operator(kube: Kube, namespace: str, crds: None) -> Iterator[Operator]:
    with running_operator(kube, namespace) as op:
        yield op


def test_success_with_executors(kube: Kube, namespace: str, operator: Operator) -> None:
    tol = {"instanceConfig": {"initExecutors": 2, "minExecutors": 2, "maxExecutors": 2}}
    app = spark_app(
        "ok", tolerations=tol, executors=2, sim={"outcome": "Succeeded", "run-for": "3s"}
    )
    kube.create(app, namespace=namespace)
    wait_state(kube, namespace, "ok", "RunningHealthy")
    executors = pods(kube, namespace, "spark-app-selector=ok-0,spark-role=executor")
    assert len(executors) == 2
    for pod in executors:
        assert pod["metadata"]["ownerReferences"][0]["name"] == "ok-0-driver"
        assert pod["metadata"]["labels"]["spark.operator/spark-app-name"] == "ok"
        assert "sparkplane.io/simulated-by" in pod["metadata"]["annotations"]
    cr = wait_state(kube, namespace, "ok", *TERMINAL)
    assert history(cr) == [
        "Submitted",
        "DriverRequested",
        "DriverStarted",
        "DriverReady",
        "RunningHealthy",
        "Succeeded",
        "ResourceReleased",
    ] or history(cr) == [
        "Submitted",
        "DriverRequested",
        "DriverStarted",
        "DriverReady",
        "InitializedBelowThresholdExecutors",
        "RunningHealthy",
        "Succeeded",
        "ResourceReleased",
    ]
    assert classify_apache_cr(cr).phase is AppPhase.SUCCEEDED
    wait_for(lambda: not pods(kube, namespace, "spark-app-selector=ok-0"), timeout=15, what="gc")
    assert kube.get_or_none("v1", "ConfigMap", "ok-0-spark-drv-conf-map", namespace) is None
    operator.events.flush()
    reasons = {
        e["reason"]
        for e in kube.list("v1", "Event", namespace)
        if e["involvedObject"].get("name") == "ok"
    }
    # one Event per status write: Submitted -> DriverRequested, ... -> RunningHealthy, ...
    assert {"DriverRequested", "RunningHealthy", "ResourceReleased"} <= reasons


def test_failure(kube: Kube, namespace: str, operator: Operator) -> None:
    sim = {"outcome": "Failed", "run-for": "1s", "exit-code": "3"}
    kube.create(spark_app("bad", sim=sim), namespace=namespace)
    cr = wait_state(kube, namespace, "bad", *TERMINAL)
    assert history(cr)[-2:] == ["Failed", "ResourceReleased"]
    entry = cr["status"]["stateTransitionHistory"][str(len(history(cr)) - 2)]
    assert entry["lastObservedDriverStatus"]["phase"] == "Failed"
    assert classify_apache_cr(cr).phase is AppPhase.FAILED


def test_driver_start_timeout(kube: Kube, namespace: str, operator: Operator) -> None:
    tol = {"applicationTimeoutConfig": {"driverStartTimeoutMillis": 1500}}
    app = spark_app("slow", tolerations=tol, sim={"waiting-reason": "ImagePullBackOff"})
    kube.create(app, namespace=namespace)
    cr = wait_state(kube, namespace, "slow", *TERMINAL)
    assert history(cr) == [
        "Submitted",
        "DriverRequested",
        "DriverStartTimedOut",
        "ResourceReleased",
    ]
    assert kube.get_or_none("v1", "Pod", "slow-0-driver", namespace) is None
    assert classify_apache_cr(cr).reason is Reason.TIMED_OUT


def test_executor_start_timeout(kube: Kube, namespace: str, operator: Operator) -> None:
    tol = {
        "instanceConfig": {"initExecutors": 2, "minExecutors": 1},
        "applicationTimeoutConfig": {"executorStartTimeoutMillis": 1500},
    }
    sim = {"executor-waiting-reason": "ImagePullBackOff"}
    kube.create(spark_app("noexec", tolerations=tol, executors=2, sim=sim), namespace=namespace)
    cr = wait_state(kube, namespace, "noexec", *TERMINAL)
    assert history(cr)[-4:] == [
        "DriverReady",
        "InitializedBelowThresholdExecutors",
        "ExecutorsStartTimedOut",
        "ResourceReleased",
    ]


def test_lost_executors_below_threshold(kube: Kube, namespace: str, operator: Operator) -> None:
    tol = {"instanceConfig": {"initExecutors": 2, "minExecutors": 2, "maxExecutors": 2}}
    sim = {"executor-outcome": "Failed", "executor-run-for": "2s"}
    kube.create(spark_app("lossy", tolerations=tol, executors=2, sim=sim), namespace=namespace)
    cr = wait_state(kube, namespace, "lossy", "RunningWithBelowThresholdExecutors")
    assert "RunningHealthy" in history(cr)
    kube.delete(API, "SparkApplication", "lossy", namespace)


def test_eviction_is_driver_evicted(kube: Kube, namespace: str, operator: Operator) -> None:
    kube.create(spark_app("evictee"), namespace=namespace)
    wait_state(kube, namespace, "evictee", "RunningHealthy")
    kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/evictee-0-driver/eviction",
        body={
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "evictee-0-driver", "namespace": namespace},
        },
    )
    cr = wait_state(kube, namespace, "evictee", *TERMINAL)
    assert history(cr)[-2:] == ["DriverEvicted", "ResourceReleased"]
    assert classify_apache_cr(cr).reason in (Reason.EVICTED, Reason.PREEMPTED)


def test_restart_with_backoff_up_to_the_limit(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    tol = {
        "restartConfig": {
            "restartPolicy": "OnFailure",
            "maxRestartAttempts": 2,
            "restartBackoffMillis": 800,
        }
    }
    kube.create(spark_app("again", tolerations=tol, sim={"outcome": "Failed"}), namespace=namespace)
    cr = wait_state(kube, namespace, "again", *TERMINAL, timeout=60)
    status = cr["status"]
    assert status["currentAttemptSummary"]["attemptInfo"]["id"] == 2
    assert status["currentAttemptSummary"]["attemptInfo"]["restartCounter"] == 2
    assert history(cr)[-2:] == ["Failed", "ResourceReleased"]
    assert history(cr)[0] == "ScheduledToRestart"  # the previous attempt's trimmed history
    entries = sorted(status["stateTransitionHistory"].items(), key=lambda kv: int(kv[0]))
    restart = next(e for _, e in entries if e["currentStateSummary"] == "ScheduledToRestart")
    requested = next(e for _, e in entries if e["currentStateSummary"] == "DriverRequested")
    gap = parse_time(requested["lastTransitionTime"]) - parse_time(restart["lastTransitionTime"])
    assert gap.total_seconds() >= 0.7  # restartBackoffMillis 800, clock in microseconds
    previous = status["previousAttemptSummary"]
    assert previous["attemptInfo"]["id"] == 1
    previous_states = history_states({"stateTransitionHistory": previous["stateTransitionHistory"]})
    assert previous_states[0] == "ScheduledToRestart"  # attempt 1 began with the restart
    assert previous_states[-1] == "Failed"
    # released: the driver's delete was issued; the pod goes once its deletion completes
    wait_for(lambda: not pods(kube, namespace, "spark-role=driver"), timeout=30, what="driver gone")
    operator.events.flush()
    failed = [
        e
        for e in kube.list("v1", "Event", namespace)
        if e["involvedObject"].get("name") == "again" and e["reason"] == "Failed"
    ]
    # each of the three failures is a Warning Event (written alone before its restart or
    # release); the same words again are counted on one Event, as client-go's correlator does
    assert sum(int(e.get("count") or 1) for e in failed) == 3, failed
    assert {e["type"] for e in failed} == {"Warning"}


@pytest.mark.parametrize(
    ("policy", "outcome", "end", "kept"),
    [
        ("Never", "Failed", "ResourceReleased", False),
        ("Always", "Succeeded", "TerminatedWithoutReleaseResources", True),
        ("OnFailure", "Succeeded", "ResourceReleased", False),
        ("OnFailure", "Failed", "TerminatedWithoutReleaseResources", True),
    ],
)
def test_retention_policies(
    kube: Kube,
    namespace: str,
    operator: Operator,
    policy: str,
    outcome: str,
    end: str,
    kept: bool,
) -> None:
    tol = {"resourceRetainPolicy": policy}
    kube.create(spark_app("keep", tolerations=tol, sim={"outcome": outcome}), namespace=namespace)
    cr = wait_state(kube, namespace, "keep", *TERMINAL)
    assert history(cr)[-1] == end
    time.sleep(1)
    present = kube.get_or_none("v1", "Pod", "keep-0-driver", namespace) is not None
    assert present is kept
    cm = kube.get_or_none("v1", "ConfigMap", "keep-0-spark-drv-conf-map", namespace)
    assert (cm is not None) is kept


def test_retain_duration_then_ttl(kube: Kube, namespace: str, operator: Operator) -> None:
    """Apache's resource-retain-duration e2e: kept, then released with ``ResourceReleased``
    appended when the duration runs out (issue 27), then the CR deleted by its TTL."""
    tol = {
        "resourceRetainPolicy": "Always",
        "resourceRetainDurationMillis": 1500,
        "ttlAfterStopMillis": 9000,
    }
    kube.create(
        spark_app("brief", tolerations=tol, sim={"outcome": "Succeeded"}), namespace=namespace
    )
    wait_state(kube, namespace, "brief", "TerminatedWithoutReleaseResources")
    assert kube.get_or_none("v1", "Pod", "brief-0-driver", namespace) is not None
    cr = wait_state(kube, namespace, "brief", "ResourceReleased")
    assert history(cr)[-3:] == [
        "Succeeded",
        "TerminatedWithoutReleaseResources",
        "ResourceReleased",
    ]
    assert "retain duration" in cr["status"]["currentState"]["message"]
    wait_for(
        lambda: kube.get_or_none("v1", "Pod", "brief-0-driver", namespace) is None,
        timeout=15,
        what="retained driver deleted after resourceRetainDurationMillis",
    )
    wait_for(
        lambda: kube.get_or_none(API, "SparkApplication", "brief", namespace) is None,
        timeout=30,
        what="SparkApplication deleted after ttlAfterStopMillis",
    )


def test_ttl_after_stop(kube: Kube, namespace: str, operator: Operator) -> None:
    tol = {"ttlAfterStopMillis": 1000}
    kube.create(
        spark_app("ttl", tolerations=tol, sim={"outcome": "Succeeded"}), namespace=namespace
    )
    wait_state(kube, namespace, "ttl", "ResourceReleased")
    wait_for(
        lambda: kube.get_or_none(API, "SparkApplication", "ttl", namespace) is None,
        timeout=15,
        what="SparkApplication deleted after ttlAfterStopMillis",
    )


def test_spec_rejected_by_the_api_is_scheduling_failure(
    kube: Kube, namespace: str, operator: Operator
) -> None:
    conf = {"spark.kubernetes.driver.request.cores": "lots"}  # the API server rejects the pod
    kube.create(spark_app("rejected", conf=conf), namespace=namespace)
    cr = wait_state(kube, namespace, "rejected", *TERMINAL)
    assert history(cr)[-2] in ("SchedulingFailure", "Failed")
