"""Benchmark: native submission latency and throughput, against spark-submit and a bare client.

In one run, on the same dev cluster, the same SparkPi app (tiny requests; a simulated driver
that runs for an hour, so KWOK does not churn during the measurement) is submitted three ways,
each batch into its own fresh namespace (deleted once its pods run, before the next batch):

- **sparkplane**: ``from_submit_args`` + ``submit_native``; ``--sequential`` (20) apps one at a
  time, the same at spark-submit's parallelism, then ``--apps`` (200) at once from as many
  threads (latency under load, and throughput). API requests are counted by wrapping
  ``Kube.request``.
- **bare client**: the same objects (pre-rendered, so no validation or rendering) created with
  plain ``kubernetes`` client calls and no response models: pod, then Service and ConfigMap
  concurrently with an ownerReference to the pod's uid. The floor for the same API work.
- **spark-submit**: the real spark-submit 4.0.1 (pyspark wheel, Java 17), ``--spark-submit-apps``
  (20) processes, ``--spark-submit-parallel`` (2) at a time: per-process latency and apps/min.

The sparkplane and bare batches run ``--rounds`` (3) times, alternating which goes first; wall
times are the median round. CPU used by this process and by the local control-plane processes
during the bursts shows what bounds them. Targets (issue 6, 2-core machine): >= 30x lower
latency per app than spark-submit, >= 1000 apps/min, within 2x of the bare floor. Extra fake
nodes give the pods room and are removed at the end.

    .venv/bin/python benchmarks/submit_throughput.py \
        --kubeconfig ~/.cache/sparkplane/shared-cluster/kubeconfig

Without ``--kubeconfig`` (or ``SPARKPLANE_KUBECONFIG``) it brings up or reuses the dev cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes.client as k8s
from kubernetes.config import new_client_from_config

from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube, connect
from sparkplane.kube.config import POOL_SIZE
from sparkplane.spec import SparkApp, from_submit_args
from sparkplane.usecases.create import SubmitOptions, render_native, submit_native
from sparkplane_devcluster import DevCluster
from sparkplane_devcluster.components import node_manifest

Obj = dict[str, Any]
IMAGE = "apache/spark:4.0.1"


def app_argv(namespace: str) -> list[str]:
    """The one app every path submits: SparkPi, small enough for 200+ drivers (no executors
    start: the simulated driver never asks for them)."""
    confs = {
        "spark.kubernetes.container.image": IMAGE,
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.submission.waitAppCompletion": "false",
        "spark.executor.instances": "1",  # spark-submit refuses 0
        "spark.kubernetes.driver.request.cores": "10m",
        "spark.driver.memory": "128m",
        "spark.driver.memoryOverhead": "64m",
        "spark.kubernetes.driver.annotation.sim.sparkplane.io/run-for": "1h",
    }
    conf_args = [arg for k, v in confs.items() for arg in ("--conf", f"{k}={v}")]
    return [
        "--name",
        "bench-pi",
        "--class",
        "org.apache.spark.examples.SparkPi",
        *conf_args,
        "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar",
        "100",
    ]


@dataclass
class Result:
    """Latencies of one way of submitting, the wall time of the batch, and requests made."""

    label: str
    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0
    requests: int = 0
    cpu: float = 0.0  # CPU seconds this process spent in the batch (client-side cost)
    by_verb: dict[str, int] = field(default_factory=dict)
    server_cpu: dict[str, float] = field(default_factory=dict)  # control-plane CPU seconds
    rounds: int = 1  # batches merged into this result; ``wall`` is their median
    failures: list[str] = field(default_factory=list)

    @property
    def apps(self) -> int:
        return len(self.latencies)

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def per_min(self) -> float:
        return 60 * self.apps / self.rounds / self.wall if self.wall else 0.0

    def line(self) -> str:
        if not self.latencies:
            return f"{self.label:<30} no successful submissions; {len(self.failures)} failures"
        reqs = f"{self.requests / self.apps:5.2f}" if self.requests else "    -"
        count = f"{self.apps // self.rounds}x{self.rounds}" if self.rounds > 1 else str(self.apps)
        return (
            f"{self.label:<30} {count:>6} {1000 * self.pct(0.5):>9.1f} "
            f"{1000 * self.pct(0.95):>9.1f} {1000 * statistics.fmean(self.latencies):>9.1f} "
            f"{self.wall:>7.2f} {self.per_min:>9.0f} {reqs} "
            f"{1000 * self.cpu / self.apps:>8.1f}  fail={len(self.failures)}"
        )


def merge(results: list[Result]) -> Result:
    """Rounds of the same batch as one result: all latencies, the median wall time."""
    out = Result(results[0].label, rounds=len(results))
    out.wall = statistics.median(r.wall for r in results)
    for r in results:
        out.latencies += r.latencies
        out.failures += r.failures
        out.requests += r.requests
        out.cpu += r.cpu
        for key, value in r.by_verb.items():
            out.by_verb[key] = out.by_verb.get(key, 0) + value
        for key, sec in r.server_cpu.items():
            out.server_cpu[key] = out.server_cpu.get(key, 0.0) + sec
    return out


class ControlPlane:
    """CPU time of the local control-plane processes (those whose command line names the
    kubeconfig's directory, as the dev cluster's do); empty for a remote cluster. Linux only."""

    def __init__(self, kubeconfig: str) -> None:
        marker = str(Path(kubeconfig).resolve().parent)
        self.pids: dict[int, str] = {}
        for entry in Path("/proc").glob("[0-9]*"):
            if entry.name == str(os.getpid()):
                continue
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if args and args[0] and any(marker.encode() in a for a in args[1:]):
                self.pids[int(entry.name)] = Path(args[0].decode()).name
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, name in self.pids.items():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / self.tick
        return out


def run_batch(label: str, jobs: list[Callable[[], None]], parallel: int) -> Result:
    """Run ``jobs`` with ``parallel`` threads, all released at once; time each and the batch."""
    result = Result(label)
    lock = threading.Lock()
    gate = threading.Barrier(min(parallel, len(jobs)) or 1)

    def one(job: Callable[[], None], first_wave: bool) -> None:
        if first_wave:
            gate.wait()
        start = time.perf_counter()
        try:
            job()
        except Exception as exc:  # reported, not fatal: the figures say how many failed
            with lock:
                result.failures.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            return
        elapsed = time.perf_counter() - start
        with lock:
            result.latencies.append(elapsed)

    begin, cpu = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(one, job, i < parallel) for i, job in enumerate(jobs)]
        for fut in futures:
            fut.result()
    result.wall = time.perf_counter() - begin
    result.cpu = time.process_time() - cpu
    return result


class Counting:
    """Counts the API requests a :class:`Kube` makes (by wrapping ``Kube.request``)."""

    def __init__(self, kube: Kube) -> None:
        self.count = 0
        self.by_verb: dict[str, int] = {}
        self._lock = threading.Lock()
        original = kube.request

        def counted(method: str, path: str, **kwargs: Any) -> Any:
            with self._lock:
                self.count += 1
                key = f"{method} {path.rsplit('/', 1)[-1] if method == 'POST' else path}"
                self.by_verb[key] = self.by_verb.get(key, 0) + 1
            return original(method, path, **kwargs)

        kube.request = counted  # type: ignore[method-assign]

    def reset(self) -> None:
        with self._lock:
            self.count = 0
            self.by_verb = {}


# -- the three ways ----------------------------------------------------------------------------
def sparkplane_jobs(kube: Kube, namespace: str, count: int) -> list[Callable[[], None]]:
    argv = app_argv(namespace)

    def job() -> None:
        submit_native(kube, from_submit_args(argv))

    return [job] * count


class Bare:
    """Plain ``kubernetes`` client calls creating pre-rendered objects (the floor)."""

    def __init__(self, kubeconfig: str | None) -> None:
        cfg = k8s.Configuration()
        cfg.connection_pool_maxsize = POOL_SIZE  # as sparkplane; must be set before the client
        self.api = new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=cfg
        )
        self.core: Any = k8s.CoreV1Api(self.api)  # takes dict bodies at run time
        # Dependents are created concurrently, as sparkplane does: the floor is 2 round trips.
        self.pool = ThreadPoolExecutor(max_workers=32)

    def job(self, rendered: tuple[Obj, list[Obj]], namespace: str) -> Callable[[], None]:
        pod, dependents = rendered

        def create() -> None:
            created = json.loads(_body(self.core.create_namespaced_pod, namespace, pod))
            ref = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": created["metadata"]["name"],
                "uid": created["metadata"]["uid"],
                "controller": True,
            }
            futures = []
            for obj in dependents:
                body = dict(obj, metadata=dict(obj["metadata"], ownerReferences=[ref]))
                create_one = (
                    self.core.create_namespaced_service
                    if obj["kind"] == "Service"
                    else self.core.create_namespaced_config_map
                )
                futures.append(self.pool.submit(_body, create_one, namespace, body))
            for fut in futures:
                fut.result()

        return create


def _body(call: Callable[..., Any], namespace: str, body: Obj) -> bytes:
    """Call without response models; read the body and give the connection back to the pool."""
    resp = call(namespace, body, _preload_content=False)
    data: bytes = resp.data
    resp.release_conn()
    return data


def pre_render(app: SparkApp, server: str, count: int) -> list[tuple[Obj, list[Obj]]]:
    out = []
    for _ in range(count):
        rendered = render_native(app, server, SubmitOptions())
        out.append((rendered.driver_pod, rendered.resources))
    return out


def spark_submit_jobs(
    server: str, kubeconfig: str, namespace: str, count: int
) -> list[Callable[[], None]]:
    """The real spark-submit from the pyspark wheel; fabric8 authenticates via KUBECONFIG."""
    import pyspark

    home = Path(pyspark.__file__).parent
    java = shutil.which("java")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_USER", "HADOOP_USER_NAME")}
    env.update(KUBECONFIG=kubeconfig, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1")
    if "JAVA_HOME" not in env and java:
        env["JAVA_HOME"] = str(Path(java).resolve().parents[1])
    command = [
        str(home / "bin" / "spark-submit"),
        "--master",
        f"k8s://{server}",
        "--deploy-mode",
        "cluster",
        *app_argv(namespace),
    ]

    def job() -> None:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or "Deployed Spark application" not in proc.stderr + proc.stdout:
            raise RuntimeError(f"spark-submit exit {proc.returncode}: {proc.stderr[-500:]}")

    return [job] * count


# -- cluster set-up ----------------------------------------------------------------------------
def new_namespace(kube: Kube, tag: str, what: str) -> str:
    name = f"sp-subbench-{tag}-{what}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while kube.get_or_none("v1", "ServiceAccount", "default", name) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"namespace {name}: no default service account after 30s")
        time.sleep(0.1)
    return name


def clean_up(kube: Kube, namespaces: list[str], nodes: list[str]) -> None:
    for ns in namespaces:
        try:
            kube.delete("v1", "Namespace", ns)
        except NotFoundError:
            pass
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and any(
        kube.get_or_none("v1", "Namespace", ns) for ns in namespaces
    ):
        time.sleep(1)
    for node in nodes:
        try:
            kube.delete("v1", "Node", node)
        except NotFoundError:
            pass


def kubeconfig_path(given: str | None) -> str:
    if given:
        return given
    print("no --kubeconfig or SPARKPLANE_KUBECONFIG: bringing up the dev cluster", flush=True)
    return str(DevCluster().up(progress=lambda msg: print(f"[dev-cluster] {msg}", flush=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("SPARKPLANE_KUBECONFIG"))
    parser.add_argument("--apps", type=int, default=200, help="concurrent native submissions")
    parser.add_argument("--sequential", type=int, default=20, help="native, one at a time")
    parser.add_argument("--spark-submit-apps", type=int, default=20)
    parser.add_argument("--spark-submit-parallel", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=2, help="extra fake nodes (250 pods each)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of the sparkplane/bare batches"
    )
    parser.add_argument("--skip-spark-submit", action="store_true")
    args = parser.parse_args()

    kubeconfig = kubeconfig_path(args.kubeconfig)
    kube = Kube(connect(kubeconfig=kubeconfig))
    counter = Counting(kube)
    server = kube.api.configuration.host
    bare = Bare(kubeconfig)
    plane = ControlPlane(kubeconfig)
    tag = uuid.uuid4().hex[:6]
    nodes = [f"sp-subbench-{tag}-node-{i}" for i in range(args.nodes)]
    namespaces: list[str] = []

    def phase(key: str, label: str, count: int, parallel: int, native: bool) -> Result:
        """One batch in a fresh namespace; then wait for its pods to run, and delete it."""
        ns = new_namespace(kube, tag, key)
        namespaces.append(ns)
        if native:
            jobs = sparkplane_jobs(kube, ns, count)
        else:
            app = from_submit_args(app_argv(ns))
            jobs = [bare.job(r, ns) for r in pre_render(app, server, count)]
        counter.reset()
        before = plane.cpu()
        result = run_batch(label, jobs, parallel)
        after = plane.cpu()
        result.server_cpu = {k: after[k] - before.get(k, 0.0) for k in after}
        result.requests = counter.count if native else 3 * result.apps
        result.by_verb = dict(counter.by_verb) if native else {}
        settle(kube, ns, result.apps)
        clean_up(kube, [ns], [])  # so that no phase runs beside another's clean-up
        return result

    same = args.spark_submit_parallel
    n, burst = args.sequential, args.apps
    plan = [
        ("seq", "sparkplane, one at a time", n, 1, True),
        ("bare-seq", "bare client, one at a time", n, 1, False),
        ("par", f"sparkplane, {same} at a time", n, same, True),
        ("bare-par", f"bare client, {same} at a time", n, same, False),
        ("burst", f"sparkplane, {burst} at once", burst, burst, True),
        ("bare-burst", f"bare client, {burst} at once", burst, burst, False),
    ]
    try:
        for node in nodes:
            kube.create(node_manifest(node, "256", "1024Gi", 250))
        # Warm-up: discovery, TLS connections, imports on both clients.
        phase("warm", "warm-up", 8, 8, native=True)
        phase("warm-bare", "warm-up", 8, 8, native=False)
        rounds: dict[str, list[Result]] = {}
        for rnd in range(args.rounds):
            # Alternate which of each pair goes first, so order effects cancel out.
            swapped = [step for i in range(0, len(plan), 2) for step in plan[i : i + 2][::-1]]
            order = plan if rnd % 2 == 0 else swapped
            for key, label, count, parallel, native in order:
                print(f"round {rnd + 1}: {label}", flush=True)
                rounds.setdefault(key, []).append(
                    phase(f"{key}-{rnd}", label, count, parallel, native)
                )
        results = {key: merge(rounds[key]) for key, *_ in plan}
        if not args.skip_spark_submit:
            ns = new_namespace(kube, tag, "spark-submit")
            namespaces.append(ns)
            jobs = spark_submit_jobs(server, kubeconfig, ns, args.spark_submit_apps)
            label = f"spark-submit, {same} at a time"
            results["spark"] = run_batch(label, jobs, same)
        report(results)
    finally:
        print("cleaning up namespaces and fake nodes...", flush=True)
        clean_up(kube, namespaces, nodes)


def settle(kube: Kube, namespace: str, expected: int, timeout: float = 180) -> None:
    """Wait until ``expected`` pods run, so one phase's pod start-up does not load the next."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = kube.list("v1", "Pod", namespace)
        if sum(p.get("status", {}).get("phase") == "Running" for p in pods) >= expected:
            return
        time.sleep(0.5)
    print(f"warning: pods in {namespace} still starting after {timeout}s", flush=True)


