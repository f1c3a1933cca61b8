"""SparkCluster objects: templates merged by container name, sparkConf in the daemons, HPA, PDB;
and the one precedence rule (user conf wins unless the API says otherwise) for applications."""

from __future__ import annotations

import copy
import shlex
from typing import Any

import pydantic
import pytest

from sparkplane.operator.core.cluster import cluster_objects
from sparkplane.operator.core.cluster_build import java_options
from sparkplane.operator.core.driver import build_attempt


def cluster(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "runtimeVersions": {"sparkVersion": "4.0.1"},
        "clusterTolerations": {"instanceConfig": {"initWorkers": 2, "minWorkers": 2}},
        "sparkConf": {"spark.kubernetes.container.image": "apache/spark:{{SPARK_VERSION}}-scala"},
    }
    base.update(spec)
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkCluster",
        "metadata": {"name": "prod", "namespace": "ns1", "uid": "u-1"},
        "spec": base,
    }


def objects(cr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in cluster_objects(cr, "op")}


def container(sts: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    assert len(found) == 1
    return found[0]


def env(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in c.get("env", [])}


def test_template_container_is_merged_not_replaced() -> None:
    resources = {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2"}}
    template = {
        "metadata": {"annotations": {"safe-to-evict": "false"}, "labels": {"team": "a"}},
        "spec": {
            "priorityClassName": "high",
            "securityContext": {"runAsUser": 0},
            "containers": [
                {"name": "master", "resources": resources, "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "registry.k8s.io/pause:3.9"},
            ],
        },
    }
    cr = cluster(
        masterSpec={
            "statefulSetSpec": {"template": template},
            "statefulSetMetadata": {"annotations": {"custom": "x"}},
            "serviceMetadata": {"annotations": {"svc": "y"}},
        }
    )
    objs = objects(cr)
    sts = objs["StatefulSet/prod-master"]
    master = container(sts, "master")
    assert master["resources"] == resources
    assert master["image"] == "apache/spark:4.0.1-scala"
    assert master["command"] == [
        "/opt/spark/bin/spark-class",
        "org.apache.spark.deploy.master.Master",
    ]
    assert master["args"] == ["--webui-port", "8080", "--port", "7077"]
    host = next(e for e in master["env"] if e["name"] == "SPARK_MASTER_HOST")
    assert host["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert master["readinessProbe"]["tcpSocket"] == {"port": "web"}
    assert {p["name"]: p["containerPort"] for p in master["ports"]} == {
        "web": 8080,
        "spark": 7077,
        "rest": 6066,
    }
    assert env(master)["A"] == "1"
    assert container(sts, "sidecar")["image"] == "registry.k8s.io/pause:3.9"
    pod = sts["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"safe-to-evict": "false"}
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["metadata"]["labels"]["spark-role"] == "master"
    assert pod["spec"]["priorityClassName"] == "high"
    assert pod["spec"]["securityContext"] == {"runAsUser": 0}
    assert all(
        c["securityContext"]["allowPrivilegeEscalation"] is False for c in pod["spec"]["containers"]
    )
    assert sts["metadata"]["annotations"] == {"custom": "x"}
    assert objs["Service/prod-master-svc"]["metadata"]["annotations"] == {"svc": "y"}
    # the input is never changed
    assert cr["spec"]["masterSpec"]["statefulSetSpec"]["template"] == template


def test_template_without_the_role_container_gets_one_appended() -> None:
    cr = cluster(
        workerSpec={
            "statefulSetSpec": {
                "template": {"spec": {"containers": [{"name": "log-agent", "image": "busybox"}]}}
            }
        }
    )
    pod = objects(cr)["StatefulSet/prod-worker"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["log-agent", "worker"]
    worker = pod["containers"][1]
    assert worker["command"][1] == "org.apache.spark.deploy.worker.Worker"
    assert worker["args"] == ["--webui-port", "8081", "spark://prod-master-svc.ns1.svc:7077"]
    limits = {
        e["name"]: e["valueFrom"]["resourceFieldRef"]
        for e in worker["env"]
        if "resourceFieldRef" in e.get("valueFrom", {})
    }
    assert limits["SPARK_WORKER_CORES"]["resource"] == "limits.cpu"
    assert limits["SPARK_WORKER_MEMORY"] == {
        "containerName": "worker",
        "resource": "limits.memory",
        "divisor": "1",
    }
    assert pod["dnsConfig"]["searches"] == ["prod-worker-svc.ns1.svc.cluster.local"]


def test_operator_fields_win_where_apaches_do() -> None:
    spec = {
        "replicas": 9,
        "serviceName": "mine",
        "podManagementPolicy": "OrderedReady",
        "selector": {"matchLabels": {"team": "a"}},
        "template": {
            "metadata": {"labels": {"team": "a"}},
            "spec": {
                "schedulerName": "other",
                "containers": [
                    {
                        "name": "worker",
                        "image": "mine:1",
                        "env": [
                            {"name": "SPARK_WORKER_OPTS", "value": "-Dx=y"},
                            {"name": "SPARK_WORKER_CORES", "value": "3"},
                        ],
                    }
                ],
            },
        },
    }
    sts = objects(cluster(workerSpec={"statefulSetSpec": spec}))["StatefulSet/prod-worker"]
    assert sts["spec"]["replicas"] == 2
    assert sts["spec"]["serviceName"] == "prod-worker-svc"
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    assert sts["spec"]["selector"]["matchLabels"]["team"] == "a"
    assert sts["spec"]["selector"]["matchLabels"]["spark-role"] == "worker"
    pod = sts["spec"]["template"]["spec"]
    assert pod["schedulerName"] == "default-scheduler"
    assert pod["terminationGracePeriodSeconds"] == 0
    worker = container(sts, "worker")
    assert worker["image"] == "apache/spark:4.0.1-scala"
    assert [e["name"] for e in worker["env"]].count("SPARK_WORKER_OPTS") == 1
    assert env(worker)["SPARK_WORKER_CORES"] == "3"  # the user's, not the limits
    assert [e["name"] for e in worker["env"]].count("SPARK_WORKER_CORES") == 1


def test_spark_conf_reaches_master_and_workers_as_java_options() -> None:
    conf = {
        "spark.kubernetes.container.image": "apache/spark:4.0.1",
        "spark.ui.filters": "org.apache.spark.ui.JWSFilter",
        "spark.master.rest.filters": "org.apache.spark.ui.JWSFilter",
        "spark.org.apache.spark.ui.JWSFilter.param.secretKey": "c2VjcmV0",
        "spark.master.rest.host": "0.0.0.0",
        "spark.kubernetes.scheduler.name": "yunikorn",
        "spark.master.ui.title": 'Prod "A" cluster',
        "spark.kubernetes.namespace": "elsewhere",
    }
    objs = objects(cluster(sparkConf=conf))
    for role, var in (("master", "SPARK_MASTER_OPTS"), ("worker", "SPARK_WORKER_OPTS")):
        sts = objs[f"StatefulSet/prod-{role}"]
        assert sts["spec"]["template"]["spec"]["schedulerName"] == "yunikorn"
        opts = env(container(sts, role))[var]
        parsed = dict(a.removeprefix("-D").split("=", 1) for a in shlex.split(opts))
        assert parsed["spark.ui.filters"] == "org.apache.spark.ui.JWSFilter"
        assert parsed["spark.master.rest.filters"] == "org.apache.spark.ui.JWSFilter"
        assert parsed["spark.master.rest.host"] == "0.0.0.0"
        assert parsed["spark.master.ui.title"] == 'Prod "A" cluster'
        assert parsed["spark.kubernetes.namespace"] == "ns1"  # the API forces it
        assert parsed["spark.shuffle.service.enabled"] == "true"  # Apache's default


def test_user_conf_overrides_the_shuffle_default() -> None:
    opts = java_options({"spark.shuffle.service.enabled": "false", "a": 'b\\"c'})
    assert shlex.split(opts) == ["-Dspark.shuffle.service.enabled=false", '-Da=b\\"c']


def test_worker_autoscaler_from_the_spec_with_operator_target_and_bounds() -> None:
    hpa_spec = {
        "minReplicas": 7,
        "scaleTargetRef": {"kind": "Deployment", "name": "x"},
        "metrics": [
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "cpu",
                    "container": "worker",
                    "target": {"type": "Utilization", "averageUtilization": 10},
                },
            }
        ],
    }
    cr = cluster(
        clusterTolerations={"instanceConfig": {"initWorkers": 1, "minWorkers": 1, "maxWorkers": 3}},
        workerSpec={"horizontalPodAutoscalerSpec": hpa_spec},
    )
    hpa = objects(cr)["HorizontalPodAutoscaler/prod-worker-hpa"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "prod-worker",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert hpa["spec"]["metrics"] == hpa_spec["metrics"]
    assert hpa["metadata"]["ownerReferences"][0]["kind"] == "SparkCluster"
    pdb = objects(cr)["PodDisruptionBudget/prod-worker-pdb"]
    assert pdb["spec"]["minAvailable"] == 1


def test_autoscaler_default_and_absence() -> None:
    tol = {"instanceConfig": {"initWorkers": 3, "minWorkers": 1, "maxWorkers": 3}}
    hpa = objects(cluster(clusterTolerations=tol))["HorizontalPodAutoscaler/prod-worker-hpa"]
    metric = hpa["spec"]["metrics"][0]["containerResource"]
    assert metric["container"] == "worker"
    assert metric["target"]["averageUtilization"] == 30
    fixed = objects(cluster())
    assert not any(k.startswith("HorizontalPodAutoscaler/") for k in fixed)
    none = objects(cluster(clusterTolerations={"instanceConfig": {"initWorkers": 1}}))
    assert not any(k.startswith(("HorizontalPodAutoscaler/", "PodDisruptionBudget/")) for k in none)


def test_autoscaling_from_zero_is_refused() -> None:
    tol = {"instanceConfig": {"initWorkers": 1, "minWorkers": 0, "maxWorkers": 3}}
    with pytest.raises(pydantic.ValidationError, match="minWorkers must be at least 1"):
        cluster_objects(cluster(clusterTolerations=tol), "op")


APP: dict[str, Any] = {
    "apiVersion": "spark.apache.org/v1",
    "kind": "SparkApplication",
    "metadata": {"name": "connect", "namespace": "ns1", "uid": "u-2"},
    "spec": {
        "mainClass": "org.apache.spark.sql.connect.service.SparkConnectServer",
        "jars": "local:///opt/spark/jars/spark-connect.jar",
        "runtimeVersions": {"sparkVersion": "4.0.1"},
        "sparkConf": {"spark.kubernetes.container.image": "apache/spark:4.0.1"},
    },
}


def properties(cr: dict[str, Any]) -> str:
    attempt = build_attempt(cr, "op")
    cm = next(o for o in attempt.objects if o["metadata"]["name"].endswith("spark-drv-conf-map"))
    return str(cm["data"]["spark.properties"])


def test_user_spark_master_is_kept() -> None:
    cr = copy.deepcopy(APP)
    cr["spec"]["sparkConf"]["spark.master"] = "spark://prod-master-svc:7077"
    cr["spec"]["sparkConf"]["spark.kubernetes.namespace"] = "elsewhere"
    text = properties(cr)
    assert "spark.master=spark\\://prod-master-svc\\:7077" in text
    assert "spark.kubernetes.namespace=ns1" in text


def test_spark_master_defaults_to_kubernetes_with_the_optional_prefix() -> None:
    assert "spark.master=k8s\\://https\\://kubernetes.default.svc\\:443" in properties(APP)
    cr = copy.deepcopy(APP)
    cr["spec"]["sparkConf"]["spark.master.url.prefix"] = "k8s+custom://"
    assert "spark.master=k8s+custom\\://https\\://kubernetes.default.svc" in properties(cr)


def test_driver_template_container_is_merged_by_name() -> None:
    cr = copy.deepcopy(APP)
    cr["spec"]["driverSpec"] = {
        "podTemplateSpec": {
            "metadata": {"labels": {"team": "a"}},
            "spec": {
                "containers": [
                    {"name": "sidecar", "image": "busybox"},
                    {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                ]
            },
        }
    }
    cr["spec"]["sparkConf"]["spark.kubernetes.driver.podTemplateContainerName"] = "main"
    pod = build_attempt(cr, "op").driver_pod
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == ["sidecar", "main"]
    main = pod["spec"]["containers"][1]
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert main["image"] == "apache/spark:4.0.1"
    assert pod["metadata"]["labels"]["team"] == "a"


def test_the_standalone_example() -> None:
    from pathlib import Path

    import yaml

    path = Path(__file__).parents[3] / "examples" / "standalone-pi.yaml"
    cluster_doc, app_doc = list(yaml.safe_load_all(path.read_text()))
    for doc in (cluster_doc, app_doc):
        doc["metadata"].update(namespace="default", uid="u")
    objs = {f"{o['kind']}/{o['metadata']['name']}": o for o in cluster_objects(cluster_doc, "op")}
    assert "HorizontalPodAutoscaler/standalone-worker-hpa" in objs
    url = app_doc["spec"]["sparkConf"]["spark.master"]
    worker = container(objs["StatefulSet/standalone-worker"], "worker")
    assert worker["args"][-1] == url  # the app points at the master the workers use
    assert "spark.master=" + url.replace(":", "\\:") in properties(app_doc)
