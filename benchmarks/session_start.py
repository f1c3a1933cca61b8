"""Benchmark: ``SparkPlane.session()`` to the first query's result on a real node, beside the
same Spark Connect server started by hand and through the Kubeflow SDK, and its idle memory.

Each way starts a Spark Connect server of the same size (1 executor, 200m cores, 768m driver,
512m executor, Spark 4.0.1's image) in one namespace whose service account
``--service-account`` holds the driver role (``sparkplane rbac driver``), alternating which
goes first, ``--runs`` times (default 2):

* ``session()``: ``with sp.session(...) as spark: spark.range(1000).count()``: the token, the
  Secret, the wait until gRPC serves and the port-forward are sparkplane's; leaving the block
  deletes the server.
* **by hand**, as the issue's notebook user does today: ``sparkplane submit --class
  org.apache.spark.sql.connect.service.SparkConnectServer ... local:///opt/spark/jars/
  spark-connect_2.13-4.0.1.jar`` (no token: Spark's authentication off), ``kubectl
  port-forward`` to the driver's port 15002, then ``SparkSession.builder.remote(...)`` retried
  until the server answers (what a user does: try until it works), the same query;
  ``sparkplane kill`` after. Connecting before the server listens makes kubectl's forward
  exit and pyspark retry for minutes, so it waits for the driver log's "Spark Connect server
  started" first, as a user watching ``kubectl logs -f`` does.
* **the Kubeflow SDK's** ``SparkClient.connect()`` (the real ``kubeflow`` package, run by
  ``.venv-kubeflow``'s Python, ``make kubeflow-venv``) against Kubeflow's ``SparkConnect``
  served by sparkplane's operator, started in this process for the namespace (the CRDs are
  installed first): the SDK creates the resource, waits for ``Ready``, port-forwards with
  ``kubectl`` and returns the session; the same query; the SDK's ``delete_session`` after. Its
  options set the same sizes, image and account (its defaults are Kind's).

Per run: to the driver Running, to the first result, and the idle session's memory after the
first query (``--idle`` seconds later, default 20): its driver's and executor's containers'
working set from the kubelet's summary API (``/api/v1/nodes/NODE/proxy/stats/summary``, so the
kubeconfig needs an admin's rights for that line; it prints "unavailable" otherwise). Medians
printed; asserts nothing.

    .venv/bin/python benchmarks/session_start.py --kubeconfig /tmp/sp/kubeconfig -n spark-jobs

Measured 2026-11-28 beside a CI run (load ~10, 2 cores), one run each: to the server pod
Running 1.4 s / 3.3 s / 10.3 s (session(), by hand, the SDK), to the first result 57 s / 116 s /
135 s; an idle session: driver 404-410 MiB, executor 269-276 MiB, every way (docs/sessions.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from sparkplane import SparkPlane
from sparkplane.kube import Kube
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.spec.connect import CONNECT_CLASS, CONNECT_PORT, connect_jar
from sparkplane.spec.kubeflow_connect import CONNECT_NAME_LABEL
from sparkplane.version import SPARK_IMAGE, SPARK_VERSION
from sparkplane.vocab import APP_SELECTOR_LABEL, ROLE_LABEL

SIZE = {
    "executors": 1,
    "driver_memory": "768m",
    "executor_memory": "512m",
    "driver_cores": "200m",
    "executor_cores": "200m",
}


def memory_mib(kube: Kube, namespace: str, app_id: str) -> str:
    """The working set of the app's pods' containers (driver + executors), from the kubelet."""
    pods = kube.list("v1", "Pod", namespace, label_selector=f"spark-app-selector={app_id}")
    nodes = {p["spec"].get("nodeName") for p in pods} - {None}
    names = {p["metadata"]["name"]: p["metadata"]["labels"].get("spark-role", "?") for p in pods}
    out: dict[str, int] = {}
    try:
        for node in nodes:
            summary = kube.request("GET", f"/api/v1/nodes/{node}/proxy/stats/summary")
            for pod in summary.get("pods", []):
                role = names.get(pod["podRef"]["name"])
                if role and pod["podRef"]["namespace"] == namespace:
                    used = sum(
                        int((c.get("memory") or {}).get("workingSetBytes") or 0)
                        for c in pod.get("containers", [])
                    )
                    out[role] = out.get(role, 0) + used
    except Exception as exc:  # a benchmark line, not a failure: say why
        return f"unavailable ({type(exc).__name__})"
    return ", ".join(f"{role} {b / 2**20:.0f} MiB" for role, b in sorted(out.items())) or "none"


def with_session(sp: SparkPlane, args: argparse.Namespace) -> dict[str, Any]:
    marks: dict[str, Any] = {}
    start = time.monotonic()

    def progress(message: str) -> None:
        if message.endswith(": Running"):
            marks.setdefault("running", time.monotonic() - start)

    name = f"bench-{uuid.uuid4().hex[:5]}"
    with sp.session(
        name, image=SPARK_IMAGE, service_account=args.service_account, on_progress=progress, **SIZE
    ) as spark:
        assert spark.range(1000).count() == 1000
        marks["first result"] = time.monotonic() - start
        time.sleep(args.idle)
        pod = sp.kube.list(
            "v1", "Pod", sp.namespace, label_selector=f"sparkplane.io/session={name}"
        )
        app_id = pod[0]["metadata"]["labels"]["spark-app-selector"]
        marks["idle memory"] = memory_mib(sp.kube, sp.namespace, app_id)
    return marks


def by_hand(sp: SparkPlane, args: argparse.Namespace) -> dict[str, Any]:
    from pyspark.sql.connect.session import SparkSession

    marks: dict[str, Any] = {}
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=args.kubeconfig)
    name = f"hand-{uuid.uuid4().hex[:5]}"
    start = time.monotonic()
    argv = [
        *("--name", name, "--class", CONNECT_CLASS, "-n", sp.namespace),
        *("--driver-memory", SIZE["driver_memory"], "--executor-memory", SIZE["executor_memory"]),
        *("--conf", f"spark.kubernetes.container.image={SPARK_IMAGE}"),
        *("--conf", "spark.executor.instances=1"),
        *("--conf", "spark.kubernetes.driver.request.cores=200m"),
        *("--conf", "spark.kubernetes.executor.request.cores=200m"),
        *(
            "--conf",
            f"spark.kubernetes.authenticate.driver.serviceAccountName={args.service_account}",
        ),
        *("--conf", f"spark.connect.grpc.binding.port={CONNECT_PORT}"),
        connect_jar(SPARK_VERSION),
    ]
    submitted = subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", "submit", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    app = submitted.stdout.split()[0]
    pod = f"{app}-driver"
    forward: subprocess.Popen[str] | None = None
    try:
        while (sp.kube.get_or_none("v1", "Pod", pod, sp.namespace) or {}).get("status", {}).get(
            "phase"
        ) != "Running":
            time.sleep(0.5)
        marks["running"] = time.monotonic() - start
        # as a user does: watch the driver's log until the server says it listens (connecting
        # before that makes kubectl's port-forward exit, and pyspark then retries for minutes)
        while not any(
            "Spark Connect server started" in line
            for line in sp.kube.logs(pod, sp.namespace, tail_lines=200)
        ):
            time.sleep(1)
        marks["serving"] = time.monotonic() - start
        kubectl = shutil.which("kubectl") or "kubectl"
        command = [kubectl, "--kubeconfig", args.kubeconfig, "-n", sp.namespace, "port-forward"]
        command += [f"pod/{pod}", f":{CONNECT_PORT}"]
        while True:  # as a user does: try until the server answers
            if forward is None or forward.poll() is not None:
                # kubectl's port-forward exits when the pod refuses a connection (the server
                # not yet listening): start it again, as a user reruns the command
                forward = subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
                assert forward.stdout is not None
                said = forward.stdout.readline()
                found = re.search(r"127\.0\.0\.1:(\d+)", said)
                if found is None:
                    time.sleep(1)
                    continue
                port = int(found.group(1))
                marks["port-forwards"] = marks.get("port-forwards", 0) + 1
            try:
                # 127.0.0.1: with "localhost" the gRPC client tried kubectl's [::1] listener
                # first and hung there (seen here with kubectl 1.32)
                spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
                assert spark.range(1000).count() == 1000
                break
            except AssertionError:
                raise
            except Exception:
                time.sleep(1)
        marks["first result"] = time.monotonic() - start
        spark.stop()
        time.sleep(args.idle)
        driver = sp.kube.get("v1", "Pod", pod, sp.namespace)
        marks["idle memory"] = memory_mib(
            sp.kube, sp.namespace, driver["metadata"]["labels"]["spark-app-selector"]
        )
    finally:
        if forward is not None:
            forward.terminate()
        subprocess.run(
            [sys.executable, "-m", "sparkplane.cli", "kill", app, "-n", sp.namespace],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    return marks


SDK_PYTHON = Path(__file__).resolve().parents[1] / ".venv-kubeflow" / "bin" / "python"
SDK_SCRIPT = """
import json, sys, time
from pathlib import Path
from kubeflow.spark import Driver, KubernetesBackendConfig, SparkClient

