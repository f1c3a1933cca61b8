"""Kueue in the dev cluster, for real: the project's commands bring it up and set up queues, the
Workload sparkplane builds for a queued SparkApplication is admitted by Kueue's own webhooks and
scheduler within the quota, and the operator (its shipped RBAC; apps created by the shipped
client identity, the tenant) queues apps on it: two teams' ClusterQueues in one cohort with a
borrowing limit, a dynamically allocated app reserving maxExecutors, a preemption by a
higher-priority Workload (the app suspended, requeued, resumed), a preemption by an app of a
higher WorkloadPriorityClass (and an app naming a class that does not exist held until it
does), and Kubeflow's v1beta2 API
waiting for quota. KWOK plays the drivers.

Two teams' LocalQueues share one ClusterQueue whose quota fits one app: team A's Workload is
admitted (all its executors), team B's waits with Kueue's reason and no admission, and is
admitted once team A's app is deleted (its Workload goes with it: the app owns it). The
SparkApplications are real objects (their CRD installed) but no operator runs here: this
proves the dev cluster's Kueue and the Workload (operator/core/workload.py), not the
operator's wiring (the tests after it do). If Kueue cannot start the tests fail (never skip).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane.history import pack
from sparkplane.kube import Kube, connect
from sparkplane.operator.core import workload as wl
from sparkplane.operator.core.driver import build_attempt, owner_ref
from sparkplane.operator.deploy.install import install_crds
from sparkplane.vocab import (
    KUBEFLOW_API_VERSION,
    KUEUE_API_VERSION,
    KUEUE_GROUP,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    QUOTA_GATE,
    QUOTA_RELEASED_ANNOTATION,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
)
from sparkplane_devcluster.cluster import default_cache_dir, node_ready
from sparkplane_devcluster.components import node_manifest
from tests.integration.helpers import delete_namespace, wait_for
from tests.integration.operator_helpers import (
    API,
    SIM,
    history,
    pods,
    running_operator,
    spark_app,
    wait_state,
)
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


# --- the operator queues apps on Kueue -------------------------------------------------------

FLAVOR = "default-flavor"
RUNNING = ("RunningHealthy", "RunningWithPartialCapacity")
DA = "spark.dynamicAllocation"


def _cluster_queue(name: str, cpu: str, flavor: str = FLAVOR, **spec: Any) -> dict[str, Any]:
    """A ClusterQueue of ``cpu`` (memory plenty) on ``flavor`` (the dev cluster's); ``spec``
    adds e.g. its cohort or preemption; a ``borrowing`` cpu limit goes on its cpu quota."""
    borrowing = spec.pop("borrowing", None)
    cpu_quota: dict[str, Any] = {"name": "cpu", "nominalQuota": cpu}
    if borrowing is not None:
        cpu_quota["borrowingLimit"] = borrowing
    resources = [cpu_quota, {"name": "memory", "nominalQuota": "64Gi"}]
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
            **spec,
        },
    }


@pytest.fixture
def queues(kube: Kube, namespace: str, kueue: None) -> Iterator[Callable[..., None]]:
    """Make (or change) ClusterQueues, each with a LocalQueue in ``namespace``; removed after."""
    kube.apply(
        {"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR}}
    )
    made: list[str] = []

    def make(local: str, cluster_queue: dict[str, Any]) -> None:
        kube.apply(cluster_queue)
        if cluster_queue["metadata"]["name"] not in made:  # applied again: a new quota
            made.append(cluster_queue["metadata"]["name"])
        kube.apply(
            {
                "apiVersion": KUEUE_API_VERSION,
                "kind": "LocalQueue",
                "metadata": {"name": local, "namespace": namespace},
                "spec": {"clusterQueue": cluster_queue["metadata"]["name"]},
            }
        )

        def active() -> bool:
            cq = kube.get(KUEUE_API_VERSION, "ClusterQueue", cluster_queue["metadata"]["name"])
            conds = cq.get("status", {}).get("conditions") or []
            return any(c["type"] == "Active" and c["status"] == "True" for c in conds)

        wait_for(
            active, timeout=60, what=f"ClusterQueue {cluster_queue['metadata']['name']} active"
        )

    yield make
    for name in made:
        kube.delete(KUEUE_API_VERSION, "ClusterQueue", name)


@pytest.fixture
def tenant(kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The shipped client identity (``sparkplane rbac client``): the tenant creating apps."""
    path = tmp_path / "client.kubeconfig"
    run(kubeconfig, "rbac", "client", "-n", namespace, "--apply")
    run(
        kubeconfig,
        "kubeconfig",
        "--service-account",
        "sparkplane-client",
        "-n",
        namespace,
        "-o",
        str(path),
    )
    yield path
    binding = f"sparkplane:client:cluster:{namespace}:sparkplane-client"
    kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", binding)


def _app(
    name: str, queue: str, *, cpu: str = "1", executors: int = 1, **conf: str
) -> dict[str, Any]:
    cr = spark_app(
        name,
        executors=executors,
        conf={
            "spark.kubernetes.driver.request.cores": cpu,
            "spark.kubernetes.executor.request.cores": cpu,
            **conf,
        },
    )
    cr["metadata"]["labels"] = {QUEUE_NAME_LABEL: queue}
    return cr


def _sim(cr: dict[str, Any], **knobs: str) -> dict[str, Any]:
    cr["spec"]["sparkConf"].update({f"{SIM}/{k}": v for k, v in knobs.items()})
    return cr


def _app_pods(kube: Kube, namespace: str, name: str) -> list[dict[str, Any]]:
    return pods(kube, namespace, f"spark.operator/spark-app-name={name}")


def _workloads(kube: Kube, namespace: str) -> dict[str, dict[str, Any]]:
    return {w["metadata"]["name"]: w for w in kube.list(KUEUE_API_VERSION, WORKLOAD, namespace)}


def _events(kube: Kube, namespace: str, name: str) -> list[str]:
    return [
        str(e.get("reason"))
        for e in kube.list("v1", "Event", namespace)
        if e["involvedObject"].get("name") == name
        and e["involvedObject"].get("kind") == "SparkApplication"
    ]


def _message(cr: dict[str, Any]) -> str:
    return str(cr["status"]["currentState"]["message"])


@pytest.mark.timeout(300)
def test_the_operator_queues_two_teams_in_one_cohort_with_a_borrowing_limit(
    kube: Kube, namespace: str, queues: Callable[..., None], tenant: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    cohort = f"co-{suffix}"
    queues("team-a", _cluster_queue(f"a-{suffix}", "1", cohortName=cohort, borrowing="1"))
    queues("team-b", _cluster_queue(f"b-{suffix}", "2", cohortName=cohort))
    install_crds(kube)
    as_tenant = Kube(connect(kubeconfig=tenant))
    with running_operator(kube, namespace):
        # team A's first app needs 2 CPUs: its 1 and 1 borrowed from team B
        as_tenant.create(
            _sim(_app("a1", "team-a"), outcome="Succeeded", **{"run-for": "15s"}), namespace
        )
        wait_state(kube, namespace, "a1", *RUNNING, timeout=60)
        # team A's second (dynamic allocation, 1 CPU: driver and 2 executors of 250m) would
        # fit the cohort's free CPU but not team A's borrowing limit; team B's (2 CPUs) finds
        # 1 of its 2 lent to team A: both wait, with no pod
        dynamic = {f"{DA}.enabled": "true", f"{DA}.shuffleTracking.enabled": "true"}
        dynamic |= {f"{DA}.maxExecutors": "2", f"{DA}.minExecutors": "0"}
        a2 = _app("a2", "team-a", cpu="250m", executors=0, **dynamic)
        a2["spec"]["sparkConf"]["spark.kubernetes.driver.request.cores"] = "500m"
        as_tenant.create(_sim(a2, **{"run-for": "600s"}), namespace)
        as_tenant.create(_sim(_app("b1", "team-b"), **{"run-for": "600s"}), namespace)
        for name in ("a2", "b1"):
            cr = wait_state(kube, namespace, name, "AdmissionPending", timeout=30)
            assert f"{name}-0" in _message(cr)
        workloads = wait_for(
            lambda: (
                (found := _workloads(kube, namespace))
                and all(
                    found.get(n, {}).get("status", {}).get("conditions") for n in ("a2-0", "b1-0")
                )
                and found
            ),
            timeout=30,
            what="the waiting Workloads evaluated by Kueue",
        )
        assert wl.admission(workloads["a1-0"]) is not None
        for name in ("a2-0", "b1-0"):
            assert wl.admission(workloads[name]) is None, workloads[name]["status"]
        assert [p["count"] for p in workloads["a2-0"]["spec"]["podSets"]] == [1, 2]
        assert not _app_pods(kube, namespace, "a2") and not _app_pods(kube, namespace, "b1")
        shown = run(tenant, "get", "apps", "-n", namespace).stdout
        assert "AdmissionPending" in shown, shown
        wait_for(
            lambda: "KueueAdmitted" in _events(kube, namespace, "a1"),
            timeout=30,
            what="a1's KueueAdmitted Event",
        )
        wait_for(
            lambda: "KueueAdmissionPending" in _events(kube, namespace, "b1"),
            timeout=30,
            what="b1's KueueAdmissionPending Event",
        )

        # team A's first app ends: its Workload goes, both waiting apps are admitted and start
        wait_state(kube, namespace, "a1", "ResourceReleased", timeout=90)
        wait_for(
            lambda: "a1-0" not in _workloads(kube, namespace),
            timeout=30,
            what="a1's Workload deleted",
        )
        for name in ("b1", "a2"):
            wait_state(kube, namespace, name, *RUNNING, timeout=60)
        props = next(
            cm["data"]["spark.properties"]
            for cm in kube.list("v1", "ConfigMap", namespace)
            if cm["metadata"]["name"].startswith("a2-0")
            and "spark.properties" in (cm.get("data") or {})
        )
        assert f"{DA}.maxExecutors=2" in props  # the admitted count, what Kueue reserved
        admitted = wl.admission(_workloads(kube, namespace)["a2-0"])
        assert admitted is not None and admitted.executors == 2
    as_tenant.close()


@pytest.mark.timeout(300)
def test_a_preempted_app_is_suspended_requeued_and_resumed(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    tenant: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", "kube")  # the released driver's log: in-cluster
    monkeypatch.setenv("SPARKPLANE_CACHE_DIR", str(tmp_path / "cache"))
    suffix = uuid.uuid4().hex[:6]
    preemption = {"withinClusterQueue": "LowerPriority"}
    queues("prio", _cluster_queue(f"p-{suffix}", "2", preemption=preemption))
    install_crds(kube)
    as_tenant = Kube(connect(kubeconfig=tenant))
    with running_operator(kube, namespace):
        as_tenant.create(_sim(_app("low", "prio"), **{"run-for": "600s"}), namespace)
        wait_state(kube, namespace, "low", *RUNNING, timeout=60)
        assert _app_pods(kube, namespace, "low")

        urgent = {
            "apiVersion": KUEUE_API_VERSION,
            "kind": WORKLOAD,
            "metadata": {"name": "urgent", "namespace": namespace},
            "spec": {
                "queueName": "prio",
                "priority": 1000,
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "c",
                                        "image": "x",
                                        "resources": {"requests": {"cpu": "2"}},
                                    }
                                ],
                            }
                        },
                    }
                ],
            },
        }
        kube.create(urgent)
        cr = wait_state(kube, namespace, "low", "AdmissionPending", timeout=60)
        states = history(cr)
        assert states[-3:] == ["Suspended", "ScheduledToRestart", "AdmissionPending"], states
        evicted = cr["status"]["previousAttemptSummary"]["stateTransitionHistory"]
        last = evicted[max(evicted, key=int)]
        assert last["suspendReason"] == "KueueEvicted", last
        assert "low-1" in _message(cr)
        wait_for(
            lambda: not _app_pods(kube, namespace, "low"), timeout=60, what="low's pods released"
        )
        wait_for(lambda: wl.admission(_get(kube, urgent)), timeout=60, what="urgent admitted")
        wait_for(
            lambda: "low-0" not in _workloads(kube, namespace),
            timeout=30,
            what="the evicted Workload deleted",
        )
        assert kube.get_or_none("v1", "ConfigMap", pack.configmap_name("low"), namespace)
        wait_for(
            lambda: "KueueEvicted" in _events(kube, namespace, "low"),
            timeout=30,
            what="low's KueueEvicted Event",
        )

        kube.delete(KUEUE_API_VERSION, WORKLOAD, "urgent", namespace)  # the urgent work is done
        cr = wait_state(kube, namespace, "low", *RUNNING, timeout=60)
        assert cr["status"]["currentAttemptSummary"]["attemptInfo"]["id"] == 1
        assert pods(kube, namespace, "spark-app-selector=low-1,spark-role=driver")
    as_tenant.close()


