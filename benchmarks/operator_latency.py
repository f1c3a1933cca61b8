"""Where a SparkApplication's time goes from its creation to ``RunningHealthy`` (issue 27, item 6).

On the dev cluster's real node, the operator runs in-process with its shipped RBAC (as in the
real-node tests) and a real SparkPi (1 executor) is created ``--runs`` times. Two informers
(the SparkApplication and its driver pod) stamp each milestone with this process's monotonic
clock when its event arrives, so the split has sub-second resolution (Kubernetes timestamps have
one-second resolution):

- **operator: create -> DriverRequested** — the CR's event, the reconcile (render, the pod
  policy's dry-run admission, creating the ConfigMap, Service and driver pod) and the status
  write; sparkplane's.
- **API/scheduler: pod created -> scheduled**, **kubelet: scheduled -> container running**
  (sandbox, image present, JVM exec) — not sparkplane's.
- **pod Ready** (no readiness probe on a Spark driver: the container started).
- **operator: pod Ready -> RunningHealthy** — the pod event, the reconcile and the status write
  (DriverStarted, DriverReady, RunningHealthy in one write); sparkplane's.

Prints each run and the medians. Not a test: figures only.

    SPARKPLANE_REAL_TEST_STATE_DIR=... .venv/bin/python benchmarks/operator_latency.py \\
        --port-base 18063 --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests.integration.operator_helpers import running_operator
from tests.realnode.sparkapps import spec

from sparkplane.kube import Kube, connect
from sparkplane.kube.informer import Informer
from sparkplane.model.pods import condition
from sparkplane.operator.deploy.install import install_crds
from sparkplane.security.rbac import bodies, render
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.cluster import default_cache_dir

API = "spark.apache.org/v1"
STEPS = (
    ("operator: create -> DriverRequested", "created", "DriverRequested"),
    ("operator: DriverRequested seen -> pod seen", "DriverRequested", "pod"),
    ("scheduler: pod -> scheduled", "pod", "scheduled"),
    ("kubelet: scheduled -> running", "scheduled", "running"),
    ("pod running -> Ready", "running", "ready"),
    ("operator: Ready -> RunningHealthy", "ready", "RunningHealthy"),
    ("total: create -> RunningHealthy", "created", "RunningHealthy"),
)


class Stamps:
    """The first time each milestone was seen (monotonic seconds)."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.lock = threading.Lock()
        self.done = threading.Event()

    def mark(self, what: str) -> None:
        with self.lock:
            self.at.setdefault(what, time.monotonic())
        if what == "RunningHealthy":
            self.done.set()

    def on_app(self, event: str, cr: dict[str, Any]) -> None:
        history = ((cr.get("status") or {}).get("stateTransitionHistory")) or {}
        for entry in history.values():
            state = str((entry or {}).get("currentStateSummary"))
            if state in ("DriverRequested", "RunningHealthy"):
                self.mark(state)

    def on_pod(self, event: str, pod: dict[str, Any]) -> None:
        if event == "DELETED":
            return
        self.mark("pod")
        scheduled = condition(pod, "PodScheduled")
        if scheduled and scheduled.get("status") == "True":
            self.mark("scheduled")
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        if any((s.get("state") or {}).get("running") for s in statuses):
            self.mark("running")
        ready = condition(pod, "Ready")
        if ready and ready.get("status") == "True":
            self.mark("ready")


def one(kube: Kube, namespace: str, name: str) -> dict[str, float]:
    stamps = Stamps()
    apps = Informer(kube, API, "SparkApplication", namespace=namespace)
    drivers = Informer(kube, "v1", "Pod", namespace=namespace, label_selector="spark-role=driver")
    apps.add_handler(stamps.on_app)
    drivers.add_handler(stamps.on_pod)
    for informer in (apps, drivers):
        informer.start().wait_synced()
    try:
        body = spec(name, namespace, executors=1, args=["2"])
        stamps.mark("created")
        kube.create(body, namespace=namespace)
        if not stamps.done.wait(300):
            raise SystemExit(f"{name}: no RunningHealthy in 300 s: {stamps.at}")
        time.sleep(0.5)  # the pod events that raced the status
    finally:
        for informer in (apps, drivers):
            informer.stop()
    kube.delete(API, "SparkApplication", name, namespace)
    while kube.list("v1", "Pod", namespace, label_selector=f"spark-app-selector={name}-0"):
        time.sleep(0.5)
    return {label: stamps.at[b] - stamps.at[a] for label, a, b in STEPS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    state = os.environ.get("SPARKPLANE_REAL_TEST_STATE_DIR")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(state) if state else default_cache_dir() / "test-real-cluster",
    )
    parser.add_argument("--port-base", type=int, default=17463)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cluster = DevCluster(
        DevClusterSettings(
            state_dir=args.state_dir,
            port_base=args.port_base,
            nodes=1,
            real_node=True,
            start_timeout=300.0,
        )
    )
    cluster.up(progress=lambda m: print(f"• {m}", flush=True))
    kube = Kube(connect(kubeconfig=cluster.kubeconfig))
    namespace = f"bench-latency-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    while kube.get_or_none("v1", "ServiceAccount", "default", namespace) is None:
        time.sleep(0.2)
    for obj in bodies(render("driver", namespace, service_account="spark")):
        kube.create(obj)
    install_crds(kube)
    runs: list[dict[str, float]] = []
    try:
        with running_operator(kube, namespace, simulate=False):
            for i in range(args.runs):
                got = one(kube, namespace, f"lat-{i}")
                runs.append(got)
                print(f"run {i + 1}: " + ", ".join(f"{k} {v:.2f}s" for k, v in got.items()))
    finally:
        kube.delete("v1", "Namespace", namespace)
    print("\nmedian over", len(runs), "runs (load average", os.getloadavg()[0], "):")
    for label, _, _ in STEPS:
        print(f"  {label:45} {statistics.median(r[label] for r in runs):6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
