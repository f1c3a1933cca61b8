"""Benchmark: many deferred Airflow tasks waiting on Spark apps at once (issue 25).

A real Airflow 3 (``.venv-airflow``; SQLite, LocalExecutor, each component its own process, as in
tests/realnode/test_airflow.py) runs one DAG whose ``SparkPlaneSubmitOperator`` is mapped over N
native apps (default 200) on the KWOK dev cluster; each simulated driver succeeds ``--run-for``
seconds after it starts, long enough that every task is deferred at once. Reports: the
triggerer's memory (RSS of its process group) and CPU while the N tasks wait, its TCP
connections to the API server (the watches: one per namespace, shared), and the delay from each
driver's end (the pod's ``finishedAt``) to its task's success. Prints figures; asserts nothing.

    make airflow-venv
    .venv/bin/python benchmarks/airflow_deferred.py [--tasks 200] [--run-for 240] [--kubeconfig K]

Without ``--kubeconfig`` it brings up the KWOK dev cluster of ``SPARKPLANE_STATE_DIR`` /
``SPARKPLANE_PORT_BASE`` (sparkplane's defaults otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.realnode.airflowd import Airflow

from benchmarks.procstats import cpu_seconds, memory_mib
from sparkplane.kube import Kube, connect
from sparkplane_devcluster import DevCluster

DAG = """
import json
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG
from sparkplane_airflow.operators import SparkPlaneSubmitOperator

SPECS = json.loads((Path(__file__).parent / "specs.json").read_text())
with DAG("bench", schedule=None, start_date=datetime(2026, 1, 1), max_active_tasks=8):
    # KWOK's simulated drivers write no log: no live log stream, no copy of its last lines
    SparkPlaneSubmitOperator.partial(task_id="app", driver_log_lines=0, live_log=False).expand(
        spec=SPECS
    )
"""


def spec(name: str, namespace: str, run_for: int) -> dict[str, Any]:
    annotation = "spark.kubernetes.driver.annotation.sim.sparkplane.io"
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "mainClass": "org.apache.spark.examples.SparkPi",
            "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
            "image": "apache/spark:4.0.1",
            "sparkConf": {
                "spark.executor.instances": "1",
                f"{annotation}/outcome": "Succeeded",
                f"{annotation}/run-for": f"{run_for}s",
            },
        },
    }


def group_pids(leader: int) -> list[int]:
    """Every process of ``leader``'s process group (the triggerer and its trigger runner)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[2]) == leader:  # field 5: pgrp
                found.append(int(entry.name))
    return found


