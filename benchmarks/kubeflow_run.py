"""One run of the Kubeflow-shape benchmark: set-up, submission, observation, report, clean-up.

See ``operator_kubeflow.py`` for what is measured. The operator(s) and the driver simulator run
as child processes (their CPU is counted apart); this process submits at the fixed rate and
watches pods and SparkApplications, timing every change as its watches see it (the same watch
latency on both sides of each lag).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from benchmarks import procstats
from sparkplane.errors import KubeError, NotFoundError
from sparkplane.kube import Kube, connect
from sparkplane.kube.informer import Informer
from sparkplane.operator.deploy.install import install_crds
from sparkplane.vocab import parse_time
from sparkplane_devcluster.components import node_manifest

API = "spark.apache.org/v1"
KUBEFLOW_API = "sparkoperator.k8s.io/v1beta2"
#: where a v1beta2 app's Apache-shaped status is kept (sparkplane.operator.core.kubeflow_status)
INTERNAL = "sparkplane"
SIM = "spark.kubernetes.driver.annotation.sim.sparkplane.io"
SHARD = "sparkplane.io/bench-shard"
STARTED = {
    "DriverStarted", "DriverReady", "InitializedBelowThresholdExecutors", "RunningHealthy",
    "RunningWithBelowThresholdExecutors", "RunningWithPartialCapacity",
}  # fmt: skip
ENDED = {"Succeeded", "Failed", "ResourceReleased", "TerminatedWithoutReleaseResources"}
TERMINAL = {"ResourceReleased", "TerminatedWithoutReleaseResources"}
#: the operator as it was before issue 21 item 5: no backpressure, one lane for every key
BEFORE = ["--no-capacity-limit", "--no-status-first"]
WAITING = "WaitingForCapacity"  # sparkplane.operator.core.reconciler.WAITING_FOR_CAPACITY
#: ``--api`` -> the apiVersion of the SparkApplications submitted
APIS = {"apache": API, "kubeflow": KUBEFLOW_API}


def operator_status(obj: dict[str, Any], api: str) -> dict[str, Any]:
    """The operator's own (Apache-shaped) status of an app; for v1beta2, beside Kubeflow's."""
    status: dict[str, Any] = obj.get("status") or {}
    return (status.get(INTERNAL) or {}) if api == "kubeflow" else status


@dataclass(frozen=True)
class Config:
    kubeconfig: str
    apps: int = 6000
    rate: float = 1000.0  # apps per minute; 0 = as fast as possible
    namespaces: int = 3
    executors: int = 5
    run_for: float = 30.0
    instances: int = 1
    workers: int = 48
    nodes: int = 20
    timeout: float = 3600.0
    state_dir: str | None = None  # the dev cluster's, to find its processes
    quiet: bool = False
    capacity: bool = True  # the operator's backpressure (False: without it and the urgent lane)
    api: str = "apache"  # the resources submitted: "apache" (spark.apache.org/v1) or "kubeflow"


def _epoch(stamp: object) -> float | None:
    """An RFC 3339 time of an object (``2026-11-28T21:40:00Z``) as seconds since the epoch."""
    when = parse_time(stamp)
    return when.timestamp() if when else None


@dataclass
class Times:
    submitted: float = 0.0
    driver_seen: float | None = None
    driver_bound: float | None = None
    driver_running: float | None = None
    driver_done: float | None = None
    status_started: float | None = None
    status_done: float | None = None
    # the same two moments as the objects' own clocks say them (1 s resolution): the driver
    # container's startedAt (KWOK's), the operator's lastTransitionTime of the first started
    # state; their difference does not include this process's own lag in reading the watches
    server_running: float | None = None
    server_started: float | None = None
    server_written: float | None = None
    seen_written: float | None = None  # when this process's watch delivered it (wall clock)
    probe_written: float | None = None  # when an idle watcher's watch did (watch_probe.py)
    requested: float | None = None  # the status says DriverRequested: admitted by the operator
    held: bool = False  # the status said WaitingForCapacity at some point
    released: float | None = None
    state: str = ""
    history: list[str] = field(default_factory=list)
    executors: set[str] = field(default_factory=set)


def spark_app(name: str, config: Config, shard: int) -> dict[str, Any]:
    conf = {
        "spark.kubernetes.container.image": "apache/spark:4.0.0",
        "spark.executor.instances": str(config.executors),
        "spark.kubernetes.driver.request.cores": "10m",
        "spark.kubernetes.executor.request.cores": "10m",
        "spark.driver.memory": "128m",
        "spark.executor.memory": "128m",
        f"{SIM}/outcome": "Succeeded",
        f"{SIM}/run-for": f"{config.run_for:g}s",
        f"{SIM}/executors": str(config.executors),
    }
    meta = {"name": name, "labels": {SHARD: str(shard)}}
    if config.api == "kubeflow":  # the same app as Kubeflow's users write it (v1beta2)
        sizes = {"memory": "128m", "coreRequest": "10m"}
        return {
            "apiVersion": KUBEFLOW_API,
            "kind": "SparkApplication",
            "metadata": meta,
            "spec": {
                "type": "Scala",
                "mode": "cluster",
                "image": "apache/spark:4.0.0",
                "mainClass": "org.apache.spark.examples.SparkPi",
                "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
                "sparkVersion": "4.0.0",
                "driver": sizes,
                "executor": {**sizes, "instances": config.executors},
                "sparkConf": {k: v for k, v in conf.items() if k.startswith(SIM)},
            },
        }
    return {
        "apiVersion": API,
        "kind": "SparkApplication",
        "metadata": meta,
        "spec": {
            "mainClass": "org.apache.spark.examples.SparkPi",
            "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "sparkConf": conf,
        },
    }


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": pct(values, 0.50),
        "p95": pct(values, 0.95),
        "p99": pct(values, 0.99),
        "max": max(values) if values else float("nan"),
        "n": len(values),
    }


class BenchRun:
    """Context manager: sets up on enter, cleans up on exit."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.kube = Kube(connect(kubeconfig=config.kubeconfig))
        self.tag = uuid.uuid4().hex[:5]
        self.namespaces = [f"kf-bench-{self.tag}-{i}" for i in range(config.namespaces)]
        self.nodes = [f"kf-bench-{self.tag}-node-{i}" for i in range(config.nodes)]
        self.apps: dict[tuple[str, str], Times] = {}
        self.lock = threading.Lock()
        self.informers: list[Informer] = []
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.logs = Path(os.environ.get("TMPDIR", "/tmp")) / f"kf-bench-{self.tag}"
        self.create_seconds: list[float] = []
        self.create_errors = 0
        self.cpu0: dict[str, float] = {}
        self.loads: list[float] = []  # 1-minute load average, sampled every progress line

    # -- set-up -----------------------------------------------------------------------------
    def say(self, text: str) -> None:
        if not self.config.quiet:
            print(text, flush=True)

    def __enter__(self) -> BenchRun:
        self.logs.mkdir(parents=True, exist_ok=True)
        install_crds(self.kube)
        for ns in self.namespaces:
            self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for node in self.nodes:
            self.kube.create(node_manifest(node, "1000", "4096Gi", 300))
        for ns in self.namespaces:
            apps = Informer(self.kube, APIS[self.config.api], "SparkApplication", namespace=ns)
            apps.add_handler(self._on_app)
            pods = Informer(self.kube, "v1", "Pod", namespace=ns)
            pods.add_handler(self._on_pod)
            self.informers += [apps, pods]
        for informer in self.informers:
            informer.start().wait_synced(60)
        self._start_children()
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        # the operator archives each released driver's log (a real cost, kept in the figures)
        # into the run's own directory, not the user's ~/.cache
        env = {**os.environ, "SPARKPLANE_LOG_ARCHIVE": str(self.logs / "log-archive")}
        self.children[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=Path(__file__).parent.parent
        )

    def _start_children(self) -> None:
        exe = str(Path(sys.executable).parent / "sparkplane")
        sim = Path(__file__).with_name("simulate_drivers.py")
        kc = self.config.kubeconfig
        self._spawn("simulator", [sys.executable, str(sim), "--kubeconfig", kc, *self.namespaces])
        self._spawn("probe", [sys.executable, "-m", "benchmarks.watch_probe", "--kubeconfig", kc,
                              "--api", self.config.api, "--out", str(self.logs / "probe.json"),
                              *self.namespaces])  # fmt: skip
        watch = [a for ns in self.namespaces for a in ("-n", ns)]
        for i in range(self.config.instances):
            shard = (
                ["-l", f"{SHARD}={i}", "--name", f"bench-op-{i}"]
                if self.config.instances > 1
                else []
            )
            argv = [exe, "operator", "run", "--kubeconfig", kc, *watch, *shard,
                    "--workers", str(self.config.workers), "--lease-namespace", self.namespaces[0],
                    "--lease-name", f"bench-lock-{i}",
                    *([] if self.config.capacity else BEFORE)]  # fmt: skip
            self._spawn(f"operator-{i}", argv)
        deadline = time.monotonic() + 120
        for i in range(self.config.instances):
            while not self._holder(f"bench-lock-{i}"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"operator {i} never became leader (see {self.logs})")
                time.sleep(0.5)
        self.state_dir = Path(self.config.state_dir or Path(self.config.kubeconfig).parent)
        self.components = procstats.control_plane_pids(self.state_dir)
        self.cpu0 = self._cpu()
        self.api0 = procstats.apiserver_scrape(self.kube)

    def _holder(self, lease: str) -> str | None:
        got = self.kube.get_or_none("coordination.k8s.io/v1", "Lease", lease, self.namespaces[0])
        return ((got or {}).get("spec") or {}).get("holderIdentity")

    def _pids(self) -> dict[str, int]:
        pids = {name: proc.pid for name, proc in self.children.items()}
        return {**pids, **self.components, "benchmark": os.getpid()}

    def _cpu(self) -> dict[str, float]:
        return {name: procstats.cpu_seconds(pid) for name, pid in self._pids().items()}

    # -- observation ------------------------------------------------------------------------
    def _on_app(self, event: str, obj: dict[str, Any]) -> None:
        now = time.monotonic()
        meta = obj["metadata"]
        status = operator_status(obj, self.config.api)
        state = (status.get("currentState") or {}).get("currentStateSummary") or ""
        history = status.get("stateTransitionHistory") or {}
        seen = {(history[k] or {}).get("currentStateSummary") for k in history}
        with self.lock:
            t = self.apps.get((meta["namespace"], meta["name"]))
            if t is None:
                return
            t.state = state
            message = str((status.get("currentState") or {}).get("message") or "")
            t.held = t.held or message.startswith(WAITING)
            if t.requested is None and "DriverRequested" in seen:
                t.requested = now
            if t.status_started is None and seen & STARTED:
                t.status_started = now
            if t.seen_written is None and seen & STARTED:
                t.seen_written = time.time()  # the wall clock, to compare with server_written
            if t.server_written is None and seen & STARTED:
                # the API server's time of the status write that first carried it (its
                # managedFields; a later write already folded in moves it later, never earlier)
                t.server_written = max(
                    (_epoch(f.get("time")) or 0.0 for f in meta.get("managedFields") or []
                     if f.get("subresource") == "status"),
                    default=None,
                ) or None  # fmt: skip
            if t.server_started is None and seen & STARTED:
                t.server_started = min(
                    (_epoch((history[k] or {}).get("lastTransitionTime")) for k in history
                     if (history[k] or {}).get("currentStateSummary") in STARTED),
                    default=None,
                )  # fmt: skip
            if t.status_done is None and state in ENDED:
                t.status_done = now
            if t.released is None and state in TERMINAL:
                t.released = now
                t.history = [
                    str((history[k] or {}).get("currentStateSummary"))
                    for k in sorted(history, key=int)
                ]

    def _on_pod(self, event: str, pod: dict[str, Any]) -> None:
        now = time.monotonic()
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        app = labels.get("spark.operator/spark-app-name")
        if not app:
            return
        phase = (pod.get("status") or {}).get("phase")
        with self.lock:
            t = self.apps.get((meta["namespace"], app))
            if t is None:
                return
            if labels.get("spark-role") == "executor":
                t.executors.add(meta["name"])
                return
            t.driver_seen = t.driver_seen or now
            if (pod.get("spec") or {}).get("nodeName") and t.driver_bound is None:
                t.driver_bound = now
            if phase == "Running" and t.driver_running is None:
                t.driver_running = now
            if t.server_running is None:
                for status in (pod.get("status") or {}).get("containerStatuses") or []:
                    started = ((status.get("state") or {}).get("running") or {}).get("startedAt")
                    t.server_running = t.server_running or _epoch(started)
            if phase in ("Succeeded", "Failed") and t.driver_done is None:
                t.driver_done = now

    # -- the run ----------------------------------------------------------------------------
    def _create(self, key: tuple[str, str], shard: int) -> None:
        started = time.monotonic()
        try:
            self.kube.create(spark_app(key[1], self.config, shard), namespace=key[0])
        except KubeError:
            with self.lock:
                self.create_errors += 1
            return
        with self.lock:
            self.create_seconds.append(time.monotonic() - started)

    def submit_all(self) -> None:
        cfg = self.config
        interval = 60.0 / cfg.rate if cfg.rate > 0 else 0.0
        self.t0 = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            for i in range(cfg.apps):
                due = self.t0 + i * interval
                while (wait := due - time.monotonic()) > 0:
                    time.sleep(min(wait, 0.5))
                key = (self.namespaces[i % len(self.namespaces)], f"app-{i:05d}")
                with self.lock:
                    self.apps[key] = Times(submitted=time.monotonic())
                pool.submit(self._create, key, i % cfg.instances)
                if i and i % 1000 == 0:
                    self.progress()
        self.submitted_in = time.monotonic() - self.t0
        self.say(f"submitted {cfg.apps} in {self.submitted_in:.1f}s")

    def progress(self) -> None:
        with self.lock:
            times = list(self.apps.values())
        drivers = sum(1 for t in times if t.driver_seen)
        done = sum(1 for t in times if t.released)
        load = os.getloadavg()[0]
        self.loads.append(load)
        self.say(
            f"  t={time.monotonic() - self.t0:6.0f}s submitted={len(times)}"
            f" drivers={drivers} released={done} load={load:.1f}"
        )

    def wait_done(self) -> None:
        deadline = self.t0 + self.config.timeout
        last = 0.0
        while time.monotonic() < deadline:
            with self.lock:
                done = sum(1 for t in self.apps.values() if t.released)
            if done + self.create_errors >= self.config.apps:
                break
            if time.monotonic() - last > 10:
                self.progress()
                last = time.monotonic()
            time.sleep(0.5)
        self.elapsed = time.monotonic() - self.t0
        self.api1 = procstats.apiserver_scrape(self.kube)
        self.cpu1 = self._cpu()
        self._read_probe()

    def _read_probe(self) -> None:
        """Stop the idle watcher and take its arrival times (it writes them as it ends)."""
        import json

        probe = self.children.pop("probe")
        probe.terminate()
        try:
            probe.wait(20)
            seen: dict[str, float] = json.loads((self.logs / "probe.json").read_text())
        except (subprocess.TimeoutExpired, OSError, ValueError) as exc:
            self.say(f"the watch probe left no times ({exc}); see {self.logs}/probe.log")
            return
        with self.lock:
            for key, wall in seen.items():
                ns, _, name = key.partition("/")
                if (t := self.apps.get((ns, name))) is not None:
                    t.probe_written = wall

    # -- report -----------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        from benchmarks.kubeflow_report import build

        report = build(self)
        if not self.config.quiet:
            from benchmarks.kubeflow_report import render

            print(render(report), flush=True)
        return report

    def __exit__(self, *exc: object) -> None:
        for proc in self.children.values():
            proc.terminate()
        for proc in self.children.values():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for informer in self.informers:
            informer.stop()
        shutil.rmtree(self.logs / "log-archive", ignore_errors=True)
        for ns in self.namespaces:
            try:
                self.kube.delete("v1", "Namespace", ns)
            except NotFoundError:
                pass
        for node in self.nodes:
            try:
                self.kube.delete("v1", "Node", node)
            except NotFoundError:
                pass
        self._wait_gone()

    def _wait_gone(self, timeout: float = 600.0) -> None:
        """Wait until the namespaces are gone: deleting a run's thousands of pods loads the
        control plane for minutes, and a run started before that ends (the second of a pair)
        paid for the first one's clean-up (14.9 pod deletes per app instead of 6)."""
        deadline = time.monotonic() + timeout
        left = list(self.namespaces)
        while left and time.monotonic() < deadline:
            left = [ns for ns in left if self.kube.get_or_none("v1", "Namespace", ns)]
            if left:
                time.sleep(2.0)
        if left:
            self.say(f"namespaces still terminating after {timeout:.0f}s: {', '.join(left)}")


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def etcd_url(kubeconfig: str) -> str:
    """The dev cluster's etcd client URL (apiserver port + 1)."""
    import yaml

    server = yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]["server"]
    port = urlparse(server).port or 443
    return f"http://127.0.0.1:{port + 1}"
