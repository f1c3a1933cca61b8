"""Event-log settings and the History Server's objects (pure)."""

from __future__ import annotations

from datetime import timedelta

from sparkplane.history import server as history
from sparkplane.history.server import EventLogStore

HOST = EventLogStore(host_path="/var/lib/spark-events", default=True, retention=timedelta(hours=1))


def test_configmap_round_trip() -> None:
    cm = history.to_configmap("jobs", HOST)
    assert cm["metadata"]["name"] == "sparkplane-history"
    assert history.from_configmap(cm) == HOST
    s3 = EventLogStore(log_dir="s3a://bucket/events")
    assert history.from_configmap(history.to_configmap("jobs", s3)) == s3


def test_event_log_conf_mounts_the_shared_volume() -> None:
    conf = history.event_log_conf(HOST)
    vol = "spark.kubernetes.driver.volumes.hostPath.spark-events"
    assert conf["spark.eventLog.enabled"] == "true"
    assert conf["spark.eventLog.dir"] == "file:/spark-events"
    assert conf[f"{vol}.mount.path"] == "/spark-events"
    assert conf[f"{vol}.options.path"] == "/var/lib/spark-events"
    claim = history.event_log_conf(EventLogStore(claim="events"))
    key = "spark.kubernetes.driver.volumes.persistentVolumeClaim.spark-events.options.claimName"
    assert claim[key] == "events"
    remote = history.event_log_conf(EventLogStore(log_dir="gs://b/e"))
    assert remote == {"spark.eventLog.enabled": "true", "spark.eventLog.dir": "gs://b/e"}


def test_with_event_log_opt_in_default_and_opt_out() -> None:
    opt_in = EventLogStore(host_path="/e", default=False)
    assert history.with_event_log({}, opt_in) == {}
    assert history.with_event_log({}, None) == {}
    asked = history.with_event_log({"spark.eventLog.enabled": "true"}, opt_in)
    assert asked["spark.eventLog.dir"] == "file:/spark-events"
    by_default = history.with_event_log({"spark.eventLog.dir": "file:/mine"}, HOST)
    assert by_default["spark.eventLog.dir"] == "file:/mine"  # the app's own keys win
    assert history.with_event_log({"spark.eventLog.enabled": "false"}, HOST) == {
        "spark.eventLog.enabled": "false"
    }


def test_server_objects_run_the_spark_images_history_server() -> None:
    deployment, service = history.server_objects("jobs", HOST, "spark:4.0.1")
    pod = deployment["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert main["command"][-1] == "org.apache.spark.deploy.history.HistoryServer"
    opts = main["env"][0]["value"]
    assert "-Dspark.history.fs.logDirectory=file:/spark-events" in opts
    assert "-Dspark.history.fs.cleaner.maxAge=3600s" in opts
    assert pod["volumes"][0]["hostPath"]["path"] == "/var/lib/spark-events"
    assert pod["initContainers"][0]["command"] == ["sh", "-c", "chmod 1777 /spark-events"]
    assert service["spec"]["ports"][0]["port"] == 18080
    assert history.app_path("spark-1") == "/history/spark-1/jobs/"