def report(results: dict[str, Result]) -> None:
    print(f"\ncores: {os.cpu_count()}  (wall s: median round; cpu ms: this process's CPU per app)")
    print(
        f"{'way':<30} {'apps':>6} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9} "
        f"{'wall s':>7} {'apps/min':>9} req/app {'cpu ms':>8}"
    )
    for result in results.values():
        print(result.line())
        for failure in result.failures[:3]:
            print(f"    failure: {failure}")
    burst_verbs = {k: v / results["burst"].apps for k, v in results["burst"].by_verb.items()}
    print(f"\nsparkplane requests per app in the burst: {burst_verbs}")
    for key in ("burst", "bare-burst"):
        res = results[key]
        if res.server_cpu and res.apps:
            used = {k: round(1000 * v / res.apps, 1) for k, v in sorted(res.server_cpu.items())}
            total = (sum(res.server_cpu.values()) + res.cpu) / res.rounds
            client = 1000 * res.cpu / res.apps
            print(
                f"{res.label}: CPU ms per app by process {used}, client {client:.1f}; "
                f"in all {total:.1f} CPU-s per batch of the {res.wall * (os.cpu_count() or 1):.1f}"
                " the cores had"
            )
    seq, par, burst = results["seq"], results["par"], results["burst"]
    print("\ntargets:")
    spark = results.get("spark")
    if spark and spark.latencies:
        p50 = spark.pct(0.5)
        print(
            f"  latency per app vs spark-submit (p50): {p50 / seq.pct(0.5):.0f}x lower one at "
            f"a time, {p50 / par.pct(0.5):.0f}x lower at spark-submit's parallelism, "
            f"{p50 / burst.pct(0.5):.1f}x lower with {burst.apps // burst.rounds} at once"
            "  (target >= 30x)"
        )
        print(f"  throughput vs spark-submit: {burst.per_min / spark.per_min:.0f}x")
    print(f"  throughput: {burst.per_min:.0f} apps/min  (target >= 1000)")
    ratios = [
        f"{name} {results[key].pct(0.5) / results['bare-' + key].pct(0.5):.2f}x"
        for key, name in (("seq", "one at a time"), ("par", "parallel"), ("burst", "burst"))
    ]
    wall = burst.wall / results["bare-burst"].wall
    print(
        f"  vs bare floor: p50 latency {', '.join(ratios)}; burst wall time {wall:.2f}x"
        "  (target <= 2x)"
    )


if __name__ == "__main__":
    main()