@pytest.fixture
def priority_classes(kube: Kube, kueue: None) -> Iterator[Callable[[str, int], str]]:
    """Make WorkloadPriorityClasses (cluster-scoped, named uniquely); removed after."""
    made: list[str] = []

    def make(name: str, value: int) -> str:
        kube.apply(
            {
                "apiVersion": KUEUE_API_VERSION,
                "kind": WORKLOAD_PRIORITY_CLASS,
                "metadata": {"name": name},
                "value": value,
            }
        )
        made.append(name)
        return name

    yield make
    for name in made:
        kube.delete(KUEUE_API_VERSION, WORKLOAD_PRIORITY_CLASS, name)


@pytest.mark.timeout(300)
def test_a_higher_priority_class_preempts_a_lower_one_and_a_missing_class_holds_an_app(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    tenant: Path,
    priority_classes: Callable[[str, int], str],
) -> None:
    suffix = uuid.uuid4().hex[:6]
    low = priority_classes(f"low-{suffix}", 10)
    high = priority_classes(f"high-{suffix}", 1000)
    preemption = {"withinClusterQueue": "LowerPriority"}
    queues("prio", _cluster_queue(f"wp-{suffix}", "2", preemption=preemption))
    install_crds(kube)
    as_tenant = Kube(connect(kubeconfig=tenant))

    def labelled(name: str, klass: str) -> dict[str, Any]:
        cr = _sim(_app(name, "prio"), **{"run-for": "600s"})
        cr["metadata"]["labels"][PRIORITY_CLASS_LABEL] = klass
        return cr

    with running_operator(kube, namespace):  # the shipped RBAC reads the classes
        as_tenant.create(labelled("batch", low), namespace)  # 2 CPUs: the queue is full
        wait_state(kube, namespace, "batch", *RUNNING, timeout=60)
        spec = _workloads(kube, namespace)["batch-0"]["spec"]
        assert spec["priority"] == 10, spec
        assert spec["priorityClassRef"] == {
            "group": KUEUE_GROUP,
            "kind": WORKLOAD_PRIORITY_CLASS,
            "name": low,
        }

        # a class that does not exist: no Workload, the app says why, an Event says it too
        missing = f"nope-{suffix}"
        as_tenant.create(labelled("typo", missing), namespace)
        cr = wait_for(
            lambda: (
                (c := kube.get(API, "SparkApplication", "typo", namespace))
                .get("status", {})
                .get("currentState", {})
                .get("message", "")
                .startswith("KueuePriorityClassMissing")
                and c
            ),
            timeout=30,
            what="typo's status naming the missing class",
        )
        assert missing in _message(cr) and PRIORITY_CLASS_LABEL in _message(cr)
        assert "typo-0" not in _workloads(kube, namespace)
        wait_for(
            lambda: "KueuePriorityClassMissing" in _events(kube, namespace, "typo"),
            timeout=30,
            what="typo's KueuePriorityClassMissing Event",
        )

        # the high-priority app preempts the running low one, which is suspended and requeued
        as_tenant.create(labelled("urgent", high), namespace)
        cr = wait_state(kube, namespace, "batch", "AdmissionPending", timeout=60)
        states = history(cr)
        assert states[-3:] == ["Suspended", "ScheduledToRestart", "AdmissionPending"], states
        evicted = cr["status"]["previousAttemptSummary"]["stateTransitionHistory"]
        assert evicted[max(evicted, key=int)]["suspendReason"] == "KueueEvicted"
        wait_state(kube, namespace, "urgent", *RUNNING, timeout=60)
        found = _workloads(kube, namespace)
        assert found["urgent-0"]["spec"]["priority"] == 1000
        assert wl.admission(found["urgent-0"]) is not None
        assert found["batch-1"]["spec"]["priority"] == 10  # requeued with its class again
        assert wl.admission(found["batch-1"]) is None

        # the class created: the held app queues (behind the running urgent one)
        priority_classes(missing, 500)
        wait_state(kube, namespace, "typo", "AdmissionPending", timeout=30)
        made = wait_for(  # the status is written first, then the Workload created
            lambda: _workloads(kube, namespace).get("typo-0"),
            timeout=30,
            what="typo's Workload created",
        )
        assert made["spec"]["priority"] == 500
    as_tenant.close()


