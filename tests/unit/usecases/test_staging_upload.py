"""The submitter's side of staging against a real staging server on 127.0.0.1 (no cluster)."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.errors import SubmissionError, ValidationError
from sparkplane.render import render
from sparkplane.render.steps.staging import secret_name
from sparkplane.spec import AppIds, SparkApp
from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.client import fetch
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.settings import StagingSettings
from sparkplane.usecases.stage import (
    TOKEN_ENV,
    StagingOptions,
    local_files,
    stage,
    staged_submission,
    staging_secret,
)
from tests.staging_server import serve_in_background

IDS = AppIds.for_submission("unit-staging", "deps-app")


def _app(**spec: object) -> SparkApp:
    base: dict[str, object] = {"mainClass": "Main", "image": "apache/spark:4.0.1"}
    base.update(spec)
    doc = {"metadata": {"name": "deps-app", "namespace": "jobs"}, "spec": base}
    return SparkApp.model_validate(doc)


TOKEN = "lifecycle-upload-secret-0123456789"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    settings = StagingSettings(
        host="127.0.0.1",
        port=0,
        storage_dir=tmp_path / "server" / "bundles",
        db_path=tmp_path / "server" / "meta.sqlite3",
        fsync=False,
        secret_hash_iterations=1000,
        cleanup_interval_seconds=3600,
        upload_secrets=(UploadSecret("submitters", TOKEN),),
    )
    with serve_in_background(settings) as url:
        yield url


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "lib").mkdir(parents=True)
    (work / "app.jar").write_bytes(os.urandom(200_000))
    (work / "lib" / "dep.jar").write_bytes(os.urandom(1000))
    (work / "job.conf").write_text("k=v\n")
    return work


def test_local_files_resolve_relative_paths_and_report_every_problem(workdir: Path) -> None:
    app = _app(jars="app.jar,lib/dep.jar", files=f"file://{workdir}/job.conf")
    assert local_files(app, workdir) == {
        "app.jar": workdir / "app.jar",
        "dep.jar": workdir / "lib" / "dep.jar",
        "job.conf": workdir / "job.conf",
    }
    bad = _app(jars="missing.jar,lib", files="other/app.jar")
    with pytest.raises(ValidationError) as info:
        local_files(bad, workdir)
    messages = [(p.path, p.message) for p in info.value.problems]
    assert [path for path, _ in messages] == ["spec.jars", "spec.jars", "spec.files"]
    assert "no such file" in messages[0][1] and "not a regular file" in messages[1][1]


def test_stage_uploads_a_bundle_the_init_container_can_fetch(
    server: str, workdir: Path, tmp_path: Path
) -> None:
    app = _app(jars="app.jar,lib/dep.jar", files="job.conf")
    staged = stage(app, IDS, StagingOptions(server, base_dir=workdir, token=TOKEN))
    assert staged.resource is not None
    conf = staged.app.spec.spark_conf
    assert conf["spark.kubernetes.sparkplane.staging.server"] == server
    assert conf["spark.kubernetes.sparkplane.staging.resourceId"] == staged.resource.resource_id
    unpacked = sum(path.stat().st_size for path in staged.files.values())
    assert conf["spark.kubernetes.sparkplane.staging.maxBytes"] == str(unpacked)
    [secret] = staged.objects
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == secret_name(IDS)
    assert secret["metadata"]["namespace"] == "jobs"
    assert secret["metadata"]["labels"]["spark-app-selector"] == IDS.app_id
    value = base64.b64decode(secret["data"]["secret"]).decode()
    assert value == staged.resource.secret
    # what the driver's init-container does, with the same secret
    dest = tmp_path / "deps"
    names = fetch(server, staged.resource.resource_id, value, dest)
    assert sorted(names) == ["app.jar", "dep.jar", "job.conf"]
    for name, source in staged.files.items():
        assert (dest / name).read_bytes() == source.read_bytes()
    # and the rendered driver points at those copies
    pod = render(staged.app, IDS).driver_pod
    assert pod["spec"]["containers"][0]["args"][-1] == "file:///var/sparkplane/deps/app.jar"
    command = pod["spec"]["initContainers"][0]["command"]
    assert command[command.index("--max-bytes") + 1] == str(unpacked)


def test_upload_without_any_credential_says_how_to_get_one(server: str, workdir: Path) -> None:
    with pytest.raises(StagingClientError) as info:
        stage(_app(jars="app.jar"), IDS, StagingOptions(server, base_dir=workdir))
    assert info.value.status == 401
    assert TOKEN_ENV in str(info.value) and "client certificate" in str(info.value)
    wrong = StagingOptions(server, base_dir=workdir, token="not-an-upload-secret-at-all")
    with pytest.raises(StagingClientError) as refused:
        stage(_app(jars="app.jar"), IDS, wrong)
    assert refused.value.status == 401 and "client certificate" not in str(refused.value)


def test_nothing_local_uploads_nothing(server: str) -> None:
    staged = stage(_app(jars="local:///opt/app.jar"), IDS, StagingOptions(server, token=TOKEN))
    assert staged.resource is None and staged.objects == []
    assert staged.discard() == ""


def test_invalid_spec_is_rejected_before_any_upload(workdir: Path) -> None:
    app = _app(jars="app.jar", image=None)  # no image: invalid
    # an unreachable server proves no upload was attempted
    with pytest.raises(ValidationError, match="no container image"):
        stage(app, IDS, StagingOptions("http://127.0.0.1:9", base_dir=workdir, token=TOKEN))


def test_failed_submission_deletes_the_bundle(server: str, workdir: Path, tmp_path: Path) -> None:
    options = StagingOptions(server, base_dir=workdir, token=TOKEN)
    uploaded = []

    def submit() -> None:
        with staged_submission(_app(jars="app.jar"), IDS, options) as staged:
            assert staged.resource is not None
            uploaded.append(staged.resource)
            raise SubmissionError("creating Pod jobs/x failed: boom; nothing was created")

    with pytest.raises(SubmissionError) as info:
        submit()
    [resource] = uploaded
    assert f"the staged bundle {resource.resource_id} was deleted" in str(info.value)
    with pytest.raises(StagingClientError) as gone:
        fetch(server, resource.resource_id, resource.secret, tmp_path / "after")
    assert gone.value.status == 404


def test_unreachable_server_on_discard_says_the_bundle_expires(workdir: Path, server: str) -> None:
    staged = stage(_app(jars="app.jar"), IDS, StagingOptions(server, base_dir=workdir, token=TOKEN))
    object.__setattr__(staged, "options", StagingOptions("http://127.0.0.1:9"))
    note = staged.discard()
    assert "could not be deleted" in note and "unused expiry" in note


def test_staging_secret_carries_the_ca_when_given() -> None:
    secret = staging_secret(IDS, "jobs", "s3cr3t", ca_pem=b"PEM")
    assert base64.b64decode(secret["data"]["ca.crt"]) == b"PEM"
    assert "ownerReferences" not in secret["metadata"]  # the submitter adds the driver's


def test_a_staging_server_in_the_spec_conf_works_like_the_option(
    server: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workdir)
    conf = {"spark.kubernetes.sparkplane.staging.server": server}
    with staged_submission(_app(jars="app.jar", sparkConf=conf), IDS, None, token=TOKEN) as staged:
        assert staged.resource is not None and staged.objects
    with staged_submission(_app(jars="local:///opt/app.jar"), IDS, None) as plain:
        assert plain.resource is None and plain.objects == []


def test_a_fifo_as_the_ca_file_is_refused_at_once(server: str, workdir: Path) -> None:
    """A FIFO would make the read wait for a writer forever (issue 26, finding 9)."""
    fifo = workdir / "ca.pem"
    os.mkfifo(fifo)
    options = StagingOptions(server, base_dir=workdir, token=TOKEN, ca_file=fifo)
    with pytest.raises(ValidationError, match="FIFO"):
        stage(_app(jars="app.jar"), IDS, options)
