"""Benchmark: the client tracker's cost per change, indexed caches vs a scan of every cached pod.

The ``Tracker`` (``usecases/tracker.py``) re-derives one app's state on each change. It finds
that app's pods (its driver by owner uid or app id, its executors, the driver's Events) through
the informers' indexes. Before the indexes it scanned every cached pod of the namespace for each
change: O(pods) per change, which a process tracking thousands of apps (the Airflow triggerer, a
service) pays on every pod update. This script fills a tracker's caches with ``--apps`` apps of
``--executors`` executors each (in memory: no cluster, nothing created) and times, side by side
in one run, the lookups of one change both ways, and a whole executor change through the
tracker. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/tracker_index.py [--apps 200 1000 5000] [--executors 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sparkplane.kube.informer import key_of
from sparkplane.usecases.tracker import BY_APP, BY_OWNER, Tracker
from sparkplane.vocab import APP_SELECTOR_LABEL, DRIVER_ROLE, EXECUTOR_ROLE, ROLE_LABEL

NS = "bench"


def _pod(name: str, role: str, app_id: str, owner: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": uid,
            "labels": {ROLE_LABEL: role, APP_SELECTOR_LABEL: app_id},
            "ownerReferences": [{"kind": "Pod", "name": owner, "uid": f"{owner}-uid"}],
        },
        "status": {"phase": "Running"},
    }


def _filled(apps: int, executors: int) -> Tracker:
    tracker = Tracker(kube=None, namespace=NS)  # type: ignore[arg-type]  # never started
    for a in range(apps):
        driver = f"app{a}-driver"
        pods = [_pod(driver, DRIVER_ROLE, f"spark-{a}", "x", f"{driver}-uid")]
        pods += [
            _pod(f"app{a}-exec-{e}", EXECUTOR_ROLE, f"spark-{a}", driver, f"app{a}-e{e}")
            for e in range(executors)
        ]
        with tracker.pods._lock:
            for pod in pods:
                tracker.pods._put(key_of(pod), pod)
    return tracker


def _per_call(fn: Any, rounds: int) -> float:
    start = time.perf_counter()
    for i in range(rounds):
        fn(i)
    return (time.perf_counter() - start) / rounds * 1e6


def measure(apps: int, executors: int, rounds: int) -> dict[str, float]:
    tracker = _filled(apps, executors)
    informer = tracker.pods

    def scan(i: int) -> None:  # what each change cost before the indexes
        app_id = f"spark-{i % apps}"
        informer.list(
            NS,
            lambda p: (
                p["metadata"]["labels"].get(ROLE_LABEL) == DRIVER_ROLE
                and p["metadata"]["labels"].get(APP_SELECTOR_LABEL) == app_id
            ),
        )
        informer.list(
            NS,
            lambda p: (
                p["metadata"]["labels"].get(ROLE_LABEL) == EXECUTOR_ROLE
                and p["metadata"]["labels"].get(APP_SELECTOR_LABEL) == app_id
            ),
        )
        uid = f"app{i % apps}-driver-uid"
        informer.list(
            NS, lambda p: any(r.get("uid") == uid for r in p["metadata"]["ownerReferences"])
        )

    def indexed(i: int) -> None:
        informer.by_index(BY_APP, f"{NS}/{DRIVER_ROLE}/spark-{i % apps}")
        informer.by_index(BY_APP, f"{NS}/{EXECUTOR_ROLE}/spark-{i % apps}")
        informer.by_index(BY_OWNER, f"app{i % apps}-driver-uid")

    def change(i: int) -> None:  # an executor's update, through the tracker
        tracker._on_change("MODIFIED", informer.get(NS, f"app{i % apps}-exec-0") or {})

    return {
        "pods": float(apps * (executors + 1)),
        "scan_us": _per_call(scan, rounds),
        "indexed_us": _per_call(indexed, rounds),
        "change_us": _per_call(change, rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apps", type=int, nargs="+", default=[200, 1000, 5000])
    parser.add_argument("--executors", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print(f"{'apps':>6} {'pods':>7} {'scan µs':>10} {'indexed µs':>11} {'change µs':>10}")
    for apps in args.apps:
        r = measure(apps, args.executors, args.rounds)
        print(
            f"{apps:>6} {int(r['pods']):>7} {r['scan_us']:>10.1f} {r['indexed_us']:>11.1f} "
            f"{r['change_us']:>10.1f}"
        )


if __name__ == "__main__":
    main()
