"""What deploy/ installs really runs in the cluster, in the sparkplane image, on the real node: the
operator (CRDs + RBAC + Deployment) reconciles a real SparkPi to ResourceReleased, the gc CronJob
removes an expired native driver, and the staging init-container fetches a bundle of local files
(examples/local-deps) before the driver starts."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube
from sparkplane.model.pods import finished_at
from sparkplane.security.rbac import bodies, render
from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.kube_owner import pod_owner_checker
from sparkplane.staging.settings import StagingSettings
from sparkplane.usecases.stage import TOKEN_ENV
from sparkplane.version import SPARKPLANE_IMAGE
from sparkplane.vocab import DEPENDENTS_CREATED_KEY, DEPENDENTS_KEY
from sparkplane_devcluster import DevCluster
from sparkplane_devcluster.seaweed import S3Access
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import leftover
from tests.realnode.conftest import SERVICE_ACCOUNT
from tests.realnode.sparkapps import SPARK_IMAGE, cli, driver_pod, spec, submit, write
from tests.realnode.test_spark import PI_LINE
from tests.staging_server import serve_in_background

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
CR = "spark.apache.org/v1"
SUBMIT = [sys.executable, "-m", "sparkplane.cli", "submit"]


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _fresh_namespace(kube: Kube, name: str) -> None:
    """``name`` (the fixed namespace a deploy/ file names), empty, with the driver role."""
    _drop_namespace(kube, name)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    _driver_role(kube, name)


def _driver_role(kube: Kube, name: str) -> None:
    for obj in bodies(render("driver", name, service_account=SERVICE_ACCOUNT)):
        kube.apply(obj)


def _drop_namespace(kube: Kube, name: str) -> None:
    try:
        kube.delete("v1", "Namespace", name)
    except NotFoundError:
        return
    wait_for(
        lambda: kube.get_or_none("v1", "Namespace", name) is None,
        timeout=120,
        what=f"namespace {name} gone",
        interval=1,
    )


def kubectl_apply(kubeconfig: Path, *files: str, stdin: list[dict[str, Any]]) -> None:
    """The real kubectl: ``kubectl apply -f FILE... -f -`` with ``stdin``'s documents (a deploy/
    file with the one change a test needs)."""
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    args = [a for f in files for a in ("-f", f)]
    done = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), "apply", *args, "-f", "-"],
        input=yaml.safe_dump_all(stdin, sort_keys=False),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def no_forbidden(text: str, who: str) -> None:
    """What the shipped RBAC refuses shows as 'forbidden' in a component's log."""
    assert "forbidden" not in text.lower(), f"{who} was refused something:\n{text[-4000:]}"


SWEEP_SECONDS = 5  # the one change to the operator's Deployment: sweep every 5 s, not 60


@pytest.fixture
def operator_in_cluster(kube: Kube, kubeconfig: Path, real_cluster: DevCluster) -> Iterator[str]:
    """``kubectl apply -f deploy/crds -f deploy/operator/namespaced.yaml`` on a fresh state (its
    namespaces dropped: the file creates them), the Deployment with ``--sweep-seconds`` short
    and the log archive in object storage (``SPARKPLANE_LOG_ARCHIVE=s3://`` and SeaweedFS's keys
    from a Secret, as docs/history.md tells an admin to set it: the platform's keys, as the
    operator archives every namespace it watches);
    yields the watched namespace once an operator pod is Ready."""
    docs = _docs(DEPLOY / "operator" / "namespaced.yaml")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    (watched,) = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--namespace=")]
    container["args"].append(f"--sweep-seconds={SWEEP_SECONDS}")
    s3 = real_cluster.s3_access()
    assert s3.pod_endpoint
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque"}
    secret["metadata"] = {"name": "sparkplane-archive-s3", "namespace": "spark-operator"}
    secret["stringData"] = {**s3.env(), "AWS_ENDPOINT_URL": s3.pod_endpoint}
    docs.append(secret)  # after the file's Namespace
    container.setdefault("env", []).append({"name": "SPARKPLANE_LOG_ARCHIVE", "value": s3.archive})
    container["envFrom"] = [{"secretRef": {"name": "sparkplane-archive-s3"}}]
    for name in ("spark-operator", watched):
        _drop_namespace(kube, name)
    kubectl_apply(kubeconfig, "deploy/crds", stdin=docs)
    _driver_role(kube, watched)  # the Spark driver's own identity in the apps' namespace
    yield watched
    _drop_namespace(kube, watched)
    _drop_namespace(kube, "spark-operator")