def api_connections(pids: list[int], port: int) -> int:
    """Established TCP connections of ``pids`` to ``port`` (the API server)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if fields[3] == "01" and remote_port == port and fields[9] in inodes:
                count += 1
    return count


def finished_at(pod: dict[str, Any]) -> datetime | None:
    for status in pod.get("status", {}).get("containerStatuses") or []:
        done = (status.get("state") or {}).get("terminated")
        if done and done.get("finishedAt"):
            return datetime.fromisoformat(done["finishedAt"].replace("Z", "+00:00"))
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--run-for", type=int, default=240, help="seconds each driver runs")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--port", type=int, default=18896, help="Airflow's API port")
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or str(DevCluster().up(progress=print))
    kube = Kube(connect(kubeconfig=kubeconfig))
    apiserver_port = int(kube.api.configuration.host.rsplit(":", 1)[1])
    namespace = f"bench-airflow-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    home = Path(tempfile.mkdtemp(prefix="bench-airflow-"))
    conn = {"conn_type": "sparkplane", "extra": {"kubeconfig": kubeconfig, "namespace": namespace}}
    airflow = Airflow(home, args.port, {"AIRFLOW_CONN_SPARKPLANE_DEFAULT": json.dumps(conn)})
    specs = [spec(f"bench-{i}", namespace, args.run_for) for i in range(args.tasks)]
    (airflow.dags / "specs.json").write_text(json.dumps(specs))
    (airflow.dags / "bench.py").write_text(DAG)
    samples: list[tuple[float, float, float, int, int]] = []  # t, rss, cpu, conns, deferred
    stop = threading.Event()
    try:
        airflow.up()
        leader = airflow.procs["triggerer"].pid
        started = time.monotonic()
        airflow.trigger("bench", "run-1")

        def states() -> dict[str, int]:
            tis = airflow.api("GET", "/api/v2/dags/bench/dagRuns/run-1/taskInstances?limit=1000")
            counts: dict[str, int] = {}
            for ti in tis["task_instances"]:
                counts[str(ti["state"])] = counts.get(str(ti["state"]), 0) + 1
            return counts

        def sample() -> None:
            while not stop.is_set():
                pids = group_pids(leader)
                rss = sum(memory_mib(p)[0] for p in pids)
                cpu = sum(cpu_seconds(p) for p in pids)
                deferred = states().get("deferred", 0)
                conns = api_connections(pids, apiserver_port)
                samples.append((time.monotonic() - started, rss, cpu, conns, deferred))
                stop.wait(5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        deadline = time.monotonic() + args.run_for + 1800
        while time.monotonic() < deadline:
            counts = states()
            if counts.get("success", 0) + counts.get("failed", 0) >= args.tasks:
                break
            time.sleep(5)
        stop.set()
        sampler.join()
        tis = airflow.api("GET", "/api/v2/dags/bench/dagRuns/run-1/taskInstances?limit=1000")
        report(kube, namespace, tis["task_instances"], samples, args)
    finally:
        stop.set()
        airflow.stop_all()
        kube.delete("v1", "Namespace", namespace)


def report(
    kube: Kube,
    namespace: str,
    tis: list[dict[str, Any]],
    samples: list[tuple[float, float, float, int, int]],
    args: argparse.Namespace,
) -> None:
    pods = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    ends = {p["metadata"]["labels"].get("spark-app-name"): finished_at(p) for p in pods}
    delays: list[float] = []
    fired: list[float] = []  # the driver's end -> the trigger's event (the task scheduled)
    for ti in tis:
        if ti["state"] != "success" or not ti.get("end_date"):
            continue
        end = ends.get(f"bench-{ti['map_index']}")
        if end is not None:
            delays.append((datetime.fromisoformat(ti["end_date"]) - end).total_seconds())
            fired.append((datetime.fromisoformat(ti["scheduled_when"]) - end).total_seconds())
    waiting = [s for s in samples if s[4] >= args.tasks * 0.9]
    succeeded = sum(1 for t in tis if t["state"] == "success")
    print(f"tasks: {args.tasks}, succeeded: {succeeded}, driver pods: {len(pods)}")
    print(f"peak deferred at once: {max((s[4] for s in samples), default=0)}")
    if waiting:
        cpu = (waiting[-1][2] - waiting[0][2]) / max(1.0, waiting[-1][0] - waiting[0][0])
        print(
            f"triggerer while >=90% wait: RSS max {max(s[1] for s in waiting):.0f} MiB, "
            f"CPU {cpu * 100:.1f}% of a core, API server connections max "
            f"{max(s[3] for s in waiting)}"
        )
    print(f"triggerer RSS max overall: {max((s[1] for s in samples), default=0):.0f} MiB")
    if not delays:
        sample = tis[0] if tis else {}
        print(f"no delay measured: ends {sorted(ends)[:3]}, a task {sample}")
    if delays:
        q = statistics.quantiles(delays, n=20) if len(delays) > 1 else delays * 19
        print(
            f"driver end -> task success: p50 {statistics.median(delays):.1f} s, "
            f"p95 {q[18]:.1f} s, max {max(delays):.1f} s (n={len(delays)})"
        )
        print(
            f"driver end -> trigger event (task scheduled again): p50 "
            f"{statistics.median(fired):.1f} s, max {max(fired):.1f} s (1 s: finishedAt's grain)"
        )


if __name__ == "__main__":
    main()
