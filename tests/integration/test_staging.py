"""Resource staging on the real control plane: submit with local deps, play the init-container,
garbage-collect the Secret with the driver, and clean up bundles whose owner pods are gone.

The staging server runs in this process (127.0.0.1, a free port). KWOK runs no containers, so
the test runs the driver's init-container command itself, with the secret read from the Secret
the submission created.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.errors import ForbiddenError, SubmissionError
from sparkplane.kube import Kube, connect
from sparkplane.render.properties import load
from sparkplane.security.rbac import render as render_rbac
from sparkplane.security.rules import Identity
from sparkplane.spec import SparkApp
from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.bundle import pack_bundle
from sparkplane.staging.cleanup import CleanupPolicy, Reason, run_cleanup
from sparkplane.staging.client import fetch, upload_bundle
from sparkplane.staging.deploy import manifests
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.kube_owner import kube_checker, pod_owner_checker
from sparkplane.staging.metadata import MetadataDB
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.settings import StagingSettings
from sparkplane.staging.store import LocalDiskStore
from sparkplane.usecases.create import SubmitOptions, submit_native
from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private
from sparkplane.usecases.stage import TOKEN_ENV
from tests.integration.helpers import pod, wait_for
from tests.staging_server import serve_in_background

DEPS = "/var/sparkplane/deps"
SECRET = UploadSecret("tests", "integration-upload-secret-0123456789")


@pytest.fixture
def settings(tmp_path: Path) -> StagingSettings:
    return StagingSettings(
        host="127.0.0.1",
        port=0,
        storage_dir=tmp_path / "staging" / "bundles",
        db_path=tmp_path / "staging" / "meta.sqlite3",
        fsync=False,
        secret_hash_iterations=1000,
        cleanup_interval_seconds=3600,  # the tests run clean-up rounds themselves
        upload_secrets=(SECRET,),
    )


@pytest.fixture
def staging_url(settings: StagingSettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # the dev cluster's admin authenticates with a client certificate, which cannot be
    # forwarded: these submissions use the server's upload secret (token identities:
    # test_staging_security.py)
    monkeypatch.setenv(TOKEN_ENV, SECRET.secret)
    with serve_in_background(settings) as url:
        yield url


@pytest.fixture
def local_deps(tmp_path: Path) -> dict[str, Path]:
    work = tmp_path / "submitter"
    work.mkdir()
    files = {
        "app.jar": os.urandom(256 * 1024),
        "helpers.py": b"def greet():\n    return 'hi'\n",
        "lookup.csv": b"k,v\n1,one\n",
    }
    for name, data in files.items():
        (work / name).write_bytes(data)
    return {name: work / name for name in files}


def _app(namespace: str, deps: dict[str, Path]) -> SparkApp:
    return SparkApp.model_validate(
        {
            "metadata": {"name": "local-deps", "namespace": namespace},
            "spec": {
                "mainClass": "com.example.Main",
                "jars": str(deps["app.jar"]),
                "files": f"file://{deps['lookup.csv']},{deps['helpers.py']}",
                "image": "apache/spark:4.0.1",
                "sparkConf": {"spark.executor.instances": "1"},
                "driverSpec": {
                    "podTemplateSpec": {
                        "metadata": {"annotations": {"sim.sparkplane.io/run-for": "600s"}}
                    }
                },
            },
        }
    )


def _arg(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def _play_init_container(command: list[str], secret: str, tmp: Path) -> Path:
    """Run the init-container's exact command here, with the volume paths mapped to ``tmp``."""
    dest = tmp / "volume"
    secret_file = tmp / "secret"
    secret_file.write_text(secret)
    args = list(command[1:])  # drop the `sparkplane` executable: run this interpreter's copy
    args[args.index("--dest") + 1] = str(dest)
    args[args.index("--secret-file") + 1] = str(secret_file)
    done = subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dest


