"""Benchmark: operator throughput for driver-only SparkApplications created all at once.

Creates ``--apps`` (1000) SparkApplications in a fresh namespace as fast as the API server takes
them, with the operator running in this process (``--workers`` reconcile threads, watching only
that namespace). Each app is driver-only (``spark.executor.instances=0``) and its simulated
driver succeeds after ``--run-for`` (KWOK annotation). Prints the time until every driver pod
exists and until every app reaches ResourceReleased, as apps/min end to end. Adds ``--nodes``
fake nodes for the pods (deleted afterwards). Target (issue 4): >= 600 apps/min end to end
(the Apache operator reports ~310 apps/min, Kubeflow's ~130-155).

    .venv/bin/python benchmarks/operator_throughput.py \
        --kubeconfig ~/.cache/sparkplane/shared-cluster/kubeconfig --apps 1000
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube, connect
from sparkplane.kube.informer import Informer
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane_devcluster.components import node_manifest


def app(name: str, namespace: str, run_for: str) -> dict[str, Any]:
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "mainClass": "org.apache.spark.examples.SparkPi",
            "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
            "runtimeVersions": {"sparkVersion": "4.0.0"},
            "sparkConf": {
                "spark.executor.instances": "0",
                "spark.kubernetes.container.image": "apache/spark:4.0.0",
                "spark.kubernetes.driver.request.cores": "10m",
                "spark.driver.memory": "128m",
                "spark.driver.memoryOverhead": "64m",
                "spark.kubernetes.driver.annotation.sim.sparkplane.io/outcome": "Succeeded",
                "spark.kubernetes.driver.annotation.sim.sparkplane.io/run-for": run_for,
                "spark.kubernetes.driver.annotation.sim.sparkplane.io/executors": "0",
            },
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("SPARKPLANE_KUBECONFIG"))
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=48)
    parser.add_argument("--creators", type=int, default=16, help="threads creating the CRs")
    parser.add_argument("--run-for", default="1s")
    parser.add_argument("--nodes", type=int, default=4, help="extra fake nodes (250 pods each)")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()

    kube = Kube(connect(kubeconfig=args.kubeconfig))
    install_crds(kube)
    tag = uuid.uuid4().hex[:6]
    namespace = f"sp-bench-{tag}"
    nodes = [f"sp-bench-{tag}-node-{i}" for i in range(args.nodes)]
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for node in nodes:
        kube.create(node_manifest(node, "256", "1024Gi", 250))

    drivers: dict[str, float] = {}
    released: dict[str, float] = {}
    lock = threading.Lock()

    finished: dict[str, float] = {}

    def on_pod(event: str, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        with lock:
            drivers.setdefault(name, time.monotonic())
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                finished.setdefault(name, time.monotonic())

    def on_app(event: str, obj: dict[str, Any]) -> None:
        state = ((obj.get("status") or {}).get("currentState") or {}).get("currentStateSummary")
        if state == "ResourceReleased":
            with lock:
                released.setdefault(obj["metadata"]["name"], time.monotonic())

    pods = Informer(kube, "v1", "Pod", namespace=namespace, label_selector="spark-role=driver")
    apps = Informer(kube, "spark.apache.org/v1", "SparkApplication", namespace=namespace)
    pods.add_handler(on_pod)
    apps.add_handler(on_app)
    pods.start().wait_synced()
    apps.start().wait_synced()
    settings = OperatorSettings(
        namespaces=(namespace,), workers=args.workers, leader_election=False, event_workers=2
    )
    operator = Operator(kube, settings).start()
    try:
        start = time.monotonic()
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        with ThreadPoolExecutor(args.creators) as pool:
            list(
                pool.map(
                    lambda i: kube.create(app(f"app-{i:04d}", namespace, args.run_for)),
                    range(args.apps),
                )
            )
        created = time.monotonic() - start
        print(f"created {args.apps} SparkApplications in {created:.1f}s", flush=True)
        deadline = start + args.timeout
        last = -1
        while time.monotonic() < deadline:
            with lock:
                done, seen = len(released), len(drivers)
            if done != last:
                print(f"  t={time.monotonic() - start:6.1f}s drivers={seen} released={done}")
                last = done
            if done >= args.apps:
                break
            time.sleep(2)
        with lock:
            driver_times = sorted(t - start for t in drivers.values())
            release_times = sorted(t - start for t in released.values())
            finish_times = sorted(t - start for t in finished.values())
        all_drivers = driver_times[-1] if len(driver_times) >= args.apps else float("nan")
        all_released = release_times[-1] if len(release_times) >= args.apps else float("nan")
        print(f"every driver exists after     {all_drivers:.1f}s")
        if len(finish_times) >= args.apps:  # KWOK's pace: when the simulated drivers ended
            print(f"every driver pod Succeeded at {finish_times[-1]:.1f}s")
        print(f"every app ResourceReleased at {all_released:.1f}s")
        if release_times:
            print(f"median app released after     {statistics.median(release_times):.1f}s")
        print(f"throughput end to end: {args.apps / all_released * 60:.0f} apps/min")
        print(f"driver creation rate: {args.apps / all_drivers * 60:.0f} drivers/min")
        events = operator.events
        print(
            f"events posted {events.posted}, still queued {events.pending}, failed {events.failed}"
        )
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        used = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        wall = time.monotonic() - start
        print(f"this process (operator + creators): {used:.0f} CPU-s in {wall:.0f}s wall")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    finally:
        operator.stop()
        pods.stop()
        apps.stop()
        try:
            kube.delete("v1", "Namespace", namespace)
        except NotFoundError:
            pass
        for node in nodes:
            try:
                kube.delete("v1", "Node", node)
            except NotFoundError:
                pass


if __name__ == "__main__":
    main()
