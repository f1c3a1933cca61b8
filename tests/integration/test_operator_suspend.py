"""``spec.suspend`` on the real control plane (issue 23): the operator, as its shipped service
account, holds an app created suspended (no pod), runs it when a tenant resumes it, and when the
tenant suspends it running releases the driver and executors (the driver's log archived first),
enters ``Suspended`` with its ``suspendReason`` and writes Events, a repeat counted on the first
Event rather than posted again. The tenant's role may only read and edit SparkApplications
(no pods, no events): ``sparkplane suspend|resume`` reads and patches nothing else. A native
app is refused with exit 12. KWOK plays the drivers (the simulator)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane import SparkPlane
from sparkplane.history import pack
from sparkplane.history.archive import META, ArchiveMeta
from sparkplane.kube import Kube
from sparkplane.operator.core.reconciler import RESUMED
from sparkplane.operator.core.states import SUSPEND_BY_SPEC, SUSPEND_REASON
from sparkplane.operator.deploy.install import install_crds
from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private
from sparkplane.usecases.record import COMPONENT, KILLED, SUBMITTED
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import (
    API,
    history,
    pods,
    running_operator,
    spark_app,
    wait_state,
)
from tests.integration.test_cli import run
from tests.integration.test_log_archive_kube import _identity

pytestmark = pytest.mark.integration
RBAC = "rbac.authorization.k8s.io/v1"
TENANT = "team-a"
RUNNING = ("RunningHealthy", "RunningWithPartialCapacity")


@pytest.fixture(scope="session")
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.fixture
def kube_archive(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", "kube")
    monkeypatch.setenv("SPARKPLANE_CACHE_DIR", str(tmp_path / "cache"))  # no local archive


@pytest.fixture
def client(kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The shipped least-privilege client identity (``sparkplane rbac client``)."""
    yield _identity(kubeconfig, kube, namespace, "client", tmp_path / "client.kubeconfig")
    binding = f"sparkplane:client:cluster:{namespace}:sparkplane-client"
    kube.delete(RBAC, "ClusterRoleBinding", binding)


@pytest.fixture
def tenant(kube: Kube, namespace: str, tmp_path: Path) -> Path:
    """A kubeconfig of a service account that may only read and patch SparkApplications."""
    kube.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": TENANT}},
        namespace=namespace,
    )
    rule = {
        "apiGroups": ["spark.apache.org"],
        "resources": ["sparkapplications"],
        "verbs": ["get", "list", "watch", "patch"],
    }
    kube.create(
        {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": TENANT}, "rules": [rule]},
        namespace=namespace,
    )
    kube.create(
        {
            "apiVersion": RBAC,
            "kind": "RoleBinding",
            "metadata": {"name": TENANT},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TENANT},
            "subjects": [{"kind": "ServiceAccount", "name": TENANT, "namespace": namespace}],
        },
        namespace=namespace,
    )
    minted = mint_kubeconfig(kube, TENANT, namespace)
    return write_private(tmp_path / "tenant.kubeconfig", minted.text())