kubeconfig, namespace, image, account, version, idle, marker = sys.argv[1:8]


def sized(conn, backend):  # the SDK's option pattern: this cluster's version, no Maven URL
    conn.spec.spark_version = version
    conn.spec.spark_conf.pop("spark.jars", None)


start = time.monotonic()
client = SparkClient(KubernetesBackendConfig(namespace=namespace, config_file=kubeconfig))
spark = client.connect(
    num_executors=1,
    resources_per_executor={"cpu": "1", "memory": "512Mi"},
    spark_conf={
        "spark.kubernetes.driver.request.cores": "200m",
        "spark.kubernetes.executor.request.cores": "200m",
    },
    driver=Driver(image=image, service_account=account, resources={"memory": "768Mi"}),
    options=[sized],
    timeout=600,
    connect_timeout=300,
)
assert spark.range(1000).count() == 1000
first = time.monotonic() - start
(session,) = client.list_sessions()
time.sleep(float(idle))
Path(marker).write_text(session.name)
time.sleep(15)  # the benchmark reads the idle memory now
spark.stop()
client.delete_session(session.name)
print(json.dumps({"first result": first, "name": session.name}))
"""


def kubeflow_sdk(sp: SparkPlane, args: argparse.Namespace) -> dict[str, Any]:
    """The Kubeflow SDK's connect() against sparkplane's operator (see the module doc)."""
    if not SDK_PYTHON.exists():
        raise SystemExit(f"{SDK_PYTHON} is missing: run `make kubeflow-venv`")
    marks: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script, marker = Path(tmp) / "sdk_connect.py", Path(tmp) / "idle"
        script.write_text(SDK_SCRIPT)
        argv = [args.kubeconfig, sp.namespace, SPARK_IMAGE, args.service_account, SPARK_VERSION]
        argv += [str(args.idle), str(marker)]
        start = time.monotonic()
        sdk = subprocess.Popen(
            [str(SDK_PYTHON), str(script), *argv],
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ, KUBECONFIG=args.kubeconfig),  # its kubectl port-forward
            start_new_session=True,
        )
        try:
            while sdk.poll() is None:
                pods = sp.kube.list("v1", "Pod", sp.namespace, label_selector=CONNECT_NAME_LABEL)
                server = [p for p in pods if p["metadata"]["labels"].get(ROLE_LABEL) == "driver"]
                if server and server[0].get("status", {}).get("phase") == "Running":
                    marks.setdefault("running", time.monotonic() - start)
                if marker.exists() and "idle memory" not in marks:
                    app_id = server[0]["metadata"]["labels"][APP_SELECTOR_LABEL]
                    marks["idle memory"] = memory_mib(sp.kube, sp.namespace, app_id)
                time.sleep(0.5)
        finally:
            if sdk.poll() is None:
                os.killpg(sdk.pid, signal.SIGTERM)
        out = (sdk.stdout.read() if sdk.stdout else "").strip().splitlines()
        if sdk.returncode != 0 or not out:
            raise SystemExit(f"the Kubeflow SDK's connect() failed (exit {sdk.returncode})")
        marks["first result"] = json.loads(out[-1])["first result"]
    return marks


WAYS = {"session()": with_session, "by hand": by_hand, "Kubeflow SDK": kubeflow_sdk}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--service-account", default="default")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--idle", type=float, default=20.0, help="seconds before memory is read")
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {way: [] for way in WAYS}
    with SparkPlane.connect(kubeconfig=args.kubeconfig, namespace=args.namespace) as sp:
        install_crds(sp.kube)
        settings = OperatorSettings(namespaces=(sp.namespace,), leader_election=False, workers=2)
        operator = Operator(sp.kube, settings).start()  # serves the SDK's SparkConnect
        try:
            for run in range(args.runs):
                order = list(WAYS) if run % 2 == 0 else list(reversed(WAYS))
                for way in order:
                    marks = WAYS[way](sp, args)
                    print(f"run {run + 1} {way}: {marks}", flush=True)
                    results[way].append(marks)
        finally:
            operator.stop()
    print(f"{'':>12} {'to Running':>11} {'to first result':>16}  idle memory (last run)")
    for way, runs in results.items():
        running = statistics.median(r["running"] for r in runs)
        first = statistics.median(r["first result"] for r in runs)
        print(f"{way:>12} {running:10.1f}s {first:15.1f}s  {runs[-1]['idle memory']}")


if __name__ == "__main__":
    main()
