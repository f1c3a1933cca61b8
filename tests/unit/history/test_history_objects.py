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


S3A = EventLogStore(
    log_dir="s3a://sparkplane/events/jobs",
    s3_endpoint="http://10.217.0.1:19256",
    s3_secret="spark-events-s3",
    default=True,
)


def test_s3a_store_round_trips_and_keeps_only_the_secrets_name() -> None:
    cm = history.to_configmap("jobs", S3A)
    assert history.from_configmap(cm) == S3A
    assert cm["data"]["s3Secret"] == "spark-events-s3"
    assert not any("AWS_SECRET" in v for v in cm["data"].values())


def test_s3a_event_log_conf_rolls_and_reads_keys_from_the_secret() -> None:
    conf = history.event_log_conf(S3A)
    assert conf["spark.eventLog.dir"] == "s3a://sparkplane/events/jobs"
    assert conf["spark.eventLog.rolling.enabled"] == "true"
    assert conf["spark.eventLog.rolling.maxFileSize"] == "32m"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://10.217.0.1:19256"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    ref = "spark.kubernetes.driver.secretKeyRef"
    assert conf[f"{ref}.AWS_ACCESS_KEY_ID"] == "spark-events-s3:AWS_ACCESS_KEY_ID"
    assert conf[f"{ref}.AWS_SECRET_ACCESS_KEY"] == "spark-events-s3:AWS_SECRET_ACCESS_KEY"
    aws = history.event_log_conf(EventLogStore(log_dir="s3a://b/e"))  # AWS: its own identity
    assert not any(k.startswith(("spark.hadoop.", ref)) for k in aws)


def test_s3a_history_server_has_the_keys_and_creates_the_log_dir() -> None:
    deployment, _ = history.server_objects("jobs", S3A, "spark:4.0.1")
    pod = deployment["spec"]["template"]["spec"]
    main = pod["containers"][0]
    opts = main["env"][0]["value"]
    assert "-Dspark.history.fs.logDirectory=s3a://sparkplane/events/jobs" in opts
    assert "-Dspark.hadoop.fs.s3a.endpoint=http://10.217.0.1:19256" in opts
    assert "-Dspark.history.fs.eventLog.rolling.maxFilesToRetain=20" in opts
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in main["env"] if "valueFrom" in e}
    assert refs["AWS_SECRET_ACCESS_KEY"] == {
        "name": "spark-events-s3",
        "key": "AWS_SECRET_ACCESS_KEY",
    }
    (init,) = pod["initContainers"]
    assert init["command"][-3:] == ["-mkdir", "-p", "s3a://sparkplane/events/jobs"]
    assert "-Dfs.s3a.path.style.access=true" in init["command"]
    assert "volumes" not in pod


def test_s3_options_need_an_s3a_store_and_a_url() -> None:
    import pytest

    from sparkplane.errors import ValidationError
    from sparkplane.usecases.history import store_for

    with pytest.raises(ValidationError, match="--s3-secret"):
        store_for("jobs", s3_secret="keys")
    with pytest.raises(ValidationError, match="--s3-endpoint"):
        store_for("jobs", log_dir="s3a://b/e", s3_endpoint="seaweedfs:8333")
    store = store_for("jobs", log_dir="s3a://b/e", s3_endpoint="http://s3:8333", s3_secret="k")
    assert (store.host_path, store.s3_endpoint, store.s3_secret) == (None, "http://s3:8333", "k")
