"""Staged bundles in object storage: two staging replicas serve one SeaweedFS bucket.

The dev cluster's SeaweedFS (its S3 gateway, its admin keys as the staging server's own) holds
the bytes and the records (``--store s3://BUCKET/PREFIX``, :mod:`sparkplane.staging.s3`). Two
staging servers (replicas: their own ports, event loops and no local state) share it: a bundle
uploaded through one downloads through the other with its resource secret, a wrong secret is
refused by both, the quota counts what either stored, the owner's clean-up round on one removes
the bytes and records from the bucket, and the bucket itself answers no anonymous request (no
public access: only the server's keys reach it). A bundle larger than one multipart part checks
the streamed upload.
"""

from __future__ import annotations

import hashlib
import os
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from sparkplane.history.s3_store import parse_location
from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.cleanup import CleanupPolicy, run_cleanup
from sparkplane.staging.client import download_bundle, upload_bundle
from sparkplane.staging.errors import StagingError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.s3 import PART_BYTES, S3BundleStore, S3Metadata
from sparkplane.staging.settings import StagingSettings
from sparkplane_devcluster.seaweed import S3Access
from tests.staging_server import serve_in_background

SECRET = UploadSecret("tests", "integration-upload-secret-0123456789")


@pytest.fixture
def store_uri(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A fresh prefix of the dev bucket; this process holds the admin keys (the server's)."""
    access = S3Access.load(kubeconfig.parent / "seaweedfs" / "s3.json")
    for key, value in access.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    return f"s3://{access.bucket}/staging-test-{uuid.uuid4().hex[:8]}"


def _settings(store: str, tmp: Path, **more: object) -> StagingSettings:
    return StagingSettings(
        host="127.0.0.1",
        port=0,
        store=store,
        storage_dir=tmp / "unused-bundles",
        db_path=tmp / "unused.sqlite3",
        secret_hash_iterations=1000,
        cleanup_interval_seconds=3600,  # the test runs its clean-up round itself
        upload_secrets=(SECRET,),
        **more,  # type: ignore[arg-type]
    )


def test_two_replicas_serve_one_bucket(store_uri: str, tmp_path: Path) -> None:
    bundle = tmp_path / "deps.tar.gz"
    bundle.write_bytes(os.urandom(PART_BYTES + 1234))  # two multipart parts
    owner = ResourceOwner("team-a", {"spark-app-selector": "spark-1"})
    quota = {"namespace_quota_bytes": bundle.stat().st_size + 10}
    settings = _settings(store_uri, tmp_path, **quota)
    with serve_in_background(settings) as one, serve_in_background(settings) as two:
        staged = upload_bundle(one, bundle, owner, token=SECRET.secret)
        assert not list((tmp_path).glob("unused*"))  # nothing on this machine's disk
        got = tmp_path / "got.tar.gz"
        download_bundle(two, staged.resource_id, staged.secret, got)
        assert (
            hashlib.sha256(got.read_bytes()).digest()
            == hashlib.sha256(bundle.read_bytes()).digest()
        )
        for url in (one, two):
            with pytest.raises(StagingError):
                download_bundle(url, staged.resource_id, "not-the-secret", tmp_path / "x")
        # the namespace's quota counts what the other replica stored
        with pytest.raises(StagingError, match=r"507|quota"):
            upload_bundle(two, bundle, owner, token=SECRET.secret)

    location = parse_location(store_uri, "--store")
    store, records = S3BundleStore(location), S3Metadata(location)
    [record] = records.all()
    assert record.resource_id == staged.resource_id and record.first_downloaded_at
    assert record.secret_hash != staged.secret  # only the secret's hash is stored
    # the bucket answers no anonymous request: only the server's keys reach the bundle
    endpoint = os.environ["AWS_ENDPOINT_URL"].rstrip("/")
    key = f"{location.bucket}/{location.prefix}bundles/{staged.resource_id}"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{endpoint}/{key}", timeout=10)
    assert refused.value.code in (401, 403)
    # the owner is gone: one clean-up round removes the bytes and every record of it
    policy = CleanupPolicy(unused_expiry=3600, owner_grace=0)
    gone = run_cleanup(records, store, lambda *_: False, time.time() + 1, policy)
    assert [d.resource_id for d in gone] == [staged.resource_id]
    assert not store.exists(staged.resource_id) and records.all() == []
    assert records.usage("team-a") == (0, 0)
