"""Benchmark: N deferred Airflow tasks waiting on Spark apps at once, sparkplane's provider vs the
cncf provider's ``SparkKubernetesOperator`` (issue 25).

One run, on one KWOK dev cluster, with sparkplane's operator running (its shipped RBAC; it
serves Kubeflow's ``sparkoperator.k8s.io/v1beta2`` API), measures two phases one after the
other, each a fresh real Airflow 3 (``.venv-airflow``; SQLite, LocalExecutor with ``--slots``
worker slots, each component its own process, as in tests/realnode/test_airflow.py) running
ONE DAG whose task is mapped over N (default 200) v1beta2 SparkApplications, the same for both:

* ``sparkplane``: ``SparkPlaneSubmitOperator(mode="kubeflow")``, deferrable (its default): the
  task creates the SparkApplication, defers at once; its trigger waits on the triggerer's one
  shared watch of the namespace (``live_log=False``, ``driver_log_lines=0``);
* ``cncf``: ``SparkKubernetesOperator`` (apache-airflow-providers-cncf-kubernetes 10.24.0,
  unchanged) with ``deferrable=True``: that version supports it (``execute`` calls the pod
  operator's ``execute_async`` when ``self.deferrable``). The task creates the
  SparkApplication, then, still in its worker slot, polls its status every 10 s until it has
  left ``SUBMITTED`` (``CustomObjectLauncher.start_spark_job``), then defers to
  ``KubernetesPodTrigger``, which GETs the driver pod every ``poll_interval`` (2 s) per task.
  ``get_logs=False``: KWOK's simulated drivers write no log (so the driver-log fetching of both
  providers is off).

Each driver is simulated by KWOK; it runs until the benchmark ends it: once every task has
been dispatched (all deferred), the N tasks wait ``--hold`` seconds (default 60: the window the
waiting figures come from), then the drivers end one after the other over ``--spread`` seconds
(their pods' annotations tell KWOK to end them). A fixed driver run time does not fit: on a busy
2-core machine dispatching 200 tasks takes minutes, and early drivers would end before the last
task waits. Per phase it reports: the tasks waiting (deferred) at once and the worker slots held
(running tasks: max, and slot-seconds); while >= 90% of the N tasks wait, the RSS and PSS and
the CPU of the triggerer (its process group: the triggerer and its trigger runner), of the
"workers" (the scheduler's process group: the scheduler, the LocalExecutor's workers and their
task processes) and of the api-server, their established TCP connections to the API server,
and the API server's request rate (every client; watches left out); the delay from each
driver's end (the pod's ``finishedAt``, 1 s grain) to the trigger's event (the task scheduled
again) and to the task's success (p50/p95/max); the phase's wall time; the machine's load.
Prints figures; asserts nothing.

    make airflow-venv
    .venv/bin/python benchmarks/airflow_deferred.py [--tasks 200] [--slots 8] [--hold 60]

Measured 2026-11-28 (2 cores, shared: load average 10-12), N=20, sparkplane vs cncf: worker
slot-seconds 287 vs 1388; triggerer CPU while the 20 wait 1.9% vs 14.7% of a core, RSS 434 vs
497 MiB (PSS 272 vs 372); worker CPU-seconds 43 vs 125; triggerer connections to the API server
4 vs 12; API server requests/s while they wait 0.9 vs 10.3 (9.3 of them GET pods); driver end
-> trigger event p50 0.7 s (max 1.7) vs 2.3 s (max 3.3); driver end -> task success p50 3.1 s
(p95 5.8) vs 28.3 s (p95 30.8); dispatch 51 s vs 187 s, phase wall 112 s vs 270 s. sparkplane
alone at N=3: 4 connections, 2.6% of a core. N=40: triggerer CPU 3.1% vs 24.5%, API server
requests/s - vs 20.5 (19.6 GET pods: N/2), slot-seconds 557 vs 2709, driver end -> trigger
event p50 0.9 s vs 2.0 s. N=200 (4853 s, load 13): triggerer CPU-seconds 188 vs 647, worker
CPU-seconds 551 vs 2824, slot-seconds 7047 vs 26472 (cncf: 143 of 200 tasks done in its hour),
triggerer connections 26 vs 194, driver end -> trigger event p50 1.6 s vs 17.7 s (max 28 vs
646). docs/airflow.md has all three sizes and what N=200 showed.

Without ``--kubeconfig`` it brings up the KWOK dev cluster of ``SPARKPLANE_STATE_DIR`` /
``SPARKPLANE_DEV_PORT_BASE`` (sparkplane's defaults otherwise). ``--only sparkplane|cncf`` runs
one phase.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` and ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.operator_helpers import running_operator
from tests.realnode.airflowd import Airflow

from benchmarks.procstats import (
    apiserver_requests,
    cpu_seconds,
    group_pids,
    memory_mib,
    pss_mib,
    tcp_connections,
)
from sparkplane import SparkPlane
from sparkplane.errors import KubeError
from sparkplane.kube import Kube, connect
from sparkplane.kube.informer import Informer
from sparkplane.operator.deploy.install import install_crds
from sparkplane.vocab import KUBEFLOW_API_VERSION
from sparkplane_devcluster import DevCluster

SIM = "sim.sparkplane.io"
DAG_ID, RUN_ID = "bench", "run-1"
PROVIDERS = ("sparkplane", "cncf")
#: task states once every task has been dispatched (the drivers may end then)
SETTLED = {"deferred", "success", "failed", "upstream_failed", "skipped"}
#: what is measured -> the Airflow component whose process group it is
PARTS = {"triggerer": "triggerer", "workers": "scheduler", "api-server": "api-server"}
SCRAPE = 4  # samples between two reads of the API server's request counters

#: each phase's DAG: one task mapped over specs.json (written next to it)
DAGS = {
    "sparkplane": """
