"""Benchmark: track many applications with one shared cache (issue 3).

Submits N native apps (default 500) to the dev cluster, starts one ``Tracker`` for their
namespace and reports: watch connections used, memory of the tracking process (RSS delta and
Python heap), time to sync, and the delay from a pod change (the driver deleted by a kill) to
the subscriber's callback, over K samples. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/track_apps.py [--apps 500] [--samples 50] [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import tracemalloc
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from sparkplane.kube import Kube, connect
from sparkplane.model.apps import App
from sparkplane.model.phase import Reason
from sparkplane.spec import load_manifest
from sparkplane.usecases.create import submit_native
from sparkplane.usecases.tracker import Tracker
from sparkplane_devcluster import DevCluster

ROOT = Path(__file__).parents[1]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=500)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--kubeconfig", default=None)
    args = parser.parse_args()
    kubeconfig = args.kubeconfig or str(DevCluster().up(progress=print))
    kube = Kube(connect(kubeconfig=kubeconfig))
    ns = f"bench-track-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    while kube.get_or_none("v1", "ServiceAccount", "default", ns) is None:
        time.sleep(0.2)
    doc = yaml.safe_load((ROOT / "examples" / "spark-pi.yaml").read_text())
    doc["metadata"]["namespace"] = ns
    doc["spec"].pop("sparkUI", None)
    doc["spec"]["driver"] = {"cores": 1, "coreRequest": "10m", "memory": "512m"}
    ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann["sim.sparkplane.io/run-for"] = "1h"
    app = load_manifest(doc)
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            submitted = list(pool.map(lambda _: submit_native(kube, app), range(args.apps)))
        print(f"submitted {len(submitted)} apps in {time.monotonic() - started:.1f}s")

        tracemalloc.start()
        rss_before = rss_mib()
        started = time.monotonic()
        tracker = Tracker(kube, ns).start(timeout=120)
        while len(tracker.apps()) < args.apps:
            time.sleep(0.1)
        sync = time.monotonic() - started
        heap = tracemalloc.get_traced_memory()[0] / 2**20
        rss_after = rss_mib()
        print(
            f"tracking {len(tracker.apps())} apps with {tracker.watches} watch connections; "
            f"synced in {sync:.2f}s"
        )
        print(
            f"memory: RSS +{rss_after - rss_before:.1f} MiB (process {rss_after:.0f} MiB), "
            f"Python heap of the cache {heap:.1f} MiB "
            f"({heap * 1024 / args.apps:.1f} KiB per app)"
        )

        delays: list[float] = []
        seen = threading.Event()
        waiting: dict[str, float] = {}

        def on_change(a: App) -> None:
            if a.name in waiting and a.state.reason == Reason.KILLED:
                delays.append(time.monotonic() - waiting.pop(a.name))
                seen.set()

        tracker.subscribe(on_change)
        for s in submitted[: args.samples]:
            seen.clear()
            waiting[s.name] = time.monotonic()
            kube.delete("v1", "Pod", s.driver_pod, ns, grace_period_seconds=0)
            seen.wait(10)
        delays.sort()
        if delays:
            p95 = delays[int(0.95 * (len(delays) - 1))]
            print(
                f"pod change -> callback over {len(delays)} samples: "
                f"p50 {statistics.median(delays) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
                f"max {delays[-1] * 1000:.0f} ms"
            )
        tracker.stop()
    finally:
        kube.delete("v1", "Namespace", ns)


if __name__ == "__main__":
    main()
