"""The Spark Connect server as a Spark application: its main class, its jar, its gRPC port.

One place for what both ways of running it share: native sessions
(:mod:`sparkplane.usecases.session`) and the operator's Kubeflow ``SparkConnect``
(:mod:`sparkplane.spec.kubeflow_connect`) both submit Spark's own
``org.apache.spark.sql.connect.service.SparkConnectServer`` from the jar Spark's distribution
(and the dev cluster's image) ships, listening on Spark Connect's default port. Pure.
"""

from __future__ import annotations

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: The server's jar in Spark's distribution (and the dev cluster's image), by Spark version.
CONNECT_JAR = "local:///opt/spark/jars/spark-connect_2.13-{version}.jar"
#: Spark Connect's gRPC port (Spark's default, and Kubeflow's Service port).
CONNECT_PORT = 15002
CONNECT_PORT_CONF = "spark.connect.grpc.binding.port"


def connect_jar(spark_version: str) -> str:
    """The server's jar for ``spark_version`` (e.g. ``4.0.1``)."""
    return CONNECT_JAR.format(version=spark_version)
