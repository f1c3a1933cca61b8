"""Each documented deploy/ set, applied with the real ``kubectl`` as docs/operator.md prints it,
onto a fresh state (the namespaces and cluster-wide RBAC it names removed first), then its
component run through an app's lifecycle with the credentials the set installed: a token of its
own service account, never admin. Any ``forbidden`` fails the test.

On KWOK no container runs, so the components run here, with the installed identity: the
operator (with the arguments of the set's Deployment, the sweep every second) takes a
SparkApplication to ResourceReleased and sweeps a leftover Service and ConfigMap; the gc
CronJob's ``sparkplane gc`` deletes an expired app and a half-made one and keeps a finished app
whose Services Spark removed; the staging server checks owners and reviews tokens. In the
cluster, in their image, the same run on the real node (tests/realnode/test_incluster.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube, connect
from sparkplane.model.pods import finished_at
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.runtime.runner import Operator
from sparkplane.security.rbac import bodies, render
from sparkplane.staging.kube_owner import kube_token_reviewer, pod_owner_checker
from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private
from sparkplane.vocab import DEPENDENTS_CREATED_KEY
from tests import crashing_cli
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import leftover, spark_app, wait_state
from tests.integration.test_crash_safety import drivers, spec

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def kubectl() -> str:
    """The real kubectl; a machine without it fails this test (it never skips)."""
    found = shutil.which("kubectl") or "/usr/bin/kubectl"
    assert Path(found).exists(), "kubectl is not installed: the documented commands need it"
    return found


def run_kubectl(kubectl: str, kubeconfig: Path, *args: str) -> str:
    proc = subprocess.run(
        [kubectl, "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,  # the paths as the docs print them
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, f"kubectl {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def documents(*args: str) -> list[dict[str, Any]]:
    files: list[Path] = []
    for arg in args:
        path = DEPLOY / arg
        files += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]


def fresh(kube: Kube, docs: list[dict[str, Any]]) -> None:
    """Remove what ``docs`` would create outside of CRDs: its namespaces (with everything in
    them) and its cluster-wide RBAC, so the apply starts as on an empty cluster."""
    spaces = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    for d in docs:
        if d["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            try:
                kube.delete(RBAC, d["kind"], d["metadata"]["name"])
            except NotFoundError:
                pass
    for name in spaces:
        try:
            kube.delete("v1", "Namespace", name)
        except NotFoundError:
            continue
    for name in spaces:
        wait_for(
            lambda n=name: kube.get_or_none("v1", "Namespace", n) is None,  # type: ignore[misc]
            timeout=120,
            what=f"namespace {name} gone",
            interval=0.5,
        )


def as_service_account(kube: Kube, account: str, namespace: str, tmp_path: Path) -> Path:
    minted = mint_kubeconfig(kube, account, namespace)
    return write_private(tmp_path / f"{account}.kubeconfig", minted.text())


def no_forbidden(text: str, who: str) -> None:
    assert "forbidden" not in text.lower(), f"{who} was refused something:\n{text[-4000:]}"


def _container(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (obj,) = [d for d in docs if d["kind"] == kind]
    pod = obj["spec"]["template"]["spec"] if kind != "CronJob" else None
    if pod is None:
        pod = obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    container: dict[str, Any] = pod["containers"][0]
    return container


def operator_settings(docs: list[dict[str, Any]]) -> OperatorSettings:
    """The settings the set's Deployment runs ``operator run`` with, but a sweep (and an
    archive prune) every second so the test sees them run."""
    args = _container(docs, "Deployment")["args"]
    flags = dict(a.removeprefix("--").split("=", 1) for a in args if "=" in a)
    watched = tuple(a.split("=", 1)[1] for a in args if a.startswith("--namespace="))
    return OperatorSettings(
        namespaces=watched,
        workers=2,
        lease_namespace=flags["lease-namespace"],
        sweep_seconds=1.0,
        sweep_min_age_seconds=1.0,
        archive_prune_seconds=1.0,
    )


@pytest.fixture
def captured(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="sparkplane")
    return caplog


@pytest.mark.parametrize("variant", ["cluster-wide", "namespaced"])
def test_operator_set_applies_and_its_rbac_runs_an_app_and_the_sweep(
    kubectl: str,
    kube: Kube,
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    captured: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    variant: str,
) -> None:
    rel = f"deploy/operator/{variant}.yaml"
    docs = documents("crds", f"operator/{variant}.yaml")
    fresh(kube, docs)
    run_kubectl(kubectl, kubeconfig, "apply", "-f", "deploy/crds", "-f", rel)
    settings = operator_settings(docs)
    apps = settings.namespaces[0] if settings.namespaces else namespace
    wait_for(
        lambda: kube.get_or_none("v1", "ServiceAccount", "default", apps),
        timeout=30,
        what=f"{apps}/default",
    )
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    env = {e["name"]: e.get("value") for e in _container(docs, "Deployment")["env"]}
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", str(env["SPARKPLANE_LOG_ARCHIVE"]))  # kube
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    path = as_service_account(kube, account, deployment["metadata"]["namespace"], tmp_path)
    as_operator = Kube(connect(kubeconfig=path))
    from sparkplane_devcluster.simulator import DriverSimulator

    operator = Operator(as_operator, settings).start()
    sim = DriverSimulator(kube, apps).start()  # plays Spark's driver (admin: not the operator)
    try:
        name = f"deployed-{uuid.uuid4().hex[:6]}"
        kube.create(spark_app(name, sim={"outcome": "Succeeded", "run-for": "2s"}), apps)
        cr = wait_state(kube, apps, name, "ResourceReleased", timeout=90)
        left = [kube.create(leftover(kind, cr), apps) for kind in ("Service", "ConfigMap")]
        for obj in left:  # the sweep ran, listed Services and ConfigMaps, and deleted them
            wait_for(
                lambda o=obj: (
                    kube.get_or_none("v1", o["kind"], o["metadata"]["name"], apps) is None
                ),  # type: ignore[misc]
                timeout=30,
                what=f"the sweep to delete the leftover {obj['kind']}",
            )
        assert operator.is_leader  # it took the Lease with the installed lease Role
        operator.events.flush()
        assert operator.events.posted
        # a cluster-wide operator also sees other tests' apps whose namespaces are being
        # deleted; an Event refused there is the namespace's end, not a missing right
        refused = [
            line
            for line in captured.text.splitlines()
            if "could not post event" in line and "being terminated" not in line
        ]
        assert not refused, refused
    finally:
        operator.stop()
        sim.stop()
        as_operator.close()
        fresh(kube, docs)  # its namespaces and ClusterRole go; the CRDs stay
    text = captured.text
    assert "sweep failed" not in text and "could not prune" not in text, text[-4000:]
    # as above: an Event refused in another test's namespace being deleted is not a missing right
    ours = "\n".join(line for line in text.splitlines() if "being terminated" not in line)
    no_forbidden(ours, f"the operator of {rel}")


def test_gc_set_applies_and_its_rbac_deletes_expired_and_half_made_apps_only(
    kubectl: str, kube: Kube, kubeconfig: Path, tmp_path: Path
) -> None:
    docs = documents("gc")
    fresh(kube, docs)
    run_kubectl(kubectl, kubeconfig, "apply", "-f", "deploy/gc/")
    (cron,) = [d for d in docs if d["kind"] == "CronJob"]
    ns = cron["metadata"]["namespace"]
    args = _container(docs, "CronJob")["args"]
    assert args[:3] == ["gc", "-n", ns] and args[-1] == "--in-cluster"
    path = as_service_account(kube, cron["spec"]["jobTemplate"]["spec"]["template"]["spec"][
        "serviceAccountName"], ns, tmp_path)  # fmt: skip
    wait_for(lambda: kube.get_or_none("v1", "ServiceAccount", "default", ns), timeout=30, what="SA")

    def submit(sid: str, run_for: str, *extra: str, kill_after: str | None = None) -> int:
        env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
        cmd = ["submit", "-f", str(spec(tmp_path, run_for)), "-n", ns, "--submission-id", sid]
        return crashing_cli.run(kill_after, *cmd, *extra, env=env).returncode

    assert submit("expired", "1s", "--ttl", "1s") == 0
    assert submit("ended", "1s", "--ttl", "1h") == 0  # its Services go as Spark's stop does
    assert submit("half", "10m", kill_after="owner") == -signal.SIGKILL
    for sid in ("expired", "ended"):
        [driver] = drivers(kube, ns, sid)
        assert driver["metadata"]["annotations"].get(DEPENDENTS_CREATED_KEY), sid
        wait_for(
            lambda s=sid: (
                (drivers(kube, ns, s) or [{}])[0].get("status", {}).get("phase") == "Succeeded"
            ),  # type: ignore[misc]
            timeout=60,
            what=f"{sid} Succeeded",
        )
    [expired] = drivers(kube, ns, "expired")
    ended_at = finished_at(expired)  # KWOK may finish it late on a busy machine: its --ttl 1s
    assert ended_at is not None, expired["status"]  # must have run out before gc looks
    time.sleep(max(0.0, (ended_at + timedelta(seconds=2) - datetime.now(UTC)).total_seconds()))
    [half] = drivers(kube, ns, "half")
    assert DEPENDENTS_CREATED_KEY not in (half["metadata"].get("annotations") or {})
    [ended] = drivers(kube, ns, "ended")
    for svc in kube.list("v1", "Service", ns):  # what spark.kubernetes.driver.service.
        if (
            svc["metadata"]["labels"].get("spark-app-selector")
            == ended["metadata"]["labels"]["spark-app-selector"]
        ):  # deleteOnTermination does when the driver stops (the default)
            kube.delete("v1", "Service", svc["metadata"]["name"], ns)
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(path), SPARKPLANE_LOG_ARCHIVE="kube")
    scope = [a for a in args if a != "--in-cluster"]  # the CronJob's gc, from here
    done = subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", *scope, "--grace", "0s", "-o", "yaml"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    no_forbidden(done.stdout + done.stderr, "the gc CronJob's identity")
    assert "Traceback" not in done.stderr, done.stderr
    rows = {r["name"]: r for r in yaml.safe_load_all(done.stdout) if r}
    by_sid = {sid: drivers(kube, ns, sid) for sid in ("expired", "ended", "half")}
    assert rows[ended["metadata"]["name"]]["delete"] is False, rows  # --ttl 1h: kept
    assert rows[half["metadata"]["name"]]["delete"] is True, rows
    assert rows[expired["metadata"]["name"]]["delete"] is True, rows
    assert "past its per-app TTL" in rows[expired["metadata"]["name"]]["reason"], rows
    assert "half-made" in rows[half["metadata"]["name"]]["reason"]
    assert [n for n, r in rows.items() if r["delete"]] and len(by_sid["ended"]) == 1
    wait_for(lambda: not drivers(kube, ns, "half"), timeout=60, what="half-made driver gone")
    wait_for(lambda: not drivers(kube, ns, "expired"), timeout=60, what="expired driver gone")
    fresh(kube, docs)


def test_staging_set_applies_and_its_rbac_checks_owners_and_reviews_tokens(
    kubectl: str, kube: Kube, kubeconfig: Path, tmp_path: Path
) -> None:
    docs = documents("staging")
    fresh(kube, docs)
    run_kubectl(kubectl, kubeconfig, "apply", "-f", "deploy/staging/")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    home = deployment["metadata"]["namespace"]
    (role,) = [d for d in docs if d["kind"] == "Role"]
    apps = role["metadata"]["namespace"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    as_staging = Kube(connect(kubeconfig=as_service_account(kube, account, home, tmp_path)))
    try:
        owner_exists = pod_owner_checker(as_staging)
        labels = {"spark-app-selector": f"spark-{uuid.uuid4().hex[:8]}"}
        assert owner_exists(apps, labels) is False
        wait_for(lambda: kube.get_or_none("v1", "ServiceAccount", "default", apps), timeout=30,
                 what="SA")  # fmt: skip
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "owner", "labels": labels},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
            apps,
        )
        assert owner_exists(apps, labels) is True
        # an uploader: a service account allowed to create pods in the apps' namespace
        for obj in bodies(render("client", apps)):
            kube.apply(obj)
        uploader = mint_kubeconfig(kube, "sparkplane-client", apps)
        token = uploader.config["users"][0]["user"]["token"]
        review = kube_token_reviewer(as_staging)(token, apps)
        assert review.authenticated and review.allowed, review
        assert not kube_token_reviewer(as_staging)(token, home).allowed
    finally:
        as_staging.close()
        for obj in bodies(render("client", apps)):
            if obj["kind"].startswith("Cluster"):
                kube.delete(RBAC, obj["kind"], obj["metadata"]["name"])
        fresh(kube, docs)


def test_helm_install_as_documented_on_a_fresh_state(
    kubectl: str, kube: Kube, kubeconfig: Path
) -> None:
    """docs/operator.md's two lines, as printed, with no CRDs, namespaces or cluster-wide
    objects of the chart left from before (Helm refuses to adopt what it did not make)."""

    from sparkplane.manifests.chart import CHART, ChartValues, expected
    from sparkplane_devcluster.cluster import default_cache_dir
    from sparkplane_devcluster.helmbin import ensure_helm

    helm = str(ensure_helm(default_cache_dir(), progress=lambda m: print(f"[helm] {m}")))
    values = ChartValues(job_namespaces=("spark-apps",), gc_namespaces=("spark-apps",))
    objects = expected(values)
    spaces = [{"kind": "Namespace", "metadata": {"name": n}} for n in ("spark-operator",
                                                                        "spark-apps")]  # fmt: skip
    fresh(kube, [*objects, *spaces])
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        try:
            kube.delete(crd["apiVersion"], crd["kind"], crd["metadata"]["name"])
        except NotFoundError:
            continue
        wait_for(
            lambda c=crd: (
                kube.get_or_none(c["apiVersion"], c["kind"], c["metadata"]["name"]) is None
            ),  # type: ignore[misc]
            timeout=120,
            what=f"CRD {crd['metadata']['name']} gone",
        )
    run_kubectl(kubectl, kubeconfig, "create", "namespace", "spark-apps")
    install = [helm, "install", "sparkplane", f"deploy/{CHART}", "-n", "spark-operator"]
    install += ["--create-namespace", "--set", "spark.jobNamespaces={spark-apps}"]
    install += ["--set", "gc.namespaces={spark-apps}", "--kubeconfig", str(kubeconfig)]
    done = subprocess.run(install, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        for obj in objects:  # everything the chart renders for these values is there
            meta = obj["metadata"]
            got = kube.get_or_none(obj["apiVersion"], obj["kind"], meta["name"],
                                   meta.get("namespace"))  # fmt: skip
            assert got is not None, f"{obj['kind']} {meta.get('namespace')}/{meta['name']}"
    finally:
        subprocess.run(
            [helm, "uninstall", "sparkplane", "-n", "spark-operator", "--kubeconfig",
             str(kubeconfig)], capture_output=True, timeout=300, check=False,
        )  # fmt: skip
        fresh(kube, [*objects, *spaces])
