"""Event logs in object storage, on the real node: a real SparkPi writes its event log with S3A
(the Spark image's own connector) to the dev cluster's SeaweedFS, and a History Server started
by ``history up --log-dir s3a://...`` serves it after the driver is gone.

The platform admin creates the namespace's Secret (its tenant keys, scoped by SeaweedFS to the
namespace's prefixes) and runs ``history up``; the tenant, with sparkplane's client role,
submits, ``gc``s the expired driver and opens the app with ``ui``; the driver runs with the
shipped driver role. Another namespace's keys can neither list nor read this namespace's
event logs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkplane.kube import Kube
from sparkplane_devcluster.cluster import DevCluster
from tests.integration.helpers import wait_for
from tests.realnode.sparkapps import DONE, cli, driver_pod, pod_logs, spec, submit, write
from tests.realnode.test_history import _ui, assert_history_serves
from tests.realnode.test_incluster import _driver_role, _drop_namespace
from tests.realnode.test_sessions import minted

NS = "spark-jobs"  # a tenant namespace of the dev cluster's S3 (its own scoped keys)
OTHER = "default"
SECRET = "spark-events-s3"


@pytest.mark.timeout(600)  # a real SparkPi and a History Server on 2 shared cores
def test_sparkpi_event_log_in_s3_is_served_after_its_driver_is_deleted(
    real_cluster: DevCluster,
    kube: Kube,
    kubeconfig: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s3 = real_cluster.s3_access()
    assert s3.pod_endpoint and NS in s3.tenants and OTHER in s3.tenants
    log_dir = s3.events_dir(NS)
    _drop_namespace(kube, NS)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    try:
        _driver_role(kube, NS)
        keys = s3.env(NS)
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": {"name": SECRET, "namespace": NS},
                "stringData": {k: keys[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")},
            }
        )
        up = cli(
            kubeconfig,
            *("history", "up", "-n", NS, "--log-dir", log_dir, "--retention", "1h"),
            *("--s3-endpoint", s3.pod_endpoint, "--s3-secret", SECRET, "--wait", "240"),
        )
        assert "Deployment/sparkplane-history applied" in up.stdout
        settings = kube.get("v1", "ConfigMap", "sparkplane-history", NS)["data"]
        assert keys["AWS_SECRET_ACCESS_KEY"] not in json.dumps(settings)  # only the Secret's name

        tenant = minted(kubeconfig, NS, "client", "alice", tmp_path / "alice.kubeconfig")
        monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", str(tmp_path / "archive"))  # gc, ui
        body = spec("pi-s3", NS, executors=1, args=["20"])
        name = submit(tenant, "-f", str(write(tmp_path, body)), "-n", NS, "--ttl", "0s")
        cli(tenant, "wait", name, "-n", NS, "--timeout", "300", check=None)
        pod = wait_for(
            lambda: (p := driver_pod(kube, NS, name)) and p["status"]["phase"] in DONE and p,
            timeout=60,
            what="the driver pod finished",
        )
        assert pod["status"]["phase"] == "Succeeded", pod_logs(kube, NS, pod["metadata"]["name"])
        app_id = pod["metadata"]["labels"]["spark-app-selector"]

        # the event log is in the bucket, under the namespace's prefix, rolled (Spark 4)
        prefix = f"events/{NS}/"
        listed = s3.client(NS).list_objects_v2(Bucket=s3.bucket, Prefix=prefix)
        objects = [o["Key"] for o in listed.get("Contents", [])]
        assert any(f"eventlog_v2_{app_id}/events_1_{app_id}" in k for k in objects), objects

        cli(tenant, "gc", "-n", NS)
        wait_for(lambda: driver_pod(kube, NS, name) is None, timeout=60, what="driver gone")
        proc, url = _ui(tenant, "ui", name, "-n", NS, "--port", "0")
        try:
            assert_history_serves(
                url, app_id, timeout=120, what="the History Server lists the app from S3"
            )
        finally:
            proc.terminate()
            proc.wait(10)

        # another namespace's keys: no listing, no reading of this namespace's event logs
        other = s3.client(OTHER)
        for call in (
            lambda: other.list_objects_v2(Bucket=s3.bucket, Prefix=prefix),
            lambda: other.get_object(Bucket=s3.bucket, Key=objects[0]),
        ):
            with pytest.raises(Exception, match="AccessDenied"):
                call()
    finally:
        _drop_namespace(kube, NS)
        admin = s3.client()
        left = admin.list_objects_v2(Bucket=s3.bucket, Prefix=f"events/{NS}/").get("Contents", [])
        for obj in left:
            admin.delete_object(Bucket=s3.bucket, Key=obj["Key"])
