"""HadoopConfStep: existing Hadoop and krb5 ConfigMaps, mounted as spark-submit mounts them."""

from __future__ import annotations

from sparkplane.render import RenderContext, render
from sparkplane.spec import AppIds, from_submit_args


def _render(*conf: str):
    argv = ["--image", "apache/spark:4.0.1", "--class", "A"]
    for c in conf:
        argv += ["--conf", c]
    app = from_submit_args([*argv, "local:///x.jar"])
    return render(app, AppIds.new("x"), RenderContext())


def test_hadoop_and_krb5_config_maps_are_mounted():
    out = _render(
        "spark.kubernetes.hadoop.configMapName=hcm",
        "spark.kubernetes.kerberos.krb5.configMapName=kcm",
    )
    pod = out.driver_pod
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["hadoop-properties"]["configMap"] == {"name": "hcm"}
    assert volumes["krb5-file"]["configMap"] == {"name": "kcm"}
    container = pod["spec"]["containers"][0]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["hadoop-properties"]["mountPath"] == "/opt/hadoop/conf"
    assert mounts["krb5-file"] == {
        "name": "krb5-file",
        "mountPath": "/etc/krb5.conf",
        "subPath": "krb5.conf",
    }
    assert {"name": "HADOOP_CONF_DIR", "value": "/opt/hadoop/conf"} in container["env"]
    assert out.system_properties["spark.kubernetes.executor.hadoopConfigMapName"] == "hcm"


def test_nothing_without_them():
    pod = _render().driver_pod
    names = {v["name"] for v in pod["spec"].get("volumes", [])}
    assert not names & {"hadoop-properties", "krb5-file"}
