"""After the driver is gone, on the real node: logs from the archive, event logs in a real Spark
History Server, retention.

A native SparkPi in a namespace with a History Server (event logs on a hostPath shared by the
driver and the server) is removed by ``gc``; ``logs`` still prints "Pi is roughly" from the
archive and says so; the History Server lists the app and serves its jobs page through
``sparkplane ui APP``. A killed app's partial log is kept. ``gc`` past the retention removes the
archive and the event log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.errors import KubeError
from sparkplane.kube import Kube
from tests.integration.helpers import wait_for
from tests.realnode.sparkapps import DONE, cli, driver_pod, spec, submit, write


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "archive"
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", str(where))  # the CLI subprocesses inherit it
    return where


@pytest.fixture
def events_dir(tmp_path: Path, namespace: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A node path for the event logs (the node shares the host's filesystem): the namespace's
    own directory under the root ``gc`` prunes (``SPARKPLANE_EVENT_LOG_ROOT``, inherited by the
    CLI subprocesses: the pruner's own setting, never the namespace's)."""
    root = tmp_path / "spark-events"
    monkeypatch.setenv("SPARKPLANE_EVENT_LOG_ROOT", str(root))
    yield root / namespace
    subprocess.run(["rm", "-rf", str(root)], check=False)


def _ui(kubeconfig: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``sparkplane ARGS`` that port-forwards: the process and the URL it printed."""
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkplane.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() else "")
    return proc, url


def _has_event_log(where: Path, app_id: str) -> bool:
    """Spark 4 writes rolling event logs (``eventlog_v2_<appId>/``), older ones ``<appId>``."""
    return any(p.name.removeprefix("eventlog_v2_").startswith(app_id) for p in where.iterdir())


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return str(resp.read().decode())


def assert_history_serves(url: str, app_id: str, *, timeout: float, what: str) -> None:
    """``sparkplane ui``'s ``url`` is the app's History Server page, the server's REST API lists
    the app as completed (waiting up to ``timeout``), its jobs succeeded and the page renders."""
    assert url.endswith(f"/history/{app_id}/jobs/")
    base = url.split("/history/", maxsplit=1)[0]
    listed = wait_for(
        lambda: (
            [a for a in json.loads(_get(f"{base}/api/v1/applications")) if a["id"] == app_id]
            or None
        ),
        timeout=timeout,
        what=what,
    )
    assert listed[0]["attempts"][0]["completed"] is True
    jobs = json.loads(_get(f"{base}/api/v1/applications/{app_id}/jobs"))
    assert jobs and all(j["status"] == "SUCCEEDED" for j in jobs)
    assert "Spark Jobs" in _get(url)


def test_gc_archives_logs_and_history_server_serves_the_app(
    kube: Kube, kubeconfig: Path, namespace: str, tmp_path: Path, archive: Path, events_dir: Path
) -> None:
    up = cli(
        kubeconfig,
        "history",
        "up",
        "-n",
        namespace,
        "--host-path",
        str(events_dir),
        "--retention",
        "1h",
        "--wait",
        "240",
    )
    assert "Deployment/sparkplane-history applied" in up.stdout
    body = spec("pi-hist", namespace, executors=1, args=["20"])
    name = submit(kubeconfig, "-f", str(write(tmp_path, body)), "--ttl", "0s")
    cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "300")
    pod = wait_for(
        lambda: (p := driver_pod(kube, namespace, name)) and p["status"]["phase"] in DONE and p,
        timeout=60,
        what="the driver pod finished",
    )
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    conf = pod["spec"]["containers"][0]
    assert any(m["mountPath"] == "/spark-events" for m in conf.get("volumeMounts", []))
    app_id = pod["metadata"]["labels"]["spark-app-selector"]

    gc = cli(kubeconfig, "gc", "-n", namespace, "-o", "json")
    assert [d["name"] for d in json.loads(gc.stdout) if d["delete"]] == [pod["metadata"]["name"]]
    wait_for(lambda: driver_pod(kube, namespace, name) is None, timeout=60, what="driver gone")

    logs = cli(kubeconfig, "logs", name, "-n", namespace)
    assert "Pi is roughly 3.1" in logs.stdout
    assert "from the archive, pod deleted at" in logs.stderr and "expired (gc)" in logs.stderr
    meta = json.loads((archive / namespace / name / "meta.json").read_text())
    assert meta["app_id"] == app_id and meta["reason"] == "expired (gc)"
    for ex in meta["executors"]:
        out = cli(kubeconfig, "logs", name, "-n", namespace, "--executor", str(ex))
        assert "executor" in out.stderr and out.stdout.strip()

    assert _has_event_log(events_dir, app_id), list(events_dir.iterdir())
    proc, url = _ui(kubeconfig, "ui", name, "-n", namespace, "--port", "0")
    try:
        assert_history_serves(url, app_id, timeout=90, what="the History Server lists the app")
    finally:
        proc.terminate()
        proc.wait(10)


def test_killed_app_keeps_partial_logs_and_retention_removes_them(
    kube: Kube, kubeconfig: Path, namespace: str, tmp_path: Path, archive: Path, events_dir: Path
) -> None:
    # no --wait: the server's own chmod may come after the driver
    events_dir.mkdir(mode=0o1777, parents=True)
    events_dir.chmod(0o1777)
    cli(kubeconfig, "history", "up", "-n", namespace, "--host-path", str(events_dir))
    body = spec("pi-kill", namespace, executors=1, args=["100000"])
    body["metadata"]["annotations"] = {"sparkplane.io/log-retention-seconds": "5"}
    name = submit(kubeconfig, "-f", str(write(tmp_path, body)))

    def running() -> bool | None:
        pod = driver_pod(kube, namespace, name)
        if pod is None or pod["status"].get("phase") != "Running":
            return None
        selector = "spark-role=executor,spark-exec-id=1"
        executors = kube.list("v1", "Pod", namespace, label_selector=selector)
        return True if any(e["status"].get("phase") == "Running" for e in executors) else None

    wait_for(running, timeout=240, what="the app running with its executor")
    time.sleep(5)  # let it compute a little
    app_id = driver_pod(kube, namespace, name)["metadata"]["labels"]["spark-app-selector"]  # type: ignore[index]
    cli(kubeconfig, "kill", name, "-n", namespace, "--wait")
    logs = cli(kubeconfig, "logs", name, "-n", namespace)
    assert "from the archive" in logs.stderr and "killed" in logs.stderr
    assert logs.stdout.strip() and "Pi is roughly" not in logs.stdout
    executor = cli(kubeconfig, "logs", name, "-n", namespace, "--executor", "1")
    assert "executor 1 log from the archive" in executor.stderr and executor.stdout.strip()
    assert (archive / namespace / name / "driver.log").is_file()
    assert _has_event_log(events_dir, app_id)

    time.sleep(6)  # past the app's 5 s log retention
    cli(kubeconfig, "gc", "-n", namespace)
    assert not (archive / namespace / name).exists()
    assert not _has_event_log(events_dir, app_id)
    gone = cli(kubeconfig, "logs", name, "-n", namespace, check=8)
    assert "Traceback" not in gone.stderr


def test_operator_released_driver_logs_are_kept_and_history_lists_it(
    kube: Kube, kubeconfig: Path, namespace: str, tmp_path: Path, archive: Path, events_dir: Path
) -> None:
    from sparkplane.operator.deploy.install import install_crds
    from tests.integration.operator_helpers import running_operator

    install_crds(kube)
    cli(
        kubeconfig,
        "history",
        "up",
        "-n",
        namespace,
        "--host-path",
        str(events_dir),
        "--wait",
        "240",
    )
    body = spec("pi-op", namespace, executors=1, args=["10"])
    # a hostPath event-log store is a hostPath volume in the driver: the operator's pod policy
    # refuses it unless its admin opts out (docs/security.md; a tenant uses a --claim store)
    with running_operator(kube, namespace, simulate=False, pod_policy_allow=("host-path",)):
        cli(kubeconfig, "submit", "-f", str(write(tmp_path, body)), "--mode", "operator")
        cr = wait_for(
            lambda: (
                (c := kube.get("spark.apache.org/v1", "SparkApplication", "pi-op", namespace))
                .get("status", {})
                .get("currentState", {})
                .get("currentStateSummary")
                in ("ResourceReleased", "TerminatedWithoutReleaseResources")
                and c
            ),
            timeout=300,
            what="the operator released the app",
        )
    assert cr["status"]["currentState"]["currentStateSummary"] == "ResourceReleased"
    assert driver_pod(kube, namespace, "pi-op") is None
    logs = cli(kubeconfig, "logs", "pi-op", "-n", namespace)
    assert "Pi is roughly 3.1" in logs.stdout
    assert "released by the operator" in logs.stderr
    app_id = json.loads((archive / namespace / "pi-op" / "meta.json").read_text())["app_id"]
    assert app_id and _has_event_log(events_dir, app_id)
    proc, url = _ui(kubeconfig, "ui", "pi-op", "-n", namespace, "--port", "0")
    try:
        base = url.split("/history/")[0]
        wait_for(
            lambda: any(a["id"] == app_id for a in json.loads(_get(f"{base}/api/v1/applications"))),
            timeout=90,
            what="the History Server lists the operator app",
        )
        assert json.loads(_get(f"{base}/api/v1/applications/{app_id}/jobs"))
    finally:
        proc.terminate()
        proc.wait(10)


def _printed(kube: Kube, namespace: str, pod: str, text: str) -> bool:
    try:
        return any(text in line for line in kube.logs(pod, namespace))
    except KubeError:  # not started yet
        return False


def test_driver_deleted_with_kubectl_is_archived_by_the_operator(
    kube: Kube, kubeconfig: Path, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kubectl delete pod` (a DELETE with the default grace period) of a running operator-mode
    driver: the operator sees the deletionTimestamp and archives the log, in-cluster, while the
    real container is still stopping."""
    from sparkplane.operator.deploy.install import install_crds
    from sparkplane.operator.runtime.deletions import REASON
    from tests.integration.operator_helpers import running_operator

    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", "kube")
    monkeypatch.setenv("SPARKPLANE_CACHE_DIR", str(tmp_path / "cache"))
    install_crds(kube)
    body = spec("pi-del", namespace, executors=1, args=["20000"])  # runs for minutes
    with running_operator(kube, namespace, simulate=False):
        cli(kubeconfig, "submit", "-f", str(write(tmp_path, body)), "--mode", "operator")
        driver = wait_for(lambda: driver_pod(kube, namespace, "pi-del"), timeout=60, what="driver")
        name = driver["metadata"]["name"]
        wait_for(
            lambda: _printed(kube, namespace, name, "Starting job"),
            timeout=240,
            what="the real driver running its job",
            interval=2,
        )
        kube.delete("v1", "Pod", name, namespace, grace_period_seconds=30)  # as kubectl does
        cm = wait_for(
            lambda: kube.get_or_none("v1", "ConfigMap", "sparkplane-logs-pi-del", namespace),
            timeout=60,
            what="the operator's archive of the deleted driver",
        )
        wait_for(lambda: driver_pod(kube, namespace, "pi-del") is None, timeout=90, what="gone")
    meta = json.loads(cm["data"]["meta.json"])
    assert meta["reason"] == REASON and meta["pod_uid"] == driver["metadata"]["uid"]
    logs = cli(kubeconfig, "logs", "pi-del", "-n", namespace)
    assert "Starting job" in logs.stdout and "Pi is roughly" not in logs.stdout
    assert "from the archive" in logs.stderr and "deleted by someone else" in logs.stderr
