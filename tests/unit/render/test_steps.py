"""Each render step alone: what it adds, and that it never mutates its input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from sparkplane.render import DriverConf, DriverState, RenderContext
from sparkplane.render.pipeline import render
from sparkplane.render.properties import load
from sparkplane.render.step import Step
from sparkplane.render.steps.basic_driver import BasicDriverStep
from sparkplane.render.steps.driver_command import DriverCommandStep
from sparkplane.render.steps.driver_service import DriverServiceStep
from sparkplane.render.steps.env_secrets import EnvSecretsStep
from sparkplane.render.steps.executor_template import ExecutorTemplateStep
from sparkplane.render.steps.extra_resources import ExtraResourcesStep
from sparkplane.render.steps.local_dirs import LocalDirsStep
from sparkplane.render.steps.mount_secrets import MountSecretsStep
from sparkplane.render.steps.placement import PlacementStep
from sparkplane.render.steps.priority_class import PriorityClassStep
from sparkplane.render.steps.service_account import ServiceAccountStep
from sparkplane.render.steps.spark_conf import SparkConfStep
from sparkplane.render.steps.spark_ui import SparkUIStep
from sparkplane.render.steps.volumes import VolumesStep
from sparkplane.vocab import APP_SELECTOR_LABEL

from .helpers import IDS, make_app, make_conf, start

TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}


def _apply(step: Step, conf: DriverConf, state: DriverState | None = None) -> DriverState:
    state = state or start(conf)
    before = copy.deepcopy((state.pod, state.container, state.system_properties))
    out = step.apply(state, conf)
    assert (state.pod, state.container, state.system_properties) == before, "input mutated"
    return out


def _env(state: DriverState) -> dict[str, object]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in state.container["env"]}


def test_basic_driver_jvm() -> None:
    conf = make_conf(
        make_app(
            driver={"memory": "2g", "coreLimit": "3"},
            labels={"team": "data"},
            annotations={"owner": "x-{{APP_ID}}"},
            nodeSelector={"pool": "spark"},
            imagePullSecrets=["reg"],
        )
    )
    out = _apply(BasicDriverStep(), conf)
    meta = out.pod["metadata"]
    assert meta["name"] == f"spark-pi-{IDS.unique_id}-driver"
    assert meta["labels"] == {
        "team": "data",
        "spark-version": "4.0.1",
        "spark-app-selector": IDS.app_id,
        "spark-role": "driver",
        "spark-app-name": "spark-pi",
        "app-name": "spark-pi",
    }
    assert meta["annotations"] == {"owner": f"x-{IDS.app_id}"}
    spec = out.pod["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["nodeSelector"] == {"pool": "spark"}
    assert spec["imagePullSecrets"] == [{"name": "reg"}]
    c = out.container
    assert c["name"] == "spark-kubernetes-driver"
    assert c["image"] == "apache/spark:4.0.1" and c["imagePullPolicy"] == "IfNotPresent"
    assert [p["containerPort"] for p in c["ports"]] == [7078, 7079, 4040]
    assert c["resources"] == {
        "requests": {"cpu": "1", "memory": "2432Mi"},
        "limits": {"cpu": "3", "memory": "2432Mi"},
    }
    assert list(_env(out)) == ["SPARK_USER", "SPARK_APPLICATION_ID", "SPARK_DRIVER_BIND_ADDRESS"]
    props = out.system_properties
    assert props["spark.kubernetes.memoryOverheadFactor"] == "0.1"
    assert props["spark.kubernetes.submitInDriver"] == "true"
    assert props["spark.app.id"] == IDS.app_id


@pytest.mark.parametrize(
    ("spec", "memory", "factor"),
    [
        ({"jars": None, "mainClass": None, "pyFiles": "local:///pi.py"}, "1433Mi", "0.4"),
        ({"sparkConf": {"spark.driver.memoryOverhead": "1g"}}, "2048Mi", "0.1"),
        ({"sparkConf": {"spark.kubernetes.memoryOverheadFactor": "0.5"}}, "1536Mi", "0.5"),
        ({"sparkConf": {"spark.driver.memory": "8g"}}, "9011Mi", "0.1"),
        ({"sparkConf": {"spark.driver.minMemoryOverhead": "500m"}}, "1524Mi", "0.1"),
    ],
)
def test_memory_formula(spec: dict[str, Any], memory: str, factor: str) -> None:
    out = _apply(BasicDriverStep(), make_conf(make_app(**spec)))
    assert out.container["resources"]["requests"]["memory"] == memory
    assert out.system_properties["spark.kubernetes.memoryOverheadFactor"] == factor


def test_basic_driver_keeps_template_container_name_and_spark_41_port() -> None:
    app = make_app(
        runtimeVersions={"sparkVersion": "4.1.0"},
        driverSpec={"podTemplateSpec": {"spec": {"containers": [{"name": "main"}]}}},
    )
    out = _apply(BasicDriverStep(), make_conf(app))
    assert out.container["name"] == "main"
    assert out.container["ports"][-1] == {
        "containerPort": 15002,
        "name": "spark-connect",
        "protocol": "TCP",
    }


def test_service_account() -> None:
    out = _apply(ServiceAccountStep(), make_conf(make_app(serviceAccount="spark")))
    assert out.pod["spec"]["serviceAccount"] == out.pod["spec"]["serviceAccountName"] == "spark"


def test_driver_service() -> None:
    out = _apply(DriverServiceStep(), make_conf())
    (svc,) = out.resources
    assert svc["metadata"]["name"] == f"spark-pi-{IDS.unique_id}-driver-svc"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"]["spark-app-selector"] == IDS.app_id
    assert [p["port"] for p in svc["spec"]["ports"]] == [7078, 7079, 4040]
    assert (
        out.system_properties["spark.driver.host"]
        == f"spark-pi-{IDS.unique_id}-driver-svc.default.svc"
    )
    assert "ownerReferences" not in svc["metadata"]


def test_mount_and_env_secrets() -> None:
    conf = make_conf(
        make_app(secrets={"mounts": {"creds": "/etc/creds"}, "env": {"PW": "db:password"}})
    )
    out = _apply(MountSecretsStep(), conf)
    assert out.pod["spec"]["volumes"] == [
        {"name": "creds-volume", "secret": {"secretName": "creds"}}
    ]
    assert out.container["volumeMounts"] == [{"mountPath": "/etc/creds", "name": "creds-volume"}]
    out = _apply(EnvSecretsStep(), conf)
    assert out.container["env"] == [
        {"name": "PW", "valueFrom": {"secretKeyRef": {"key": "password", "name": "db"}}}
    ]


def test_volumes_with_on_demand_claim() -> None:
    app = make_app(
        volumes=[
            {
                "name": "data",
                "type": "persistentVolumeClaim",
                "mountPath": "/data",
                "options": {
                    "claimName": "OnDemand",
                    "storageClass": "standard",
                    "sizeLimit": "5Gi",
                },
            },
            {
                "name": "scratch",
                "type": "emptyDir",
                "mountPath": "/scratch",
                "readOnly": True,
                "options": {"medium": "Memory"},
            },
        ]
    )
    out = _apply(VolumesStep(), make_conf(app))
    vols = {v["name"]: v for v in out.pod["spec"]["volumes"]}
    claim = f"spark-pi-{IDS.unique_id}-driver-pvc-1"
    assert vols["data"]["persistentVolumeClaim"] == {"claimName": claim}
    assert vols["scratch"]["emptyDir"] == {"medium": "Memory"}
    (pvc,) = out.resources
    assert pvc["metadata"]["name"] == claim
    assert pvc["spec"]["accessModes"] == ["ReadWriteOncePod"]
    assert {"mountPath": "/scratch", "name": "scratch", "readOnly": True} in out.container[
        "volumeMounts"
    ]


def test_driver_command_args() -> None:
    out = _apply(DriverCommandStep(), make_conf(make_app(driverArgs=["100"], proxyUser="bob")))
    assert out.container["args"] == [
        "driver",
        "--proxy-user",
        "bob",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.apache.spark.examples.SparkPi",
        "local:///opt/spark/examples/jars/spark-examples.jar",
        "100",
    ]
    assert out.system_properties["spark.kubernetes.resource.type"] == "java"
    py = make_app(
        jars=None,
        mainClass=None,
        pyFiles="local:///pi.py,local:///dep.zip",
        sparkConf={"spark.pyspark.python": "python3"},
    )
    out = _apply(DriverCommandStep(), make_conf(py))
    assert out.container["args"][-2:] == ["org.apache.spark.deploy.PythonRunner", "local:///pi.py"]
    assert _env(out) == {"PYSPARK_PYTHON": "python3", "PYSPARK_DRIVER_PYTHON": "python3"}
    no_jar = make_app(jars=None)
    assert _apply(DriverCommandStep(), make_conf(no_jar)).container["args"][-1] == "spark-internal"


@pytest.mark.parametrize(
    ("conf", "env", "expected"),
    [
        # the submitter's PYSPARK_PYTHON alone: both (SPARK-33748's ./env/bin/python)
        ({}, ("./env/bin/python", ""), ("./env/bin/python", "./env/bin/python")),
        ({}, ("./env/bin/python", "python3"), ("./env/bin/python", "python3")),
        ({}, ("", "python3"), (None, "python3")),
        ({}, ("", ""), (None, None)),
        # the confs win over the environment, spark.pyspark.python over PYSPARK_DRIVER_PYTHON
        ({"spark.pyspark.python": "/c/py"}, ("/e/py", "/e/dpy"), ("/c/py", "/c/py")),
        ({"spark.pyspark.driver.python": "/c/dpy"}, ("/e/py", ""), ("/e/py", "/c/dpy")),
    ],
)
def test_python_driver_falls_back_to_the_submitters_environment(
    conf: dict[str, str], env: tuple[str, str], expected: tuple[str | None, str | None]
) -> None:
    """As Spark's DriverCommandFeatureStep: conf first, then the submitter's environment (which
    Settings reads and the RenderContext carries)."""
    py = make_app(jars=None, mainClass=None, pyFiles="local:///pi.py", sparkConf=conf)
    ctx = RenderContext(pyspark_python=env[0], pyspark_driver_python=env[1])
    out = _apply(DriverCommandStep(), make_conf(py, ctx))
    got = _env(out) if "env" in out.container else {}
    assert (got.get("PYSPARK_PYTHON"), got.get("PYSPARK_DRIVER_PYTHON")) == expected
    java = _apply(DriverCommandStep(), make_conf(make_app(), ctx))
    assert "env" not in java.container


def test_executor_template_carries_placement() -> None:
    app = make_app(
        tolerations=[TOLERATION],
        executor={"priorityClassName": "batch"},
        executorSpec={"podTemplateSpec": {"metadata": {"labels": {"x": "y"}}}},
    )
    out = _apply(ExecutorTemplateStep(), make_conf(app))
    (cm,) = out.resources
    assert cm["metadata"]["name"] == f"spark-pi-{IDS.unique_id}-driver-podspec-conf-map"
    assert cm["immutable"] is True

    template = yaml.safe_load(cm["data"]["podspec-configmap-key"])
    assert template["kind"] == "Pod" and template["metadata"]["labels"] == {"x": "y"}
    assert template["spec"]["tolerations"] == [TOLERATION]
    assert template["spec"]["priorityClassName"] == "batch"
    assert (
        out.system_properties["spark.kubernetes.executor.podTemplateFile"]
        == "/opt/spark/pod-template/pod-spec-template.yml"
    )
    assert {"mountPath": "/opt/spark/pod-template", "name": "pod-template-volume"} in out.container[
        "volumeMounts"
    ]


def test_local_dirs_default_and_tmpfs_and_existing() -> None:
    out = _apply(LocalDirsStep(), make_conf())
    path = f"/var/data/spark-{IDS.local_dir_uuid}"
    assert out.pod["spec"]["volumes"] == [{"emptyDir": {}, "name": "spark-local-dir-1"}]
    assert _env(out) == {"SPARK_LOCAL_DIRS": path}
    out = _apply(
        LocalDirsStep(),
        make_conf(
            make_app(
                sparkConf={"spark.local.dir": "/a,/b", "spark.kubernetes.local.dirs.tmpfs": "true"}
            )
        ),
    )
    assert [v["emptyDir"] for v in out.pod["spec"]["volumes"]] == [{"medium": "Memory"}] * 2
    conf = make_conf(
        make_app(volumes=[{"name": "spark-local-dir-x", "type": "emptyDir", "mountPath": "/fast"}])
    )
    out = _apply(LocalDirsStep(), conf, _apply(VolumesStep(), conf))
    assert _env(out) == {"SPARK_LOCAL_DIRS": "/fast"}
    assert len(out.pod["spec"]["volumes"]) == 1


def test_placement_and_priority() -> None:
    affinity: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}
    }
    app = make_app(
        affinity=affinity,
        tolerations=[TOLERATION],
        driver={"tolerations": [TOLERATION]},
        priorityClassName="routine",
    )
    conf = make_conf(app)
    out = _apply(PlacementStep(), conf)
    assert out.pod["spec"]["affinity"] == affinity
    assert out.pod["spec"]["tolerations"] == [TOLERATION]  # no duplicates
    assert _apply(PriorityClassStep(), conf).pod["spec"]["priorityClassName"] == "routine"


def test_spark_ui_service_and_ingress() -> None:
    app = make_app(
        sparkUI={
            "ingress": {
                "host": "ui.example.com",
                "className": "nginx",
                "annotations": {"a": "b"},
                "tls": [{"hosts": ["ui.example.com"], "secretName": "tls"}],
            }
        }
    )
    out = _apply(SparkUIStep(), make_conf(app))
    svc, ing = out.resources
    assert svc["metadata"]["name"] == f"spark-pi-{IDS.unique_id}-ui-svc"
    assert svc["spec"]["selector"]["spark-role"] == "driver"
    assert ing["spec"]["ingressClassName"] == "nginx"
    rule = ing["spec"]["rules"][0]
    assert rule["host"] == "ui.example.com"
    assert rule["http"]["paths"][0]["backend"]["service"]["name"] == svc["metadata"]["name"]
    assert ing["spec"]["tls"] == [{"hosts": ["ui.example.com"], "secretName": "tls"}]
    assert ing["metadata"]["annotations"] == {"a": "b"}


def test_extra_resources() -> None:
    app = make_app(
        configMapSpecs=[{"name": "extra", "data": {"k": "v"}}],
        driverServiceIngressList=[
            {
                "serviceMetadata": {"name": "s"},
                "serviceSpec": {"ports": [{"port": 80}]},
                "ingressMetadata": {"name": "i"},
            }
        ],
    )
    out = _apply(ExtraResourcesStep(), make_conf(app))
    assert out.pre_resources == ()  # owned by the driver from the start: nothing can leak
    cm, svc = out.resources
    assert (cm["kind"], cm["metadata"]["name"], cm["data"]) == ("ConfigMap", "extra", {"k": "v"})
    assert svc["spec"]["selector"]["spark-app-selector"] == IDS.app_id


def test_spark_conf_step_serialises_every_property() -> None:
    conf = make_conf()
    state = start(conf).evolve(properties={"spark.driver.host": "h"})
    out = _apply(SparkConfStep(), conf, state)
    (cm,) = out.resources
    assert cm["metadata"]["name"] == f"spark-drv-{IDS.unique_id}-conf-map"
    assert cm["immutable"] is True
    assert cm["data"]["spark.kubernetes.namespace"] == "default"
    text = cm["data"]["spark.properties"]
    assert text.startswith(
        "#Java properties built from Kubernetes config map with name: "
        f"spark-drv-{IDS.unique_id}-conf-map\n"
    )
    props = load(text)
    assert props["spark.driver.host"] == "h"
    assert props["spark.master"] == "k8s://https://kubernetes.default.svc:443"
    assert out.pod["spec"]["volumes"][-1]["configMap"]["items"] == [
        {"key": "spark.properties", "mode": 420, "path": "spark.properties"}
    ]
    assert _env(out) == {"SPARK_CONF_DIR": "/opt/spark/conf"}


def test_spark_4_2_and_newer_get_the_per_app_network_policy() -> None:
    """As Spark 4.2's NetworkPolicyFeatureStep: executors admit their own app's pods only."""
    app = make_app(runtimeVersions={"sparkVersion": "4.3.0"}, image="apache/spark:4.3.0")
    out = render(app, IDS)
    [policy] = [o for o in out.resources if o["kind"] == "NetworkPolicy"]
    app_id = IDS.app_id
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["metadata"]["name"] == f"{IDS.resource_prefix}-policy"
    assert policy["metadata"]["labels"][APP_SELECTOR_LABEL] == app_id
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"spark-role": "executor", APP_SELECTOR_LABEL: app_id}},
        "ingress": [{"from": [{"podSelector": {"matchLabels": {APP_SELECTOR_LABEL: app_id}}}]}],
    }
    assert policy not in out.pre_resources  # created owned, right after the driver pod
    older = render(make_app(runtimeVersions={"sparkVersion": "4.1.1"}), IDS)
    assert not [o for o in older.objects if o["kind"] == "NetworkPolicy"]


@pytest.mark.parametrize(
    ("version", "conf", "expected"),
    [
        ("4.0.1", {}, None),
        ("4.2.0", {}, None),
        ("4.3.0", {}, False),
        ("4.3.0", {"spark.kubernetes.securityContext.allowPrivilegeEscalation": "true"}, True),
        (
            "4.3.0",
            {
                "spark.kubernetes.securityContext.allowPrivilegeEscalation": "true",
                "spark.kubernetes.driver.securityContext.allowPrivilegeEscalation": "false",
            },
            False,
        ),
    ],
)
def test_spark_4_3_sets_the_driver_containers_privilege_escalation(
    version: str, conf: dict[str, str], expected: bool | None
) -> None:
    app = make_app(runtimeVersions={"sparkVersion": version}, sparkConf=conf)
    out = render(app, IDS)
    context = out.driver_pod["spec"]["containers"][0].get("securityContext") or {}
    assert context.get("allowPrivilegeEscalation") == expected


@pytest.mark.parametrize(("version", "protocol"), [("4.1.1", None), ("4.2.0", "grpc")])
def test_the_spark_connect_port_is_grpc_from_4_2(version: str, protocol: str | None) -> None:
    out = render(make_app(runtimeVersions={"sparkVersion": version}), IDS)
    [service] = [o for o in out.resources if o["kind"] == "Service"]
    [port] = [p for p in service["spec"]["ports"] if p["name"] == "spark-connect"]
    assert port.get("appProtocol") == protocol