import json
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG
from sparkplane_airflow.operators import SparkPlaneSubmitOperator

SPECS = json.loads((Path(__file__).parent / "specs.json").read_text())
with DAG("bench", schedule=None, start_date=datetime(2026, 1, 1), max_active_tasks=SLOTS):
    # KWOK's simulated drivers write no log: no live log stream, no copy of its last lines
    SparkPlaneSubmitOperator.partial(
        task_id="app", mode="kubeflow", driver_log_lines=0, live_log=False
    ).expand(spec=SPECS)
""",
    "cncf": """
import json
from datetime import datetime
from pathlib import Path

from airflow.providers.cncf.kubernetes.operators.spark_kubernetes import SparkKubernetesOperator
from airflow.sdk import DAG

SPECS = json.loads((Path(__file__).parent / "specs.json").read_text())
with DAG("bench", schedule=None, start_date=datetime(2026, 1, 1), max_active_tasks=SLOTS):
    # KWOK's simulated drivers write no log: get_logs=False (no log fetching)
    SparkKubernetesOperator.partial(
        task_id="app", namespace=SPECS[0]["metadata"]["namespace"], get_logs=False,
        deferrable=True,
    ).expand(template_spec=SPECS)
""",
}
#: what, in a component's log, tells of trouble at scale
ISSUES = ("database is locked", "Traceback", "Triggerer's async thread was blocked")
PREFIX = {"sparkplane": "sp", "cncf": "cncf"}  # app names: <prefix>-<map index>[-suffix]
APP_INDEX = re.compile(r"^(?:sp|cncf)-(\d+)(?:-|$)")


def spec(name: str, namespace: str) -> dict[str, Any]:
    """A v1beta2 SparkPi whose KWOK driver runs until :func:`end_drivers` ends it."""
    role = {"cores": 1, "coreRequest": "10m", "memory": "128m"}
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "image": "apache/spark:4.0.1",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "sparkVersion": "4.0.1",
            "driver": role,
            "executor": {**role, "instances": 1},
        },
    }


def connection(provider: str, kubeconfig: Path, namespace: str) -> dict[str, str]:
    """The Airflow connection (an environment variable) each provider reads the cluster from."""
    if provider == "sparkplane":
        extra = {"kubeconfig": str(kubeconfig), "namespace": namespace}
        conn = {"conn_type": "sparkplane", "extra": extra}
        return {"AIRFLOW_CONN_SPARKPLANE_DEFAULT": json.dumps(conn)}
    extra = {"kube_config_path": str(kubeconfig), "namespace": namespace}
    conn = {"conn_type": "kubernetes", "extra": extra}
    return {"AIRFLOW_CONN_KUBERNETES_DEFAULT": json.dumps(conn)}


def finished_at(pod: dict[str, Any]) -> datetime | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        done = (status.get("state") or {}).get("terminated")
        if done and done.get("finishedAt"):
            return datetime.fromisoformat(done["finishedAt"].replace("Z", "+00:00"))
    return None


@dataclass
class Sample:
    t: float
    states: dict[str, int]
    rss: dict[str, float]  # component ("triggerer", "workers") -> MiB
    pss: dict[str, float]  # the same, shared pages split (a forked worker's counted once)
    cpu: dict[str, float]  # component -> CPU-seconds so far
    conns: dict[str, int]  # component -> established connections to the API server
    load: float  # the machine's 1-minute load average
    requests: dict[str, float]  # "VERB resource" -> the API server's counter (every SCRAPE)


@dataclass
class Phase:
    """One provider's run: what it observed, and its figures (:meth:`figures`)."""

    provider: str
    tasks: int
    namespace: str
    samples: list[Sample] = field(default_factory=list)
    ends: dict[int, datetime] = field(default_factory=dict)  # map index -> driver finishedAt
    tis: list[dict[str, Any]] = field(default_factory=list)
    boot: float = 0.0
    wall: float = 0.0
    failure: str = ""
    issues: dict[str, int] = field(default_factory=dict)  # "component: mark" -> count in its log

    def on_pod(self, _event: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if (meta.get("labels") or {}).get("spark-role") != "driver":
            return
        match = APP_INDEX.match(meta["name"])
        end = finished_at(pod)
        if match and end is not None:
            self.ends.setdefault(int(match.group(1)), end)

    def figures(self) -> dict[str, Any]:
        samples = self.samples
        peak = max((s.states.get("deferred", 0) for s in samples), default=0)
        window = [s for s in samples if s.states.get("deferred", 0) >= 0.9 * self.tasks]
        if len(window) < 2:  # never 90% at once: the samples around the peak instead
            window = [s for s in samples if s.states.get("deferred", 0) >= 0.9 * peak]
        slot_seconds = sum(
            a.states.get("running", 0) * (b.t - a.t) for a, b in itertools.pairwise(samples)
        )
        out: dict[str, Any] = {
            "provider": self.provider,
            "tasks": self.tasks,
            "succeeded": sum(1 for t in self.tis if t["state"] == "success"),
            "failed": sum(1 for t in self.tis if t["state"] == "failed"),
            "peak_deferred": peak,
            "window_deferred_min": min((s.states.get("deferred", 0) for s in window), default=0),
            "window_seconds": window[-1].t - window[0].t if len(window) > 1 else 0.0,
            "slots_max": max((s.states.get("running", 0) for s in samples), default=0),
            "slot_seconds": slot_seconds,
            "load_avg": statistics.mean(s.load for s in samples) if samples else 0.0,
            "boot_s": self.boot,
            "wall_s": self.wall,
        }
        for part in PARTS:
            if len(window) > 1:
                span = window[-1].t - window[0].t
                cpu = (window[-1].cpu[part] - window[0].cpu[part]) / span
                out[f"{part}_cpu_pct"] = 100 * cpu
            out[f"{part}_rss_mib"] = max((s.rss[part] for s in window), default=0.0)
            out[f"{part}_rss_mib_overall"] = max((s.rss[part] for s in samples), default=0.0)
            out[f"{part}_pss_mib"] = max((s.pss[part] for s in window), default=0.0)
            out[f"{part}_conns_max"] = max((s.conns[part] for s in window), default=0)
            out[f"{part}_cpu_s_phase"] = (
                samples[-1].cpu[part] - samples[0].cpu[part] if samples else 0.0
            )
        scraped = [s for s in window if s.requests]
        if len(scraped) > 1:
            span = scraped[-1].t - scraped[0].t
            first, last = scraped[0].requests, scraped[-1].requests
            rates = {k: (v - first.get(k, 0.0)) / span for k, v in last.items()}
            out["api_requests_per_s"] = sum(rates.values())
            top = sorted(rates.items(), key=lambda kv: -kv[1])[:3]
            out["api_requests_top"] = {k: round(v, 2) for k, v in top if v > 0}
        delays, fired = [], []
        for ti in self.tis:
            end = self.ends.get(ti["map_index"])
            if ti["state"] != "success" or not ti.get("end_date") or end is None:
                continue
            delays.append((datetime.fromisoformat(ti["end_date"]) - end).total_seconds())
            if ti.get("scheduled_when"):
                fired.append((datetime.fromisoformat(ti["scheduled_when"]) - end).total_seconds())
        out["driver_ends_seen"] = len(self.ends)
        out["end_to_success_s"] = quantiles(delays)
        out["end_to_event_s"] = quantiles(fired)
        out["log_issues"] = self.issues
        if self.failure:
            out["failure"] = self.failure
        return out


def quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    pick = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"p50": statistics.median(ordered), "p95": pick, "max": ordered[-1], "n": len(values)}


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(1)