def test_submit_with_local_deps_end_to_end(
    kube: Kube, namespace: str, staging_url: str, local_deps: dict[str, Path], tmp_path: Path
) -> None:
    result = submit_native(
        kube,
        _app(namespace, local_deps),
        SubmitOptions(staging_server=staging_url, staging_token=SECRET.secret),
    )
    assert result.driver_pod and result.app_id
    driver = kube.get("v1", "Pod", result.driver_pod, namespace)
    spec = driver["spec"]

    # the driver: init-container, shared volume, Secret volume, read-only mount for Spark
    [init] = spec["initContainers"]
    command = init["command"]
    assert command[:2] == ["sparkplane", "fetch"]
    assert _arg(command, "--server") == staging_url
    assert _arg(command, "--dest") == DEPS
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert "emptyDir" in volumes["sparkplane-deps"]
    secret_name = volumes["sparkplane-staging-secret"]["secret"]["secretName"]
    main = spec["containers"][0]
    assert {"name": "sparkplane-deps", "mountPath": DEPS, "readOnly": True} in main["volumeMounts"]
    assert main["args"][main["args"].index("--class") + 2] == f"file://{DEPS}/app.jar"

    # the executor template ConfigMap carries the same init-container
    selector = f"spark-app-selector={result.app_id}"
    cms = kube.list("v1", "ConfigMap", namespace, label_selector=selector)
    template_cm = next(c for c in cms if "podspec-configmap-key" in c["data"])
    template: dict[str, Any] = yaml.safe_load(template_cm["data"]["podspec-configmap-key"])
    assert template["spec"]["initContainers"][0]["command"] == command
    assert template["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] == DEPS

    # spark.properties points Spark at the localized copies
    conf_cm = next(c for c in cms if "spark.properties" in c["data"])
    props = load(conf_cm["data"]["spark.properties"])
    assert props["spark.jars"] == f"file://{DEPS}/app.jar"
    assert props["spark.files"] == f"file://{DEPS}/lookup.csv,file://{DEPS}/helpers.py"

    # the Secret exists, is owned by the driver, and unlocks the bundle
    secret_obj = kube.get("v1", "Secret", secret_name, namespace)
    refs = secret_obj["metadata"]["ownerReferences"]
    assert [(r["kind"], r["uid"], r.get("controller")) for r in refs] == [
        ("Pod", driver["metadata"]["uid"], True)
    ]
    secret = base64.b64decode(secret_obj["data"]["secret"]).decode()
    volume = _play_init_container(command, secret, tmp_path)
    for name, source in local_deps.items():
        assert (volume / name).read_bytes() == source.read_bytes(), name

    # killing the app takes the Secret with it (garbage collection by ownerReference)
    kube.delete("v1", "Pod", result.driver_pod, namespace, propagation="Background")
    wait_for(
        lambda: kube.get_or_none("v1", "Secret", secret_name, namespace) is None,
        timeout=60,
        what=f"Secret {namespace}/{secret_name} to be garbage-collected",
    )


def test_failed_submission_leaves_no_bundle(
    kube: Kube, staging_url: str, local_deps: dict[str, Path], tmp_path: Path
) -> None:
    missing = f"sp-missing-{uuid.uuid4().hex[:8]}"  # the driver pod cannot be created there
    with pytest.raises(SubmissionError) as info:
        submit_native(
            kube,
            _app(missing, local_deps),
            SubmitOptions(staging_server=staging_url, staging_token=SECRET.secret),
        )
    message = str(info.value)
    assert "nothing was created" in message and "was deleted" in message
    resource_id = message.split("the staged bundle ")[1].split(" ", maxsplit=1)[0]
    with pytest.raises(StagingClientError) as gone:
        fetch(staging_url, resource_id, "any-secret", tmp_path / "unused")
    assert gone.value.status == 404  # not 403: the bundle no longer exists at all


def test_owner_gone_clean_up_against_the_api_server(
    kube: Kube,
    namespace: str,
    staging_url: str,
    settings: StagingSettings,
    local_deps: dict[str, Path],
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "bundle.tar.gz"
    pack_bundle({"app.jar": local_deps["app.jar"]}, bundle)
    owned_labels = {"sparkplane.io/test-owner": uuid.uuid4().hex[:12]}
    orphan_labels = {"sparkplane.io/test-owner": uuid.uuid4().hex[:12]}
    owned = upload_bundle(
        staging_url, bundle, ResourceOwner(namespace, owned_labels), token=SECRET.secret
    )
    orphan = upload_bundle(
        staging_url, bundle, ResourceOwner(namespace, orphan_labels), token=SECRET.secret
    )
    kube.create(pod("bundle-owner", labels=owned_labels), namespace)
    for res in (owned, orphan):  # a download marks each bundle as used
        fetch(staging_url, res.resource_id, res.secret, tmp_path / res.resource_id)

    db, store = MetadataDB(settings.db_path), LocalDiskStore(settings.storage_dir, fsync=False)
    checker = pod_owner_checker(kube)
    policy = CleanupPolicy(unused_expiry=3600, owner_grace=0)
    try:
        first = run_cleanup(db, store, checker, time.time() + 1, policy)
        assert [(d.resource_id, d.reason) for d in first] == [
            (orphan.resource_id, Reason.OWNER_GONE)
        ]
        assert store.exists(owned.resource_id)  # its pod exists: kept

        kube.delete("v1", "Pod", "bundle-owner", namespace, grace_period_seconds=0)
        wait_for(
            lambda: kube.get_or_none("v1", "Pod", "bundle-owner", namespace) is None,
            timeout=60,
            what="the owner pod to be gone",
        )
        second = run_cleanup(db, store, checker, time.time() + 1, policy)
        assert [(d.resource_id, d.reason) for d in second] == [
            (owned.resource_id, Reason.OWNER_GONE)
        ]
        assert not store.exists(owned.resource_id) and db.get(owned.resource_id) is None
    finally:
        db.close()
    with pytest.raises(StagingClientError) as gone:
        fetch(staging_url, owned.resource_id, owned.secret, tmp_path / "after")
    assert gone.value.status == 404


def test_deploy_manifests_and_rbac_suffice_for_the_owner_check(
    kube: Kube, namespace: str, tmp_path: Path
) -> None:
    """Create deploy/staging's objects (in a test namespace) and run the owner check as the
    staging service account, through the same code `staging serve --kubeconfig` uses."""
    rbac = [o.body for o in render_rbac(Identity.STAGING, namespace)]
    for obj in rbac:
        kube.apply(obj)  # the ClusterRole is shared by every namespace's staging identity
    for obj in manifests(namespace):
        kube.create(obj, namespace)
    minted = mint_kubeconfig(kube, "sparkplane-staging", namespace)
    path = write_private(tmp_path / "staging.kubeconfig", minted.text())
    checker = kube_checker(path, None)
    labels = {"sparkplane.io/test-owner": uuid.uuid4().hex[:12]}
    assert wait_for(
        lambda: _answers(checker, namespace, labels) is False, timeout=30, what="RBAC in effect"
    )
    kube.create(pod("owner", labels=labels), namespace)
    assert checker(namespace, labels) is True
    staging_kube = Kube(connect(kubeconfig=path))
    try:
        with pytest.raises(ForbiddenError):
            staging_kube.list("v1", "Secret", namespace)
    finally:
        staging_kube.close()
        for obj in rbac:
            if obj["kind"] == "ClusterRoleBinding":
                kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


def _answers(checker: Any, namespace: str, labels: dict[str, str]) -> bool | None:
    try:
        return bool(checker(namespace, labels))
    except ForbiddenError:
        return None


def test_local_deps_example_through_the_cli(
    kube: Kube,
    namespace: str,
    kubeconfig: Path,
    staging_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`sparkplane submit -f examples/local-deps/app.yaml --staging-server URL`, run from the
    example's directory (relative paths, as with spark-submit), then the init-container."""
    from typer.testing import CliRunner

    from sparkplane.cli.main import app as cli

    example = Path(__file__).parents[2] / "examples" / "local-deps"
    monkeypatch.chdir(example)
    args = ["submit", "-f", "app.yaml", "-n", namespace, "--staging-server", staging_url]
    done = CliRunner().invoke(cli, [*args, "--kubeconfig", str(kubeconfig)])
    assert done.exit_code == 0, done.output
    [driver] = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    [init] = driver["spec"]["initContainers"]
    main = driver["spec"]["containers"][0]
    assert f"file://{DEPS}/wordcount.py" in main["args"]
    secret_name = next(
        v["secret"]["secretName"] for v in driver["spec"]["volumes"] if "secret" in v
    )
    secret_obj = kube.get("v1", "Secret", secret_name, namespace)
    secret = base64.b64decode(secret_obj["data"]["secret"]).decode()
    volume = _play_init_container(init["command"], secret, tmp_path)
    for name in ("wordcount.py", "helpers.py", "words.txt"):
        assert (volume / name).read_bytes() == (example / name).read_bytes(), name
    wait_for(
        lambda: (
            kube.get("v1", "Pod", driver["metadata"]["name"], namespace)["status"].get("phase")
            == "Succeeded"
        ),
        timeout=60,
        what="the simulated driver to succeed",
    )
