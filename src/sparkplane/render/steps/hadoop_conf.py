"""Hadoop and Kerberos configuration steps (Spark's ``HadoopConfDriverFeatureStep`` and the
krb5 part of ``KerberosConfDriverFeatureStep``), for ConfigMaps that already exist.

``spark.kubernetes.hadoop.configMapName=<cm>``: volume ``hadoop-properties`` (that ConfigMap)
mounted at ``/opt/hadoop/conf``, env ``HADOOP_CONF_DIR=/opt/hadoop/conf``, and the system
property ``spark.kubernetes.executor.hadoopConfigMapName=<cm>`` so the driver gives executors
the same. ``spark.kubernetes.kerberos.krb5.configMapName=<cm>``: volume ``krb5-file`` mounted at
``/etc/krb5.conf`` (subPath ``krb5.conf``). Building these ConfigMaps from submitter-local
files (``HADOOP_CONF_DIR``, ``krb5.path``) and keytabs/delegation tokens are not supported
(the validator says so). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, env_var, with_env, with_volumes
from sparkplane.spec.models import SparkApp

HADOOP_CM = "spark.kubernetes.hadoop.configMapName"
KRB5_CM = "spark.kubernetes.kerberos.krb5.configMapName"
HADOOP_CONF_DIR = "/opt/hadoop/conf"


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When either ConfigMap is named (the step mounts each one that is)."""
    return bool(conf.get(HADOOP_CM) or conf.get(KRB5_CM))


class HadoopConfStep:
    """Mount the named Hadoop and krb5 ConfigMaps into the driver."""

    name = "hadoop-conf"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        pod, container = state.pod, state.container
        props: dict[str, str] = {}
        if hadoop := conf.get(HADOOP_CM):
            pod, container = with_volumes(
                pod,
                container,
                [{"name": "hadoop-properties", "configMap": {"name": hadoop}}],
                [{"name": "hadoop-properties", "mountPath": HADOOP_CONF_DIR}],
            )
            container = with_env(container, [env_var("HADOOP_CONF_DIR", HADOOP_CONF_DIR)])
            props["spark.kubernetes.executor.hadoopConfigMapName"] = hadoop
        if krb5 := conf.get(KRB5_CM):
            pod, container = with_volumes(
                pod,
                container,
                [{"name": "krb5-file", "configMap": {"name": krb5}}],
                [{"name": "krb5-file", "mountPath": "/etc/krb5.conf", "subPath": "krb5.conf"}],
            )
        return state.evolve(pod=pod, container=container, properties=props)