def app_pods(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    return pods(kube, namespace, "spark.operator/spark-app-name=held")


def suspended(cr: dict[str, Any]) -> dict[str, Any]:
    current: dict[str, Any] = cr["status"]["currentState"]
    assert current["currentStateSummary"] == "Suspended"
    assert current[SUSPEND_REASON] == SUSPEND_BY_SPEC
    return current


def app_events(kube: Kube, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [
        e
        for e in kube.list("v1", "Event", namespace)
        if e["involvedObject"].get("name") == "held" and e.get("reason") == reason
    ]


def test_suspend_and_resume_by_a_tenant_that_may_only_edit_sparkapplications(
    kubeconfig: Path, kube: Kube, namespace: str, crds: None, kube_archive: None, tenant: Path
) -> None:
    tol = {"instanceConfig": {"initExecutors": 1, "minExecutors": 1, "maxExecutors": 1}}
    app = spark_app("held", tolerations=tol, executors=1, sim={"run-for": "600s"})
    app["spec"]["suspend"] = True
    sp = SparkPlane.connect(kubeconfig=tenant, namespace=namespace)
    with running_operator(kube, namespace) as operator:
        kube.create(app, namespace=namespace)
        suspended(wait_state(kube, namespace, "held", "Suspended"))
        assert not app_pods(kube, namespace)  # held: nothing was created

        # the tenant resumes it (the CLI): a new attempt runs
        shown = run(tenant, "resume", "held", "-n", namespace)
        assert "spec.suspend cleared" in shown.stderr
        wait_state(kube, namespace, "held", *RUNNING, timeout=60)
        assert {p["metadata"]["labels"]["spark-app-selector"] for p in app_pods(kube, namespace)}
        assert pods(kube, namespace, "spark-app-selector=held-1,spark-role=executor")

        # the tenant suspends it running (the API): pods released, log archived
        done = sp.suspend("held")
        assert done.suspend and done.state in RUNNING
        current = suspended(wait_state(kube, namespace, "held", "Suspended", timeout=30))
        assert "released" in current["message"]
        wait_for(lambda: not app_pods(kube, namespace), timeout=60, what="held's pods gone")
        cm = kube.get_or_none("v1", "ConfigMap", pack.configmap_name("held"), namespace)
        assert cm is not None, "the suspended driver's log was not archived"
        meta = ArchiveMeta.from_json(cm["data"][META].encode())
        assert (meta.app, meta.driver_pod) == ("held", "held-1-driver")

        # once more: resume (a third attempt), suspend; the second Suspended is counted
        sp.resume("held")
        wait_state(kube, namespace, "held", *RUNNING, timeout=60)
        sp.suspend("held")
        suspended(wait_state(kube, namespace, "held", "Suspended", timeout=30))
        operator.events.flush()

    cr = kube.get(API, "SparkApplication", "held", namespace)
    assert cr["status"]["currentAttemptSummary"]["attemptInfo"]["restartCounter"] == 0
    # Events: Suspended three times (once held at creation, twice from running: those two
    # are one Event counted twice), Resumed twice (each names its own attempt's driver)
    events = app_events(kube, namespace, "Suspended")
    assert sorted(int(e.get("count") or 1) for e in events) == [1, 2], events
    repeated = next(e for e in events if int(e.get("count") or 1) == 2)
    assert repeated["lastTimestamp"] >= repeated["firstTimestamp"]
    assert len(app_events(kube, namespace, RESUMED)) == 2
    reasons = [e.reason for e in SparkPlane(kube, namespace).events("held")]
    assert "Suspended" in reasons and RESUMED in reasons
    # no Apache app of that name, and the Kubeflow kind is not the tenant's to read: the
    # refusal is named (exit 6), never a guess that nothing is there
    refused = run(tenant, "suspend", "nothing-here", "-n", namespace, check=6)
    assert "sparkoperator.k8s.io" in refused.stderr and "nothing-here" in refused.stderr
    missing = run(kubeconfig, "suspend", "nothing-here", "-n", namespace, check=8)
    assert "no SparkApplication 'nothing-here'" in missing.stderr


def test_native_app_is_refused_and_its_driver_pod_records_submit_and_kill(
    kube: Kube, namespace: str, client: Path
) -> None:
    """As the shipped least-privilege client identity: the native driver pod gets a
    ``Submitted`` Event at submit and a ``Killed`` one at kill; suspend is refused (exit 12)."""
    kubeconfig = client
    submitted = run(
        kubeconfig,
        "submit",
        "-n",
        namespace,
        "--name",
        "nat",
        "--image",
        "apache/spark:4.0.1",
        "--conf",
        "spark.kubernetes.driver.annotation.sim.sparkplane.io/run-for=600s",
        "--class",
        "org.apache.spark.examples.SparkPi",
        "local:///opt/spark/examples/jars/spark-examples.jar",
    )
    name = submitted.stdout.split()[0]
    refused = run(kubeconfig, "suspend", name, "-n", namespace, check=12)
    assert "native submission" in refused.stderr and f"sparkplane kill {name}" in refused.stderr
    driver = f"{name}-driver"
    assert kube.get_or_none("v1", "Pod", driver, namespace) is not None  # untouched
    run(kubeconfig, "kill", name, "-n", namespace)

    def reasons() -> list[str]:
        return [
            e["reason"]
            for e in kube.list("v1", "Event", namespace)
            if e["involvedObject"].get("name") == driver
            and e["source"].get("component") == COMPONENT
        ]

    assert SUBMITTED in reasons() and KILLED in reasons()


def test_spark_cluster_suspended_running_and_resumed(
    kube: Kube, namespace: str, crds: None
) -> None:
    """SparkCluster's ``spec.suspend``: a healthy cluster's StatefulSets (and so its pods) are
    released, the state is ``Suspended``; clearing it creates them again."""
    cluster = {
        "apiVersion": API,
        "kind": "SparkCluster",
        "metadata": {"name": "qa"},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "clusterTolerations": {"instanceConfig": {"initWorkers": 1, "minWorkers": 1}},
            "sparkConf": {"spark.kubernetes.container.image": "apache/spark:4.0.0"},
        },
    }

    def state() -> str | None:
        got = kube.get_or_none(API, "SparkCluster", "qa", namespace)
        return (((got or {}).get("status") or {}).get("currentState") or {}).get(
            "currentStateSummary"
        )

    def statefulsets() -> list[dict[str, Any]]:
        return kube.list("apps/v1", "StatefulSet", namespace)

    with running_operator(kube, namespace, simulate=False):
        kube.create(cluster, namespace=namespace)
        wait_for(lambda: state() == "RunningHealthy", timeout=60, what="cluster RunningHealthy")
        kube.patch(API, "SparkCluster", "qa", {"spec": {"suspend": True}}, namespace)
        wait_for(lambda: state() == "Suspended", timeout=30, what="cluster Suspended")
        wait_for(lambda: not statefulsets(), timeout=30, what="StatefulSets released")
        kube.patch(API, "SparkCluster", "qa", {"spec": {"suspend": False}}, namespace)
        wait_for(lambda: state() == "RunningHealthy", timeout=60, what="cluster resumed")
    got = kube.get(API, "SparkCluster", "qa", namespace)
    assert history(got) == [
        "Submitted",
        "RunningHealthy",
        "Suspended",
        "Submitted",
        "RunningHealthy",
    ]
