"""The log archive in object storage, against the dev cluster's real S3 server (SeaweedFS).

Proves: the operator (in-process, ``SPARKPLANE_LOG_ARCHIVE=s3://...``, credentials from the AWS
environment) archives a released app into the bucket under the app's namespace prefix, and
``sparkplane logs`` (a fresh process, the least-privilege client identity) reads it back once the
driver is gone; ``--tail`` of a large log streams; a tenant's scoped keys read, write and list
only their own namespace's prefix (another namespace's objects are AccessDenied); expired
archives are pruned by prefix, and an unexpired one is kept.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sparkplane.history.archive import META, ArchiveMeta
from sparkplane.history.logs import prune, read_archived
from sparkplane.history.s3_store import S3Store, S3StoreError, parse_location
from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from sparkplane.settings import Settings
from sparkplane_devcluster.seaweed import S3Access
from tests.integration.operator_helpers import running_operator, spark_app, wait_state
from tests.integration.test_cli import run
from tests.integration.test_log_archive_kube import client_identity  # noqa: F401 (fixture)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def s3(kubeconfig: Path) -> S3Access:
    """The dev cluster's S3 endpoint and keys (written by ``dev-cluster up``)."""
    return S3Access.load(kubeconfig.parent / "seaweedfs" / "s3.json")


def _aws_env(access: S3Access, tmp: Path, tenant: str | None = None) -> dict[str, str]:
    """The AWS variables of the admin (or a tenant), and no developer's own AWS files."""
    return {
        **access.env(tenant),
        "AWS_CONFIG_FILE": str(tmp / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
    }


@pytest.fixture
def s3_archive(s3: S3Access, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> S3Access:
    """This process archives to the dev bucket as the admin."""
    for key, value in _aws_env(s3, tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", s3.archive)
    monkeypatch.setenv("SPARKPLANE_CACHE_DIR", str(tmp_path / "cache"))  # no local archive
    return s3


def _store(access: S3Access, namespaces: list[str] | None, tenant: str | None = None) -> S3Store:
    return S3Store(parse_location(access.archive), namespaces, client=access.client(tenant))


def _files(app: str, namespace: str, *, ago: timedelta, retain: int) -> dict[str, bytes]:
    meta = ArchiveMeta(
        namespace=namespace,
        app=app,
        driver_pod=f"{app}-driver",
        archived_at=(datetime.now(UTC) - ago).isoformat(timespec="seconds"),
        reason="killed",
        retain_seconds=retain,
    )
    return {"driver.log": f"the log of {app}\n".encode(), META: meta.to_json()}


def test_operator_archives_to_s3_and_logs_reads_it_back_after_the_driver_is_gone(
    kube: Kube,
    namespace: str,
    s3_archive: S3Access,
    client_identity: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    install_crds(kube)
    app = spark_app("pi", sim={"outcome": "Succeeded", "run-for": "2s"})
    with running_operator(kube, namespace):
        kube.create(app, namespace=namespace)
        wait_state(kube, namespace, "pi", "ResourceReleased", timeout=60)
    assert kube.get_or_none("v1", "Pod", "pi-0-driver", namespace) is None
    store = _store(s3_archive, [namespace])
    assert store.keys(f"{namespace}/pi/") == [
        f"{namespace}/pi/driver.log",
        f"{namespace}/pi/{META}",
    ]
    assert kube.get_or_none("v1", "ConfigMap", "sparkplane-logs-pi", namespace) is None  # not etcd

    # a laptop: the client identity, the bucket through the AWS environment, nothing local
    env = {
        **_aws_env(s3_archive, tmp_path),
        "SPARKPLANE_LOG_ARCHIVE": s3_archive.archive,
        "SPARKPLANE_CACHE_DIR": str(tmp_path / "laptop"),
    }
    shown = run(client_identity, "logs", "pi", env_extra=env)
    assert "Pi is roughly 3.1418" in shown.stdout
    assert "from the archive" in shown.stderr and "released by the operator" in shown.stderr
    tail = run(client_identity, "logs", "pi", "--tail", "1", env_extra=env)
    assert tail.stdout.strip() == "INFO SparkContext: Successfully stopped SparkContext"
    store.delete_prefix(f"{namespace}/")


def test_a_large_log_streams_and_tail_reads_its_end(s3: S3Access) -> None:
    namespace, app = "spark-jobs", f"big-{uuid.uuid4().hex[:6]}"
    store = _store(s3, [namespace])
    lines = [f"line {i:07d} {os.urandom(30).hex()}" for i in range(120_000)]  # ~9 MB
    files = _files(app, namespace, ago=timedelta(0), retain=600)
    files["driver.log"] = ("\n".join(lines) + "\n").encode()
    store.replace(f"{namespace}/{app}/", files)
    try:
        found = read_archived(namespace, app, tail=3, settings=Settings(), store=store)
        assert found is not None and found[1] == lines[-3:]
        whole = read_archived(namespace, app, settings=Settings(), store=store)
        assert whole is not None and whole[1] == lines  # an S3 object has no 1 MiB cap
    finally:
        store.delete_prefix(f"{namespace}/{app}/")


def test_a_tenants_keys_reach_only_its_own_namespace(s3: S3Access) -> None:
    app = f"iso-{uuid.uuid4().hex[:6]}"
    admin = _store(s3, None)
    for ns in ("default", "spark-jobs"):
        admin.replace(f"{ns}/{app}/", _files(app, ns, ago=timedelta(0), retain=600))
    try:
        mine = _store(s3, ["spark-jobs"], tenant="spark-jobs")
        assert mine.get(f"spark-jobs/{app}/driver.log") == f"the log of {app}\n".encode()
        assert f"spark-jobs/{app}/{META}" in mine.keys("")  # lists its own prefix only
        mine.put(f"spark-jobs/{app}/note.log", b"mine\n")
        for attempt in (
            lambda: mine.get(f"default/{app}/driver.log"),
            lambda: mine.keys("default/"),
            lambda: mine.put(f"default/{app}/driver.log", b"forged\n"),
            lambda: mine.delete_prefix(f"default/{app}/"),
            lambda: _store(s3, None, tenant="spark-jobs").keys(""),  # the whole prefix
        ):
            with pytest.raises(S3StoreError, match="AccessDenied"):
                attempt()
        assert admin.get(f"default/{app}/driver.log") == f"the log of {app}\n".encode()
        # and `logs` as that tenant finds nothing of the other namespace's (and says why)
        settings = Settings(log_archive=s3.archive)
        assert read_archived("default", app, settings=settings, store=mine) is None
    finally:
        for ns in ("default", "spark-jobs"):
            admin.delete_prefix(f"{ns}/{app}/")


def test_expired_archives_are_pruned_by_prefix(s3: S3Access, tmp_path: Path) -> None:
    namespace = "spark-jobs"
    old, new = f"old-{uuid.uuid4().hex[:6]}", f"new-{uuid.uuid4().hex[:6]}"
    store = _store(s3, [namespace])
    store.replace(f"{namespace}/{old}/", _files(old, namespace, ago=timedelta(hours=2), retain=60))
    store.replace(f"{namespace}/{new}/", _files(new, namespace, ago=timedelta(0), retain=3600))
    try:
        dropped = prune(settings=Settings(), store=store, event_log_root=None)
        assert old in {m.app for m in dropped} and new not in {m.app for m in dropped}
        assert store.keys(f"{namespace}/{old}/") == []
        assert store.keys(f"{namespace}/{new}/") == [
            f"{namespace}/{new}/driver.log",
            f"{namespace}/{new}/{META}",
        ]
    finally:
        store.delete_prefix(f"{namespace}/{new}/")