@pytest.mark.timeout(300)
def test_a_queued_kubeflow_app_waits_for_quota_then_runs(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    """Kubeflow's v1beta2 API, the same label: its Workload (owned by the v1beta2 resource)
    waits while the quota is too small, with no pod; the quota raised, it is admitted and runs."""
    name = f"kf-{uuid.uuid4().hex[:6]}"
    queues("kf", _cluster_queue(name, "1"))
    install_crds(kube)
    app = {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": "SparkApplication",
        "metadata": {"name": "kfpi", "labels": {QUEUE_NAME_LABEL: "kf"}},
        "spec": {
            "type": "Scala",
            "image": "apache/spark:4.0.1",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "sparkVersion": "4.0.1",
            "driver": {"cores": 1, "memory": "512m"},
            "executor": {"instances": 1, "cores": 1, "memory": "512m"},
        },
    }

    def internal() -> str:
        cr = kube.get(KUBEFLOW_API_VERSION, "SparkApplication", "kfpi", namespace)
        current = ((cr.get("status") or {}).get("sparkplane") or {}).get("currentState") or {}
        return str(current.get("currentStateSummary") or "")

    with running_operator(kube, namespace):
        kube.create(app, namespace)
        wait_for(lambda: internal() == "AdmissionPending", timeout=30, what="kfpi queued")
        found = wait_for(
            lambda: (
                (w := _workloads(kube, namespace).get("kfpi-0"))
                and w.get("status", {}).get("conditions")
                and w
            ),
            timeout=30,
            what="kfpi's Workload evaluated by Kueue",
        )
        assert wl.admission(found) is None
        assert found["metadata"]["ownerReferences"][0]["apiVersion"] == KUBEFLOW_API_VERSION
        cr = kube.get(KUBEFLOW_API_VERSION, "SparkApplication", "kfpi", namespace)
        assert cr["status"]["applicationState"]["state"] == "SUBMITTED"
        assert not pods(kube, namespace, "spark-role=driver")

        queues("kf", _cluster_queue(name, "2"))  # the quota raised: admitted
        wait_for(
            lambda: pods(kube, namespace, "spark-role=driver"), timeout=60, what="kfpi's driver"
        )
        wait_for(
            lambda: (
                kube.get(KUBEFLOW_API_VERSION, "SparkApplication", "kfpi", namespace)["status"][
                    "applicationState"
                ]["state"]
                == "RUNNING"
            ),
            timeout=60,
            what="kfpi RUNNING",
        )


def _quota_gated(pod: dict[str, Any]) -> bool:
    return any(
        g.get("name") == QUOTA_GATE for g in pod.get("spec", {}).get("schedulingGates") or []
    )


@pytest.mark.timeout(300)
def test_an_app_asking_more_executors_at_run_time_gets_no_more_than_admitted(
    kube: Kube, namespace: str, queues: Callable[..., None], tenant: Path
) -> None:
    """Kueue admitted 2 executors; the app's own code asks for 4 (the simulator's knob, as
    ``SparkSession.builder.config("spark.executor.instances", 4)`` would): 2 run, 2 wait behind
    the operator's gate; one that bypasses the gate is removed; a freed slot releases one."""
    queues("grow", _cluster_queue(f"g-{uuid.uuid4().hex[:6]}", "8"))
    install_crds(kube)
    as_tenant = Kube(connect(kubeconfig=tenant))
    app = _sim(_app("grow", "grow", cpu="250m", executors=2), executors="4", **{"run-for": "600s"})

    def executors() -> list[dict[str, Any]]:
        found = pods(kube, namespace, "spark-role=executor")
        return [p for p in found if not p["metadata"].get("deletionTimestamp")]

    def split() -> tuple[list[str], list[str]]:
        found = executors()
        running = sorted(
            p["metadata"]["name"]
            for p in found
            if not _quota_gated(p) and p.get("status", {}).get("phase") == "Running"
        )
        return running, sorted(p["metadata"]["name"] for p in found if _quota_gated(p))

    with running_operator(kube, namespace):
        as_tenant.create(app, namespace)
        wait_state(kube, namespace, "grow", *RUNNING, timeout=90)
        running, held = wait_for(
            lambda: (found := split()) and len(found[0]) == len(found[1]) == 2 and found,
            timeout=60,
            what="2 executors running and 2 held at the gate",
        )
        assert all(
            p.get("status", {}).get("phase") == "Pending" for p in executors() if _quota_gated(p)
        )
        marks = {
            p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get(
                QUOTA_RELEASED_ANNOTATION
            )
            for p in executors()
        }
        assert {n for n, m in marks.items() if m == "true"} == set(running), marks
        wait_for(
            lambda: "KueueQuotaHeld" in _events(kube, namespace, "grow"),
            timeout=30,
            what="the KueueQuotaHeld Event",
        )
        # a driver may update the pods it owns: one removes the gate itself (here the test,
        # as admin, does what such a driver would) — the operator removes that executor
        bypass = held[0]
        kube.patch(
            "v1",
            "Pod",
            bypass,
            [{"op": "remove", "path": "/spec/schedulingGates"}],
            namespace,
            patch_type="json",
        )
        wait_for(
            lambda: bypass not in [p["metadata"]["name"] for p in executors()],
            timeout=60,
            what=f"{bypass}, past the admission, removed",
        )
        wait_for(  # the Event is posted after the delete, from the recorder's threads
            lambda: "KueueQuotaExceeded" in _events(kube, namespace, "grow"),
            timeout=30,
            what="the KueueQuotaExceeded Event",
        )
        # a running executor ends (dynamic allocation gives one back): the last held one runs
        kube.delete("v1", "Pod", running[0], namespace)
        wait_for(
            lambda: split() == (sorted([running[1], held[1]]), []),
            timeout=60,
            what=f"{held[1]} released into the freed slot",
        )
    as_tenant.close()


@pytest.mark.timeout(300)
def test_the_admitted_flavors_node_labels_and_tolerations_reach_the_pods(
    kube: Kube, namespace: str, queues: Callable[..., None], tenant: Path
) -> None:
    """A ClusterQueue on a ResourceFlavor selecting a tainted node pool (``nodeLabels``,
    ``nodeTaints`` and a ``tolerations`` entry for them): the operator reads the flavor Kueue
    admitted the app on (its shipped RBAC: ``get`` resourceflavors) and its driver and
    executors carry the flavor's node selector and toleration, so they bind to that pool's
    node (no other node has the label; only pods tolerating its taint may use it)."""
    pool = f"spot-{uuid.uuid4().hex[:6]}"
    label, taint = "sparkplane.io/pool", f"sparkplane.io/{pool}"
    node = node_manifest(pool, "4", "16Gi", 20)
    node["metadata"]["labels"][label] = pool
    node["spec"] = {"taints": [{"key": taint, "value": "true", "effect": "NoSchedule"}]}
    toleration = {"key": taint, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    flavor = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": pool},
        "spec": {
            "nodeLabels": {label: pool},
            "nodeTaints": [{"key": taint, "value": "true", "effect": "NoSchedule"}],
            "tolerations": [toleration],
        },
    }
    kube.create(node)
    try:
        wait_for(lambda: node_ready(kube.get("v1", "Node", pool)), timeout=60, what="node Ready")
        kube.apply(flavor)
        queues("spot", _cluster_queue(pool, "4", flavor=pool))
        install_crds(kube)
        as_tenant = Kube(connect(kubeconfig=tenant))
        app = _sim(_app("spot", "spot", cpu="250m", executors=2), **{"run-for": "600s"})
        with running_operator(kube, namespace):
            as_tenant.create(app, namespace)
            wait_state(kube, namespace, "spot", *RUNNING, timeout=90)
            placed = wait_for(
                lambda: (
                    len(found := _app_pods(kube, namespace, "spot")) == 3
                    and all(p["spec"].get("nodeName") for p in found)
                    and found
                ),
                timeout=60,
                what="the driver and 2 executors bound",
            )
        as_tenant.close()
        admitted = wl.admission(_workloads(kube, namespace)["spot-0"])
        assert admitted is not None
        assert admitted.flavors == {"driver": (pool,), "executor": (pool,)}
        for pod in placed:
            name = pod["metadata"]["name"]
            assert pod["spec"]["nodeName"] == pool, name
            assert pod["spec"]["nodeSelector"][label] == pool, name
            assert toleration in pod["spec"]["tolerations"], name
    finally:
        kube.delete("v1", "Node", pool)
        kube.delete(KUEUE_API_VERSION, "ResourceFlavor", pool)  # freed once its queue goes


# --- native submissions: Kueue's Pod integration holds the driver and each executor ----------

GATE = "kueue.x-k8s.io/admission"


def _native(name: str, cpu: str, run_for: str, *extra: str) -> list[str]:
    """spark-submit arguments of a native app the driver simulator plays (``cpu`` each pod)."""
    sim = "spark.kubernetes.driver.annotation.sim.sparkplane.io"
    confs = {
        "spark.kubernetes.container.image": "apache/spark:4.0.1",
        "spark.kubernetes.driver.request.cores": cpu,
        "spark.kubernetes.executor.request.cores": cpu,
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
        f"{sim}/run-for": run_for,
        f"{sim}/outcome": "Succeeded",
    }
    args = ["--name", name, "--class", "org.apache.spark.examples.SparkPi"]
    for key, value in confs.items():
        args += ["--conf", f"{key}={value}"]
    return [*args, *extra, "local:///opt/spark/examples/jars/spark-examples.jar"]


def _gated(pod: dict[str, Any]) -> bool:
    return GATE in [g["name"] for g in pod["spec"].get("schedulingGates") or []]


def _state(tenant: Path, name: str, namespace: str) -> dict[str, Any]:
    import json

    out = run(tenant, "get", "apps", name, "-n", namespace, "-o", "json").stdout
    state: dict[str, Any] = json.loads(out)["state"]
    return state


@pytest.mark.timeout(420)
def test_native_apps_in_a_queue_wait_gated_for_quota_driver_and_executors(
    kube: Kube, namespace: str, queues: Callable[..., None], tenant: Path
) -> None:
    """A quota of 1 CPU; as the tenant (the shipped client role): a queue that does not exist
    is refused (exit 2, nothing created); app A (driver and 2 executors of 500m) runs with
    one executor, the other held by Kueue's gate; app B's driver waits gated, with no node,
    shown as Pending/AdmissionPending, until A ends; then it runs, until Kueue evicts it (its
    Workload deactivated): the app ends Failed/Evicted, "evicted by Kueue"."""
    from sparkplane_devcluster.simulator import DriverSimulator

    queues("team", _cluster_queue(f"native-{uuid.uuid4().hex[:6]}", "1"))
    submit = ("submit", "-n", namespace, "--queue", "nope")
    bad = run(tenant, *submit, *_native("x", "1", "1s"), check=2)
    assert "LocalQueue 'nope' does not exist" in bad.stderr and "Traceback" not in bad.stderr
    assert not kube.list("v1", "Pod", namespace) and not kube.list(
        "v1", "ConfigMap", namespace, label_selector="spark-app-selector"
    )

    sim = DriverSimulator(kube, namespace).start()  # plays Spark's driver creating executors
    try:
        a = run(
            tenant,
            *("submit", "-n", namespace, "--queue", "team"),
            *_native("a", "500m", "40s", "--conf", "spark.executor.instances=2"),
        ).stdout.strip()
        wait_for(
            lambda: _state(tenant, a, namespace)["phase"] == "Running", timeout=90, what="A runs"
        )
        execs = wait_for(
            lambda: (
                len(p := pods(kube, namespace, "spark-app-name=a,spark-role=executor")) == 2
                and any(x["spec"].get("nodeName") for x in p)
                and p
            ),
            timeout=60,
            what="A's 2 executors, one admitted",
        )
        held = [x for x in execs if not x["spec"].get("nodeName")]
        assert len(held) == 1 and _gated(held[0]), execs  # beyond the quota: gated
        admitted = [x for x in execs if x["spec"].get("nodeName")]
        assert not _gated(admitted[0])
        assert all(x["metadata"]["labels"][QUEUE_NAME_LABEL] == "team" for x in execs)

        label = f"spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}=team"
        b = run(
            tenant, "submit", "-n", namespace, *_native("b", "500m", "600s", "--conf", label)
        ).stdout.strip()
        state = wait_for(
            lambda: (s := _state(tenant, b, namespace))["reason"] == "AdmissionPending" and s,
            timeout=60,
            what="B pending admission",
        )
        assert state["phase"] == "Pending" and "LocalQueue 'team'" in state["message"]
        (driver_b,) = pods(kube, namespace, "spark-app-name=b,spark-role=driver")
        assert _gated(driver_b) and not driver_b["spec"].get("nodeName")
        assert _state(tenant, a, namespace)["phase"] == "Running"  # B still waits on A
        (driver_b,) = pods(kube, namespace, "spark-app-name=b,spark-role=driver")
        assert _gated(driver_b)

        wait_for(
            lambda: _state(tenant, a, namespace)["phase"] == "Succeeded",
            timeout=120,
            what="A ends",
        )
        wait_for(
            lambda: _state(tenant, b, namespace)["phase"] == "Running",
            timeout=120,
            what="B admitted and running once A ended",
        )

        # Kueue takes B's admission back (its Workload deactivated): the driver is stopped
        # and the app ends, saying so; nothing requeues a native app
        (driver_b,) = pods(kube, namespace, "spark-app-name=b,spark-role=driver")
        (workload,) = [
            w
            for w in kube.list(KUEUE_API_VERSION, WORKLOAD, namespace)
            if any(
                r["uid"] == driver_b["metadata"]["uid"] for r in w["metadata"]["ownerReferences"]
            )
        ]
        kube.patch(
            KUEUE_API_VERSION,
            WORKLOAD,
            workload["metadata"]["name"],
            {"spec": {"active": False}},
            namespace,
        )
        state = wait_for(
            lambda: (s := _state(tenant, b, namespace))["reason"] == "Evicted" and s,
            timeout=120,
            what="B evicted by Kueue",
        )
        assert state["phase"] == "Failed" and state["message"].startswith("evicted by Kueue:")
    finally:
        sim.stop()
