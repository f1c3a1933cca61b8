"""Benchmark: SparkPi end to end on the dev cluster's real node, sparkplane vs spark-submit.

The same JVM SparkPi (the Spark image's jar, 1 executor, 200m cores, 512m) is run ``--runs``
times (default 3) each way, alternating which goes first, into one namespace whose service
account holds the driver role:

- **sparkplane**: ``sparkplane submit --wait`` with spark-submit's own options;
- **spark-submit**: the real spark-submit 4.0.1 of this environment's pyspark wheel (Java 17),
  cluster mode, waiting for completion (its default), exactly as tests/integration/parity.py.

Per run: submit -> Succeeded (the command's wall time) and submit -> driver container started
(the driver pod's ``containerStatuses[].state.terminated.startedAt`` minus the wall-clock time
the command started; one-second resolution). Medians are printed, then the memory of the
cluster's processes and the node's pods (``dev-cluster status``). ``--measure-up`` also times a
warm ``up --real-node`` (stop the cluster, keep its data and the cache, start it again).

    .venv/bin/python benchmarks/real_sparkpi.py --state-dir /tmp/sp-bench --port-base 17800

Without options it uses (or starts) the demo's cluster (default state dir, ports from 16443).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests.integration.parity (spark-submit)

from tests.integration.parity import spark_submit_command, spark_submit_env

from sparkplane.kube import Kube, connect
from sparkplane.security.rbac import bodies, render
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.cluster import default_state_dir
from sparkplane_devcluster.images import SPARK_IMAGE, SPARK_PI_CLASS, SPARK_PI_JAR

console = Console()
SA = "spark"


def common(namespace: str) -> list[str]:
    confs = {
        "spark.kubernetes.container.image": SPARK_IMAGE,
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.authenticate.driver.serviceAccountName": SA,
        "spark.executor.instances": "1",
        "spark.kubernetes.driver.request.cores": "200m",
        "spark.kubernetes.executor.request.cores": "200m",
        "spark.driver.memory": "512m",
        "spark.executor.memory": "512m",
    }
    return [a for k, v in confs.items() for a in ("--conf", f"{k}={v}")]


def main_args() -> list[str]:
    return ["--class", SPARK_PI_CLASS, SPARK_PI_JAR, "10"]


def driver_of(kube: Kube, namespace: str, app_name: str) -> dict[str, Any]:
    for pod in kube.list("v1", "Pod", namespace, label_selector="spark-role=driver"):
        if pod["metadata"]["name"].startswith(f"{app_name}-"):
            return pod
    raise RuntimeError(f"no driver pod for {app_name} in {namespace}")


def started_after(pod: dict[str, Any], t0: float) -> float:
    state = pod["status"]["containerStatuses"][0]["state"]
    started = (state.get("terminated") or state.get("running") or {})["startedAt"]
    return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() - t0


def run_sparkplane(cluster: DevCluster, namespace: str, name: str) -> None:
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(cluster.kubeconfig))
    argv = ["submit", "--wait", "--timeout", "300", "--name", name, *common(namespace)]
    proc = subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", *argv, *main_args()],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"sparkplane submit failed: {proc.stdout}{proc.stderr}")


def run_spark_submit(cluster: DevCluster, argv: list[str]) -> None:
    """The real spark-submit (cluster mode; it waits for the app to end by default)."""
    proc = subprocess.run(
        spark_submit_command(cluster.server, argv),
        env=spark_submit_env(cluster.kubeconfig),
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    if proc.returncode != 0 or "termination reason: Completed" not in proc.stdout + proc.stderr:
        raise RuntimeError(f"spark-submit failed: {(proc.stdout + proc.stderr)[-3000:]}")


def one(cluster: DevCluster, kube: Kube, namespace: str, how: str, i: int) -> tuple[float, float]:
    name = f"{'sp' if how == 'sparkplane' else 'ss'}-pi-{i}-{uuid.uuid4().hex[:4]}"
    t0 = time.time()
    if how == "sparkplane":
        run_sparkplane(cluster, namespace, name)
    else:
        run_spark_submit(cluster, ["--name", name, *common(namespace), *main_args()])
    total = time.time() - t0
    deadline = time.monotonic() + 30  # the pod's phase follows its container's end
    while (driver := driver_of(kube, namespace, name))["status"].get("phase") != "Succeeded":
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name}: driver {driver['status'].get('phase')}")
        time.sleep(0.5)
    kube.delete("v1", "Pod", driver["metadata"]["name"], namespace, propagation="Background")
    return total, started_after(driver, t0)


def measure_up(cluster: DevCluster) -> float:
    cluster.down()
    t0 = time.monotonic()
    cluster.up()
    return time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument("--port-base", type=int, default=16443)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--measure-up", action="store_true", help="time a warm up --real-node")
    args = parser.parse_args()
    settings = DevClusterSettings(
        state_dir=args.state_dir, port_base=args.port_base, real_node=True, start_timeout=300.0
    )
    cluster = DevCluster(settings)
    t0 = time.monotonic()
    cluster.up(progress=lambda m: console.print(f"• {m}", markup=False))
    first_up = time.monotonic() - t0
    warm_up = measure_up(cluster) if args.measure_up else None
    kube = Kube(connect(kubeconfig=cluster.kubeconfig))
    namespace = f"bench-real-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    while kube.get_or_none("v1", "ServiceAccount", "default", namespace) is None:
        time.sleep(0.2)
    for obj in bodies(render("driver", namespace, service_account=SA)):
        kube.create(obj)
    results: dict[str, list[tuple[float, float]]] = {"sparkplane": [], "spark-submit": []}
    try:
        for i in range(args.runs):
            order = ["sparkplane", "spark-submit"][:: 1 if i % 2 == 0 else -1]
            for how in order:
                got = one(cluster, kube, namespace, how, i)
                console.print(
                    f"run {i + 1} {how}: {got[0]:.1f}s end to end, "
                    f"driver started after {got[1]:.0f}s",
                    markup=False,
                )
                results[how].append(got)
        status = cluster.status()
    finally:
        kube.delete("v1", "Namespace", namespace)
    table = Table(
        "SparkPi (JVM, 1 executor)",
        "submit -> Succeeded",
        "submit -> driver started",
        title=f"median of {args.runs} runs on the real node",
    )
    for how, runs in results.items():
        total = statistics.median(r[0] for r in runs)
        start = statistics.median(r[1] for r in runs)
        table.add_row(how, f"{total:.1f} s", f"{start:.0f} s")
    console.print(table)
    rss = {n: c["rss_mib"] for n, c in status.components.items() if c.get("alive")}
    node = ("containerd", "kubelet", "kube-proxy", "coredns", "apiserver-relay", "node-holder")
    console.print(
        f"memory: control plane + KWOK {sum(v for k, v in rss.items() if k not in node)} MiB, "
        f"real node processes {sum(v for k, v in rss.items() if k in node)} MiB, "
        f"pods now {status.pods_memory_mib} MiB",
        markup=False,
    )
    console.print(
        f"up --real-node (this run's start, cluster may have been running): {first_up:.1f}s",
        markup=False,
    )
    if warm_up is not None:
        console.print(
            f"warm up --real-node (restart, cache and data kept): {warm_up:.1f}s", markup=False
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