def client_kubeconfig(admin: str, namespace: str, dest: Path) -> Path:
    """A kubeconfig of service account ``airflow`` holding sparkplane's client role only."""
    with SparkPlane.connect(kubeconfig=admin, namespace=namespace) as sp:
        sp.rbac("client", namespace, service_account="airflow", apply=True)
        dest.write_text(sp.kubeconfig("airflow", namespace).text())
    return dest


PAGE = 100  # Airflow's default ``[api] maximum_page_limit``


def ti_states(airflow: Airflow) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every mapped task instance, page by page: the API serves at most ``[api]
    maximum_page_limit`` (100 by default) per request, whatever ``limit`` asks."""
    tis: list[dict[str, Any]] = []
    while True:
        query = f"limit={PAGE}&offset={len(tis)}&order_by=map_index"
        page = airflow.api("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{RUN_ID}/taskInstances?{query}")
        tis.extend(page["task_instances"])
        if len(page["task_instances"]) < PAGE or len(tis) >= int(page.get("total_entries") or 0):
            break
    counts: dict[str, int] = {}
    for ti in tis:
        counts[str(ti["state"])] = counts.get(str(ti["state"]), 0) + 1
    return tis, counts


def run_phase(kube: Kube, admin: str, provider: str, args: argparse.Namespace) -> Phase:
    namespace = f"bench-af-{PREFIX[provider]}-{uuid.uuid4().hex[:6]}"
    phase = Phase(provider, args.tasks, namespace)
    home = Path(tempfile.mkdtemp(prefix=f"bench-airflow-{provider}-"))
    port = args.port + PROVIDERS.index(provider)
    apiserver_port = int(kube.api.configuration.host.rsplit(":", 1)[1])
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    pods = Informer(kube, "v1", "Pod", namespace=namespace)
    pods.add_handler(phase.on_pod)
    try:
        wait_until(
            lambda: kube.get_or_none("v1", "ServiceAccount", "default", namespace) is not None,
            60,
            f"service account {namespace}/default",
        )
        kubeconfig = client_kubeconfig(admin, namespace, home / "airflow.kubeconfig")
        pods.start().wait_synced(60)
        env = {
            **connection(provider, kubeconfig, namespace),
            "AIRFLOW__CORE__PARALLELISM": str(args.slots),
            "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "180",  # a cold import on a busy machine
        }
        airflow = Airflow(home, port, env)
        specs = [spec(f"{PREFIX[provider]}-{i}", namespace) for i in range(args.tasks)]
        (airflow.dags / "specs.json").write_text(json.dumps(specs))
        (airflow.dags / "bench.py").write_text(DAGS[provider].replace("SLOTS", str(args.slots)))
        with running_operator(kube, namespace, simulate=False):
            try:
                booted = time.monotonic()
                airflow.up()
                phase.boot = time.monotonic() - booted
                print(f"[{provider}] Airflow up in {phase.boot:.0f} s; {namespace}", flush=True)
                observe(phase, airflow, kube, apiserver_port, args)
            finally:
                airflow.stop_all()
        for component in ("api-server", "scheduler", "dag-processor", "triggerer"):
            text = (home / f"{component}.log").read_text(errors="replace")
            for mark in ISSUES:
                if text.count(mark):
                    phase.issues[f"{component}: {mark}"] = text.count(mark)
        raw = {
            "samples": [asdict(x) for x in phase.samples],
            "ends": {i: end.isoformat() for i, end in phase.ends.items()},
            "tis": phase.tis,
        }
        (home / "raw.json").write_text(json.dumps(raw))
        print(f"[{provider}] raw observations: {home / 'raw.json'}", flush=True)
        failed = [t for t in phase.tis if t["state"] == "failed"]
        if failed:
            index = failed[0]["map_index"]
            folder = home / "logs" / f"dag_id={DAG_ID}" / f"run_id={RUN_ID}" / "task_id=app"
            logs = sorted((folder / f"map_index={index}").glob("*.log"))
            phase.failure = logs[-1].read_text(errors="replace")[-3000:] if logs else ""
    finally:
        pods.stop()
        kube.delete("v1", "Namespace", namespace)
    return phase


def end_drivers(kube: Kube, phase: Phase, spread: float) -> None:
    """End every driver (KWOK: the pod succeeds at once), in map-index order, over ``spread``
    seconds: as drivers that started together but ran for different times."""
    pods = kube.list("v1", "Pod", phase.namespace, label_selector="spark-role=driver")
    named = sorted(
        (int(m.group(1)), p) for p in pods if (m := APP_INDEX.match(p["metadata"]["name"]))
    )
    annotations = {f"{SIM}/outcome": "Succeeded", f"{SIM}/run-for": "0s"}
    for _, pod in named:
        kube.patch(
            "v1",
            "Pod",
            pod["metadata"]["name"],
            {"metadata": {"annotations": annotations}},
            namespace=phase.namespace,
        )
        time.sleep(spread / len(named))


def observe(
    phase: Phase, airflow: Airflow, kube: Kube, apiserver_port: int, args: argparse.Namespace
) -> None:
    """Trigger the run; sample every ``--interval`` s until every task has ended."""
    leaders = {part: airflow.procs[component].pid for part, component in PARTS.items()}
    airflow.trigger(DAG_ID, RUN_ID)
    started = time.monotonic()
    deadline = started + args.timeout
    counts: dict[str, int] = {}
    held: float | None = None  # when every task had been dispatched (deferred or ended)
    ender: threading.Thread | None = None
    while time.monotonic() < deadline:
        time.sleep(args.interval if phase.samples else 0)
        try:
            phase.tis, counts = ti_states(airflow)
        except (urllib.error.URLError, TimeoutError, KeyError):
            continue  # a busy Airflow API server: ask again
        requests: dict[str, float] = {}
        if len(phase.samples) % SCRAPE == 0:  # its /metrics is megabytes: not every sample
            with contextlib.suppress(KubeError, OSError):  # a busy API server: next time
                requests = apiserver_requests(kube)
        pids = {part: group_pids(leader) for part, leader in leaders.items()}
        phase.samples.append(
            Sample(
                t=time.monotonic() - started,
                states=counts,
                rss={p: sum(memory_mib(pid)[0] for pid in ps) for p, ps in pids.items()},
                pss={p: sum(pss_mib(pid) for pid in ps) for p, ps in pids.items()},
                cpu={p: sum(cpu_seconds(pid) for pid in ps) for p, ps in pids.items()},
                conns={p: tcp_connections(ps, apiserver_port) for p, ps in pids.items()},
                load=os.getloadavg()[0],
                requests=requests,
            )
        )
        if counts.get("success", 0) + counts.get("failed", 0) >= args.tasks:
            break
        now = time.monotonic()
        if held is None and counts.get("deferred", 0) and set(counts) <= SETTLED:
            held = now
            print(f"[{phase.provider}] {now - started:.0f} s: every task waits", flush=True)
        if ender is None and held is not None and now - held >= args.hold:
            ender = threading.Thread(
                target=end_drivers, args=(kube, phase, args.spread), daemon=True
            )
            ender.start()
        if len(phase.samples) % 12 == 0:
            print(f"[{phase.provider}] {time.monotonic() - started:.0f} s: {counts}", flush=True)
    phase.wall = time.monotonic() - started
    print(f"[{phase.provider}] done in {phase.wall:.0f} s: {counts}", flush=True)


ROWS = (
    ("tasks succeeded / failed", lambda f: f"{f['succeeded']} / {f['failed']}"),
    ("peak deferred at once", lambda f: f"{f['peak_deferred']}"),
    ("waiting window (s; min deferred)", lambda f: f"{f['window_seconds']:.0f}; "
     f"{f['window_deferred_min']}"),
    ("worker slots held: max, slot-s", lambda f: f"{f['slots_max']}, {f['slot_seconds']:.0f}"),
    ("triggerer RSS; PSS MiB (waiting)", lambda f: f"{f['triggerer_rss_mib']:.0f}; "
     f"{f['triggerer_pss_mib']:.0f}"),
    ("triggerer CPU % of a core (waiting)", lambda f: f"{f.get('triggerer_cpu_pct', 0):.1f}"),
    ("triggerer CPU-s (whole phase)", lambda f: f"{f['triggerer_cpu_s_phase']:.0f}"),
    ("workers RSS; PSS MiB (waiting)", lambda f: f"{f['workers_rss_mib']:.0f}; "
     f"{f['workers_pss_mib']:.0f}"),
    ("workers RSS MiB (phase max)", lambda f: f"{f['workers_rss_mib_overall']:.0f}"),
    ("workers CPU % (waiting)", lambda f: f"{f.get('workers_cpu_pct', 0):.1f}"),
    ("workers CPU-s (whole phase)", lambda f: f"{f['workers_cpu_s_phase']:.0f}"),
    ("api-server CPU-s (whole phase)", lambda f: f"{f['api-server_cpu_s_phase']:.0f}"),
    ("API conns: triggerer, workers", lambda f: f"{f['triggerer_conns_max']}, "
     f"{f['workers_conns_max']}"),
    ("API requests/s (waiting)", lambda f: f"{f.get('api_requests_per_s', 0):.1f}"),
    ("driver end -> event p50/max s", lambda f: _q(f["end_to_event_s"], ("p50", "max"))),
    ("driver end -> success p50/p95/max s", lambda f: _q(f["end_to_success_s"],
                                                      ("p50", "p95", "max"))),
    ("machine load average (mean)", lambda f: f"{f['load_avg']:.1f}"),
    ("Airflow boot; phase wall (s)", lambda f: f"{f['boot_s']:.0f}; {f['wall_s']:.0f}"),
)  # fmt: skip


def _q(values: dict[str, float], keys: tuple[str, ...]) -> str:
    return "/".join(f"{values[k]:.1f}" for k in keys) if values else "-"


def report(figures: list[dict[str, Any]], wall: float) -> None:
    width = max(len(r[0]) for r in ROWS) + 2
    print("\n" + " " * width + "".join(f"{f['provider']:>22}" for f in figures))
    for label, cell in ROWS:
        print(f"{label:<{width}}" + "".join(f"{cell(f):>22}" for f in figures))
    for f in figures:
        print(f"{f['provider']}: busiest API requests/s while waiting {f.get('api_requests_top')}")
        print(f"{f['provider']}: in the components' logs {f.get('log_issues') or 'no trouble'}")
        if f.get("failure"):
            print(f"{f['provider']}: a failed task's log:\n{f['failure']}")
    print(f"whole run: {wall:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument(
        "--hold", type=float, default=60.0, help="seconds every task waits before drivers end"
    )
    parser.add_argument("--spread", type=float, default=60.0, help="seconds the ends spread over")
    parser.add_argument("--slots", type=int, default=8, help="Airflow's worker slots")
    parser.add_argument("--only", choices=PROVIDERS, help="run one phase")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a phase may take")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--port", type=int, default=18896, help="Airflow's API port (and +1)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    started = time.monotonic()
    admin = args.kubeconfig or str(DevCluster().up(progress=print))
    kube = Kube(connect(kubeconfig=admin))
    install_crds(kube)
    figures = []
    for provider in [args.only] if args.only else PROVIDERS:
        try:
            figures.append(run_phase(kube, admin, provider, args).figures())
        except Exception as exc:  # the other phase's figures still count
            print(f"[{provider}] phase failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        print(f"[{provider}] {json.dumps(figures[-1])}", flush=True)
    report(figures, time.monotonic() - started)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