def _ready_operator_pods(kube: Kube) -> list[dict[str, Any]]:
    pods = kube.list(
        "v1", "Pod", "spark-operator", label_selector="app.kubernetes.io/name=sparkplane-operator"
    )
    return [
        p
        for p in pods
        if any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p.get("status", {}).get("conditions", [])
        )
    ]


def test_in_cluster_operator_reconciles_real_sparkpi_to_resource_released(
    kubeconfig: Path, kube: Kube, operator_in_cluster: str, tmp_path: Path, real_cluster: DevCluster
) -> None:
    ns = operator_in_cluster
    pods = wait_for(lambda: _ready_operator_pods(kube), timeout=120, what="operator pod Ready")
    for pod in pods:  # the sparkplane image, on the real node (not a KWOK node)
        assert pod["spec"]["containers"][0]["image"] == SPARKPLANE_IMAGE
        assert pod["spec"]["nodeName"] == "sparkplane-real-node"
    path = write(tmp_path, spec("op-pi", ns, args=["20"], executors=1))
    name = submit(kubeconfig, "-f", str(path), "--mode", "operator", "-n", ns)
    cli(kubeconfig, "wait", name, "--for", "running", "-n", ns, "--timeout", "180")
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    follow = subprocess.Popen(
        [sys.executable, "-m", "sparkplane.cli", "logs", "-f", name, "-n", ns],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    driver = wait_for(lambda: driver_pod(kube, ns, name), timeout=30, what="driver pod")
    executors = wait_for(
        lambda: kube.list("v1", "Pod", ns, label_selector="spark-role=executor"),
        timeout=180,
        what="executors created by the real driver",
    )
    for pod in executors:
        assert [r["uid"] for r in pod["metadata"]["ownerReferences"]] == [driver["metadata"]["uid"]]

    def released() -> dict[str, Any] | None:
        app = kube.get(CR, "SparkApplication", name, ns)
        state = app.get("status", {}).get("currentState", {}).get("currentStateSummary")
        return app if state == "ResourceReleased" else None

    app = wait_for(released, timeout=300, what="ResourceReleased", interval=1)
    history = app["status"]["stateTransitionHistory"]
    states = [history[k]["currentStateSummary"] for k in sorted(history, key=int)]
    assert states[0] == "Submitted" and states[-2:] == ["Succeeded", "ResourceReleased"]
    assert "RunningHealthy" in states, states
    out, _ = follow.communicate(timeout=60)
    assert PI_LINE in out, out[-3000:]
    # the in-cluster operator did it: it holds the Lease, and the driver is gone (released)
    lease = kube.get(
        "coordination.k8s.io/v1", "Lease", "sparkplane-operator-lock", "spark-operator"
    )
    replicas = {p["metadata"]["name"] for p in [*pods, *_ready_operator_pods(kube)]}
    assert lease["spec"]["holderIdentity"] in replicas  # either replica may have won the Lease
    assert driver_pod(kube, ns, name) is None
    # before releasing it, the in-cluster operator archived the driver's log into object storage
    # (under the namespace's prefix), not into a ConfigMap; `logs` on the host (no local
    # archive, the S3 variables) reads it from there
    assert kube.get_or_none("v1", "ConfigMap", f"sparkplane-logs-{name}", ns) is None
    s3 = real_cluster.s3_access()
    host = {**_laptop(tmp_path), **s3.env(), "SPARKPLANE_LOG_ARCHIVE": s3.archive}
    logs = cli(kubeconfig, "logs", name, "-n", ns, env_extra=host)
    assert PI_LINE in logs.stdout, logs.stdout[-2000:]
    assert "from the archive" in logs.stderr and "released by the operator" in logs.stderr
    # the sweep runs with the installed RBAC (it lists Services and ConfigMaps): leftovers of
    # the released attempt, as a crash between commit and delete leaves them, are removed
    for obj in [kube.create(leftover(kind, app), ns) for kind in ("Service", "ConfigMap")]:
        wait_for(
            lambda o=obj: kube.get_or_none("v1", o["kind"], o["metadata"]["name"], ns) is None,  # type: ignore[misc]
            timeout=SWEEP_SECONDS * 2 + 30,  # past the sweeper's 10 s minimum age
            what=f"the in-cluster sweep to delete a leftover {obj['kind']}",
            interval=1,
        )
    said = "\n".join(
        line
        for p in _ready_operator_pods(kube)
        for line in kube.logs(p["metadata"]["name"], "spark-operator")
    )
    assert "sweep failed" not in said and "swept" in said, said[-4000:]
    no_forbidden(said, "the in-cluster operator")


def _laptop(tmp_path: Path) -> dict[str, str]:
    """A host with an empty local archive: whatever `logs` prints comes from the cluster."""
    return {"SPARKPLANE_CACHE_DIR": str(tmp_path / "laptop"), "SPARKPLANE_LOG_ARCHIVE": ""}


@pytest.mark.timeout(600)  # a real SparkPi, then the CronJob's next minute, on 2 shared cores
def test_gc_cronjob_runs_in_cluster_and_removes_an_expired_driver(
    kubeconfig: Path, kube: Kube, tmp_path: Path
) -> None:
    _gc_cronjob_removes_an_expired_driver(kubeconfig, kube, tmp_path, s3=None)


@pytest.mark.timeout(600)  # a real SparkPi, then the CronJob's next minute, on 2 shared cores
def test_gc_cronjob_archives_to_s3_with_its_namespace_scoped_keys(
    real_cluster: DevCluster, kubeconfig: Path, kube: Kube, tmp_path: Path
) -> None:
    """The same CronJob with ``SPARKPLANE_LOG_ARCHIVE=s3://...`` and a Secret holding the
    dev cluster's SeaweedFS keys of its namespace only (a tenant identity): its pod reaches S3
    through the host link, the archive lands under the namespace's prefix (no ConfigMap), and
    `logs` with those keys reads it back after the driver is gone."""
    _gc_cronjob_removes_an_expired_driver(kubeconfig, kube, tmp_path, s3=real_cluster.s3_access())


def _gc_cronjob_removes_an_expired_driver(
    kubeconfig: Path, kube: Kube, tmp_path: Path, s3: S3Access | None
) -> None:
    docs = _docs(DEPLOY / "gc" / "cronjob.yaml")
    (cronjob,) = [d for d in docs if d["kind"] == "CronJob"]
    ns = cronjob["metadata"]["namespace"]
    _drop_namespace(kube, ns)  # deploy/gc/ creates it
    laptop = _laptop(tmp_path)
    try:
        cronjob["spec"]["schedule"] = "* * * * *"  # the one change: every minute, not every 10
        if s3 is not None:  # and the S3 store, with the namespace's own keys from a Secret
            assert s3.pod_endpoint and ns in s3.tenants
            keys = {**s3.env(ns), "AWS_ENDPOINT_URL": s3.pod_endpoint}
            secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque"}
            secret["metadata"] = {"name": "sparkplane-archive-s3", "namespace": ns}
            secret["stringData"] = keys
            pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            container = pod["containers"][0]
            container["env"] = [{"name": "SPARKPLANE_LOG_ARCHIVE", "value": s3.archive}]
            container["envFrom"] = [{"secretRef": {"name": "sparkplane-archive-s3"}}]
            docs.append(secret)
            laptop = {**laptop, **s3.env(ns), "SPARKPLANE_LOG_ARCHIVE": s3.archive}
        kubectl_apply(kubeconfig, stdin=docs)
        _driver_role(kube, ns)
        path = write(tmp_path, spec("ttl-pi", ns, args=["4"], executors=1))
        name = submit(kubeconfig, "-f", str(path), "-n", ns, "--ttl", "1s")
        driver = wait_for(lambda: driver_pod(kube, ns, name), timeout=30, what="driver pod")
        cli(kubeconfig, "wait", name, "-n", ns, "--timeout", "300")
        uid = driver["metadata"]["uid"]
        wait_for(
            lambda: driver_pod(kube, ns, name) is None,
            timeout=150,
            what="the gc CronJob's Job to delete the expired driver",
            interval=2,
        )
        jobs = kube.list("batch/v1", "Job", ns)
        assert jobs and all(j["metadata"]["ownerReferences"][0]["kind"] == "CronJob" for j in jobs)

        def gc_said() -> str:
            selector = "app.kubernetes.io/name=sparkplane-gc"
            pods = kube.list("v1", "Pod", ns, label_selector=selector)
            text = "\n".join(line for p in pods for line in kube.logs(p["metadata"]["name"], ns))
            return text if driver["metadata"]["name"] in text and "deleted" in text else ""

        # gc prints its table once done (archiving and pruning after the delete): wait for it
        said = wait_for(
            gc_said,
            timeout=90,
            what="the gc pod's report of the deletion",
            interval=2,
        )
        gc_pods = kube.list("v1", "Pod", ns, label_selector="app.kubernetes.io/name=sparkplane-gc")
        no_forbidden(said, "the gc CronJob")
        assert "Traceback" not in said and "could not archive" not in said, said
        for p in gc_pods:
            assert p["spec"]["containers"][0]["image"] == SPARKPLANE_IMAGE
            assert p["spec"]["nodeName"] == "sparkplane-real-node"

        def owned() -> list[str]:
            return [
                f"{kind}/{o['metadata']['name']}"
                for kind in ("ConfigMap", "Service")
                for o in kube.list("v1", kind, ns)
                if any(r["uid"] == uid for r in o["metadata"].get("ownerReferences", []))
            ]

        wait_for(lambda: not owned(), timeout=60, what="the driver's dependents collected")
        # the CronJob archived the driver's log before deleting it: in-cluster, or in S3
        in_etcd = kube.get_or_none("v1", "ConfigMap", f"sparkplane-logs-{name}", ns)
        assert (in_etcd is None) == (s3 is not None)
        logs = cli(kubeconfig, "logs", name, "-n", ns, env_extra=laptop)
        assert PI_LINE in logs.stdout and "expired (gc)" in logs.stderr, logs.stderr
    finally:
        _drop_namespace(kube, ns)  # (an archive in S3 stays until its retention: unique names)


def test_a_sparkpi_that_ended_normally_survives_gc_until_its_ttl(
    kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    """Spark deletes its driver's Services when it stops; `gc` must not call the finished app
    half-made for it (issue 19), whatever the grace period: it goes only once its --ttl is past."""
    ttl = 75
    path = write(tmp_path, spec("kept-pi", namespace, args=["4"], executors=1))
    name = submit(kubeconfig, "-f", str(path), "-n", namespace, "--ttl", f"{ttl}s")
    cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "300")

    def ended() -> dict[str, Any] | None:  # the pod's phase follows its container's end
        pod = driver_pod(kube, namespace, name)
        return pod if pod is not None and pod["status"]["phase"] == "Succeeded" else None

    driver = wait_for(ended, timeout=60, what=f"{name}'s driver pod Succeeded")
    app_id = driver["metadata"]["labels"]["spark-app-selector"]
    announced = [
        r[2] for r in json.loads(driver["metadata"]["annotations"][DEPENDENTS_KEY])
        if r[1] == "Service"
    ]  # fmt: skip
    assert announced and driver["metadata"]["annotations"].get(DEPENDENTS_CREATED_KEY)
    selector = f"spark-app-selector={app_id}"
    wait_for(  # what spark.kubernetes.driver.service.deleteOnTermination (default) does
        lambda: not kube.list("v1", "Service", namespace, label_selector=selector),
        timeout=60,
        what="Spark to delete the driver's Services on stop",
    )

    def gc() -> dict[str, Any]:
        out = cli(kubeconfig, "gc", "-n", namespace, "--grace", "1s", "-o", "yaml").stdout
        rows = {r["name"]: r for r in yaml.safe_load_all(out) if r}
        row: dict[str, Any] = rows[driver["metadata"]["name"]]
        return row

    kept = gc()  # past the (1 s) grace, its Services gone, within its TTL: kept
    assert kept["delete"] is False and "half-made" not in kept["reason"], kept
    assert driver_pod(kube, namespace, name) is not None
    ended = finished_at(driver)  # the TTL counts from here (lifecycle.ttl)
    assert ended is not None
    left = (ended + timedelta(seconds=ttl) - datetime.now(UTC)).total_seconds()
    if left > 0:
        time.sleep(left + 1)
    gone = gc()
    assert gone["delete"] is True and "half-made" not in gone["reason"], gone
    wait_for(lambda: driver_pod(kube, namespace, name) is None, timeout=60, what="driver gone")


def test_staging_init_container_fetches_local_deps_before_the_driver(
    real_cluster: DevCluster, kubeconfig: Path, kube: Kube, namespace: str, tmp_path: Path
) -> None:
    example = ROOT / "examples" / "local-deps"
    body = yaml.safe_load((example / "app.yaml").read_text())
    assert body["spec"]["image"] == SPARK_IMAGE  # the example runs as committed
    body["spec"]["sparkConf"]["spark.kubernetes.authenticate.driver.serviceAccountName"] = (
        SERVICE_ACCOUNT
    )
    app_file = example / f".{namespace}.yaml"  # relative paths resolve in the example's dir
    app_file.write_text(yaml.safe_dump(body))
    upload = secrets.token_urlsafe(32)
    plan = real_cluster.node_plan
    settings = StagingSettings(
        host=plan.host_ip,  # the one host address pods reach
        port=0,
        storage_dir=tmp_path / "bundles",
        db_path=tmp_path / "meta.sqlite3",
        fsync=False,
        upload_secrets=(UploadSecret("realnode-test", upload),),
    )
    try:
        with serve_in_background(settings, pod_owner_checker(kube)) as url:
            env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig), **{TOKEN_ENV: upload})
            done = subprocess.run(
                [*SUBMIT, "-f", app_file.name, "-n", namespace, "--staging-server", url],
                cwd=example,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            name = done.stdout.strip().splitlines()[-1].split()[-1]
            cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "300")
    finally:
        app_file.unlink()
    pod = driver_pod(kube, namespace, name)
    assert pod is not None
    (init,) = pod["status"]["initContainerStatuses"]
    assert init["image"].endswith(SPARKPLANE_IMAGE.split("/", 1)[1])
    fetched = init["state"]["terminated"]
    main = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert fetched["exitCode"] == 0 and fetched["finishedAt"] <= main["startedAt"]
    said = "\n".join(kube.logs(pod["metadata"]["name"], namespace, container=init["name"]))
    assert "unpacked 3 entries" in said, said
    logs = cli(kubeconfig, "logs", name, "-n", namespace).stdout
    # the word count of the uploaded words.txt, by the uploaded wordcount.py and helpers.py
    words = [w.strip(".,;:!?") for w in (example / "words.txt").read_text().lower().split()]
    assert re.search(rf"^the\s+{words.count('the')}$", logs, re.M), logs[-3000:]
    got = json.loads(cli(kubeconfig, "get", "apps", name, "-n", namespace, "-o", "json").stdout)
    assert "Succeeded" in json.dumps(got)
