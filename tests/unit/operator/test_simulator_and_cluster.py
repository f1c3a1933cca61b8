"""The driver simulator's executor plan, and the SparkCluster objects and state machine."""

from __future__ import annotations

from typing import Any

from sparkplane.operator.core.cluster import cluster_objects, decide_cluster
from sparkplane.operator.core.decision import CreateResources, DeleteResources
from sparkplane.operator.core.states import history_states
from sparkplane_devcluster.simulator import SIMULATED_BY, executor_count, plan_executors
from tests.unit.operator.opfixtures import UID, at


def driver_pod(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "pi-0-driver",
            "namespace": "ns1",
            "uid": "drv",
            "labels": {"spark-app-selector": "pi-0", "spark-version": "4.0.0"},
            "annotations": {f"sim.sparkplane.io/{k}": v for k, v in annotations.items()},
        },
        "spec": {"serviceAccountName": "spark"},
    }


PROPS = {
    "spark.app.id": "pi-0",
    "spark.app.name": "pi",
    "spark.executor.instances": "3",
    "spark.executor.memory": "512m",
    "spark.kubernetes.container.image": "apache/spark:4.0.0",
    "spark.kubernetes.executor.label.spark.operator/name": "op",
    "spark.kubernetes.executor.annotation.id": "{{APP_ID}}-{{EXECUTOR_ID}}",
}


def test_executors_as_spark_makes_them() -> None:
    execs = plan_executors(driver_pod(), PROPS)
    assert [e["metadata"]["name"].rsplit("-", 2)[1:] for e in execs] == [
        ["exec", "1"],
        ["exec", "2"],
        ["exec", "3"],
    ]
    first = execs[0]
    meta = first["metadata"]
    assert meta["name"].startswith("pi-")
    assert meta["labels"]["spark-role"] == "executor"
    assert meta["labels"]["spark-exec-id"] == "1"
    assert meta["labels"]["spark-app-selector"] == "pi-0"
    assert meta["labels"]["spark.operator/name"] == "op"
    assert meta["annotations"]["id"] == "pi-0-1"
    assert SIMULATED_BY in meta["annotations"]
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "pi-0-driver", "uid": "drv", "controller": True}
    ]
    container = first["spec"]["containers"][0]
    assert container["name"] == "spark-kubernetes-executor"
    assert container["args"] == ["executor"]
    assert container["resources"]["requests"]["memory"] == "896Mi"  # 512 + 384 overhead
    assert first["spec"]["serviceAccountName"] == "spark"
    assert plan_executors(driver_pod(), PROPS) == execs  # deterministic: restart-safe


def test_simulator_knobs() -> None:
    assert executor_count(driver_pod(executors="1"), PROPS) == 1
    assert executor_count(driver_pod(), {}) == 2  # Spark's default
    pod = driver_pod(
        outcome="Succeeded", **{"run-for": "5s", "ready": "false", "executor-outcome": "Failed"}
    )
    annotations = plan_executors(pod, PROPS)[0]["metadata"]["annotations"]
    assert annotations["sim.sparkplane.io/outcome"] == "Failed"
    assert annotations["sim.sparkplane.io/ready"] == "false"
    assert "sim.sparkplane.io/run-for" not in annotations


def test_executor_template_is_the_base() -> None:
    template = {
        "metadata": {"annotations": {"sim.sparkplane.io/waiting-reason": "ImagePullBackOff"}},
        "spec": {"containers": [{"name": "exec", "image": "custom"}], "priorityClassName": "low"},
    }
    pod = plan_executors(driver_pod(), PROPS, template)[0]
    assert pod["metadata"]["annotations"]["sim.sparkplane.io/waiting-reason"] == "ImagePullBackOff"
    assert pod["spec"]["containers"][0]["image"] == "custom"
    assert pod["spec"]["priorityClassName"] == "low"


def cluster_cr(**tol: int) -> dict[str, Any]:
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkCluster",
        "metadata": {"name": "qa", "namespace": "ns1", "uid": UID},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "clusterTolerations": {"instanceConfig": tol},
            "workerSpec": {"statefulSetSpec": {"template": {"metadata": {"labels": {"x": "y"}}}}},
        },
    }


def test_cluster_objects() -> None:
    objs = {
        (o["kind"], o["metadata"]["name"]): o
        for o in cluster_objects(cluster_cr(initWorkers=3), "op")
    }
    assert set(objs) == {
        ("Service", "qa-master-svc"),
        ("StatefulSet", "qa-master"),
        ("Service", "qa-worker-svc"),
        ("StatefulSet", "qa-worker"),
        ("Secret", "qa-spark-auth"),
        ("NetworkPolicy", "qa-spark-cluster"),
    }
    worker = objs[("StatefulSet", "qa-worker")]
    assert worker["spec"]["replicas"] == 3
    assert worker["spec"]["template"]["metadata"]["labels"]["x"] == "y"  # override merged
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "apache/spark:4.0.0"
    assert container["args"][-1] == "spark://qa-master-svc.ns1.svc:7077"
    for obj in objs.values():
        assert obj["metadata"]["ownerReferences"][0]["uid"] == UID


def test_cluster_states() -> None:
    cr = cluster_cr(initWorkers=2, minWorkers=1)
    d = decide_cluster(cr, {}, at(0), "op")
    assert any(isinstance(a, CreateResources) for a in d.actions)
    assert d.status is not None
    cr["status"] = d.status
    ready = {"status": {"readyReplicas": 1}}
    d = decide_cluster(cr, {"master": ready, "worker": ready}, at(1), "op")
    assert d.status is not None
    cr["status"] = d.status
    d = decide_cluster(cr, {"master": None, "worker": ready}, at(2), "op")
    assert d.status is not None
    assert any(isinstance(a, DeleteResources) for a in d.actions)
    assert history_states(d.status) == ["Submitted", "RunningHealthy", "Failed", "ResourceReleased"]
    bad = cluster_cr()
    del bad["spec"]["runtimeVersions"]
    d = decide_cluster(bad, {}, at(0), "op")
    assert d.status is not None
    assert history_states(d.status) == ["Submitted", "SchedulingFailure", "ResourceReleased"]
