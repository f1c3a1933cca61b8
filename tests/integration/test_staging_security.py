"""The staging server secure by default, against the real API server.

Uploads are authorised by the cluster: the server (running as the `sparkplane rbac staging`
identity, with its TokenReview/SubjectAccessReview rights) asks who a bearer token is and
whether it may create pods in the owner namespace. The `sparkplane rbac client` identity of a
namespace may stage files there and nowhere else. A bundle whose owner namespace the staging
identity may not list expires at the maximum age, with one warning line per clean-up round.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.errors import ForbiddenError
from sparkplane.kube import Kube, connect
from sparkplane.security.rbac import render as render_rbac
from sparkplane.security.rules import Identity
from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.bundle import pack_bundle
from sparkplane.staging.cleanup import CleanupPolicy, Reason, run_cleanup
from sparkplane.staging.client import upload_bundle
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.kube_owner import kube_services
from sparkplane.staging.metadata import MetadataDB
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.settings import StagingSettings
from sparkplane.staging.store import LocalDiskStore
from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private
from tests.integration.helpers import delete_namespace, wait_for
from tests.staging_server import serve_in_background

SECRET = UploadSecret("ops", "integration-upload-secret-0123456789")


def _identity(kube: Kube, identity: Identity, namespace: str, tmp_path: Path) -> Path:
    """Apply ``identity``'s RBAC in ``namespace``; a kubeconfig acting as it (a token)."""
    objects = [o.body for o in render_rbac(identity, namespace)]
    for obj in objects:
        kube.apply(obj)
    account = objects[0]["metadata"]["name"]
    minted = mint_kubeconfig(kube, account, namespace)
    return write_private(tmp_path / f"{identity.value}-{namespace}.kubeconfig", minted.text())


def _forget_cluster_bindings(kube: Kube, identity: Identity, namespace: str) -> None:
    for obj in (o.body for o in render_rbac(identity, namespace)):
        if obj["kind"] == "ClusterRoleBinding":
            kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


@pytest.fixture
def other_namespace(kube: Kube) -> Iterator[str]:
    name = f"sp-other-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    delete_namespace(kube, name)


@pytest.fixture
def staging_kubeconfig(kube: Kube, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The staging identity of deploy/staging, granted in ``namespace`` only."""
    path = _identity(kube, Identity.STAGING, namespace, tmp_path)
    yield path
    _forget_cluster_bindings(kube, Identity.STAGING, namespace)


@pytest.fixture
def settings(tmp_path: Path) -> StagingSettings:
    return StagingSettings(
        storage_dir=tmp_path / "staging" / "bundles",
        db_path=tmp_path / "staging" / "meta.sqlite3",
        port=0,
        fsync=False,
        secret_hash_iterations=1000,
        cleanup_interval_seconds=3600,
        upload_secrets=(SECRET,),
    )


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    (tmp_path / "app.jar").write_bytes(b"jar" * 1000)
    path = tmp_path / "bundle.tar.gz"
    pack_bundle({"app.jar": tmp_path / "app.jar"}, path)
    return path


def _token(kubeconfig: Path) -> str:
    user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
    return str(user["token"])


def _owner(namespace: str) -> ResourceOwner:
    return ResourceOwner(namespace, {"spark-app-selector": f"spark-{uuid.uuid4().hex[:12]}"})


def test_uploads_need_a_kubernetes_identity_allowed_in_the_owner_namespace(
    kube: Kube,
    namespace: str,
    other_namespace: str,
    staging_kubeconfig: Path,
    settings: StagingSettings,
    bundle: Path,
    tmp_path: Path,
) -> None:
    checker, reviewer = kube_services(staging_kubeconfig, None)
    client_token = _token(_identity(kube, Identity.CLIENT, namespace, tmp_path))
    with serve_in_background(settings, checker, reviewer) as url:
        assert url.startswith("http://127.0.0.1:")  # loopback by default
        # the client identity of `namespace` may stage files for it (once RBAC is in effect)
        staged = wait_for(
            lambda: _try_upload(url, bundle, _owner(namespace), client_token),
            timeout=30,
            what="the client identity's upload to be allowed",
        )
        assert staged.resource_id
        # ... but not for a namespace where it may not create pods: 403, naming both
        with pytest.raises(StagingClientError) as refused:
            upload_bundle(url, bundle, _owner(other_namespace), token=client_token)
        assert refused.value.status == 403
        message = str(refused.value)
        assert f"system:serviceaccount:{namespace}:sparkplane-client" in message
        assert f"may not create pods in namespace '{other_namespace}'" in message
        # a token the API server does not know, and no token at all: 401
        for token in ("not-a-real-token", None):
            with pytest.raises(StagingClientError) as unknown:
                upload_bundle(url, bundle, _owner(namespace), token=token)
            assert unknown.value.status == 401
        # the configured upload secret works where the cluster cannot vouch
        assert upload_bundle(url, bundle, _owner(other_namespace), token=SECRET.secret)
    stored = MetadataDB(settings.db_path)
    try:
        assert sorted(r.owner.namespace for r in stored.all()) == sorted(
            [namespace, other_namespace]
        )
    finally:
        stored.close()


def test_a_server_without_review_rights_refuses_uploads_and_says_why(
    kube: Kube, namespace: str, settings: StagingSettings, bundle: Path, tmp_path: Path
) -> None:
    """A staging server running as an identity that may not create TokenReviews (here the
    client identity) never lets an upload through: 503, naming the missing rights."""
    client = _identity(kube, Identity.CLIENT, namespace, tmp_path)
    checker, reviewer = kube_services(client, None)
    with (
        serve_in_background(settings, checker, reviewer) as url,
        pytest.raises(StagingClientError) as refused,
    ):
        upload_bundle(url, bundle, _owner(namespace), token=_token(client))
    assert refused.value.status == 503
    assert "tokenreviews" in str(refused.value) and "sparkplane rbac staging" in str(refused.value)


def _try_upload(url: str, bundle: Path, owner: ResourceOwner, token: str) -> Any:
    try:
        return upload_bundle(url, bundle, owner, token=token)
    except StagingClientError as exc:
        if exc.status == 403:  # the RBAC authorizer's cache has not seen the binding yet
            return None
        raise


def test_submit_as_the_client_identity_through_the_cli(
    kube: Kube,
    namespace: str,
    staging_kubeconfig: Path,
    settings: StagingSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`sparkplane submit --staging-server` with a token kubeconfig sends that token; the
    driver's init-container bounds the unpacked size with the bundle's exact size."""
    from typer.testing import CliRunner

    from sparkplane.cli.main import app as cli

    checker, reviewer = kube_services(staging_kubeconfig, None)
    client = _identity(kube, Identity.CLIENT, namespace, tmp_path)
    example = Path(__file__).parents[2] / "examples" / "local-deps"
    monkeypatch.chdir(example)
    monkeypatch.delenv("SPARKPLANE_STAGING_TOKEN", raising=False)
    with serve_in_background(settings, checker, reviewer) as url:
        args = ["submit", "-f", "app.yaml", "-n", namespace, "--staging-server", url]
        done = wait_for(
            lambda: _submitted(CliRunner().invoke(cli, [*args, "--kubeconfig", str(client)])),
            timeout=30,
            what="the client identity's submission to be allowed",
        )
        assert done.exit_code == 0, done.output
        [driver] = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
        [init] = driver["spec"]["initContainers"]
        command = init["command"]
        sizes = sum(
            (example / n).stat().st_size for n in ("wordcount.py", "helpers.py", "words.txt")
        )
        assert command[command.index("--max-bytes") + 1] == str(sizes)
        secret_name = next(
            v["secret"]["secretName"] for v in driver["spec"]["volumes"] if "secret" in v
        )
        secret = base64.b64decode(
            kube.get("v1", "Secret", secret_name, namespace)["data"]["secret"]
        )
        secret_file = tmp_path / "secret"
        secret_file.write_bytes(secret)
        fetch_args = list(command[1:])
        fetch_args[fetch_args.index("--dest") + 1] = str(tmp_path / "volume")
        fetch_args[fetch_args.index("--secret-file") + 1] = str(secret_file)
        ran = subprocess.run(
            [sys.executable, "-m", "sparkplane.cli", *fetch_args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        # the same command refuses a bundle larger than the bound it was given
        fetch_args[fetch_args.index("--max-bytes") + 1] = str(sizes - 1)
        fetch_args[fetch_args.index("--dest") + 1] = str(tmp_path / "volume2")
        bounded = subprocess.run(
            [sys.executable, "-m", "sparkplane.cli", *fetch_args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert bounded.returncode != 0 and f"more than {sizes - 1} B" in bounded.stderr


def _submitted(result: Any) -> Any:
    if result.exit_code != 0 and "403" in result.output:
        return None  # RBAC not in effect yet
    return result


def test_unlistable_owner_namespace_expires_at_max_age(
    kube: Kube,
    namespace: str,
    other_namespace: str,
    staging_kubeconfig: Path,
    settings: StagingSettings,
    bundle: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The staging identity may list pods in ``namespace`` only: a bundle owned in
    ``other_namespace`` cannot be checked (Forbidden). It is kept, then deleted at max age;
    each round says so in one warning line, without a traceback."""
    checker, _ = kube_services(staging_kubeconfig, None)
    staging_kube = Kube(connect(kubeconfig=staging_kubeconfig))
    try:
        wait_for(lambda: _lists(staging_kube, namespace), timeout=30, what="staging RBAC in effect")
        with pytest.raises(ForbiddenError):
            staging_kube.list("v1", "Pod", other_namespace)
    finally:
        staging_kube.close()
    with serve_in_background(settings) as url:
        checked = upload_bundle(url, bundle, _owner(namespace), token=SECRET.secret)
        unlistable = upload_bundle(url, bundle, _owner(other_namespace), token=SECRET.secret)
    db, store = MetadataDB(settings.db_path), LocalDiskStore(settings.storage_dir, fsync=False)
    policy = CleanupPolicy(unused_expiry=10, owner_grace=0, max_age=3600)
    try:
        for rid in (checked.resource_id, unlistable.resource_id):
            db.mark_downloaded(rid, db.get(rid).created_at + 1)  # type: ignore[union-attr]
        now = db.get(unlistable.resource_id).created_at + 60  # type: ignore[union-attr]
        with caplog.at_level(logging.WARNING, logger="sparkplane.staging.cleanup"):
            first = run_cleanup(db, store, checker, now, policy)
        # the checkable one has no pods: gone; the unlistable one is kept for now
        assert [(d.resource_id, d.reason) for d in first] == [
            (checked.resource_id, Reason.OWNER_GONE)
        ]
        [line] = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert "owner check failed in 1 namespace(s)" in line.getMessage()
        assert other_namespace in line.getMessage() and line.exc_info is None
        assert store.exists(unlistable.resource_id)
        later = run_cleanup(db, store, checker, now + 3600, policy)
        assert [(d.resource_id, d.reason) for d in later] == [
            (unlistable.resource_id, Reason.MAX_AGE)
        ]
        assert not store.exists(unlistable.resource_id)
    finally:
        db.close()


def _lists(kube: Kube, namespace: str) -> bool:
    with contextlib.suppress(ForbiddenError):
        kube.list("v1", "Pod", namespace)
        return True
    return False
