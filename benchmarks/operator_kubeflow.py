"""Benchmark: the Kubeflow Spark Operator's published shape, on the dev cluster's KWOK nodes.

``--apps`` SparkApplications (default 6000), each a driver and ``--executors`` executors
(default 5; created by the driver SIMULATOR, owned by the driver, as a Spark driver would),
submitted at a fixed ``--rate`` (default 1000 apps/min) round-robin over ``--namespaces``
(default 3), each driver running ``--run-for`` seconds. The operator runs as ``--instances``
``sparkplane operator run`` processes with leader election (several: each its own shard, by
label selector and operator name, with its own Lease). Prints:

* apps/min end to end (overall, and steady: the middle 80% of releases);
* submission → driver pod lag (p50/p95/p99/max) and the share within 60 s;
* driver pod phase change → app status lag (p50/p95/p99/max);
* API-server request latency p50/p99 (its own histogram, long-running verbs excluded) and
  requests per app;
* CPU-seconds and peak RSS of the operator(s), the simulator and each control-plane component,
  and per app;
* etcd's database size at the end; failures (apps not Succeeded, missing executors).

    .venv/bin/python benchmarks/operator_kubeflow.py --kubeconfig K --apps 500   # smoke size
    .venv/bin/python benchmarks/operator_kubeflow.py --kubeconfig K              # full shape

``--driver-only`` (no executors, apps created as fast as possible with ``--rate 0``) is the
shape of issue 4's driver-only benchmark. :func:`run` is importable (the integration test runs
a small size and checks only correctness).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.kubeflow_run import BenchRun, Config

__all__ = ["Config", "run"]


def run(config: Config) -> dict[str, Any]:
    """Run the benchmark; returns the report (also printed unless ``quiet``)."""
    with BenchRun(config) as bench:
        bench.submit_all()
        bench.wait_done()
        return bench.report()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("SPARKPLANE_KUBECONFIG"))
    parser.add_argument("--apps", type=int, default=6000)
    parser.add_argument("--rate", type=float, default=1000.0, help="apps/min (0: at once)")
    parser.add_argument("--namespaces", type=int, default=3)
    parser.add_argument("--executors", type=int, default=5)
    parser.add_argument("--driver-only", action="store_true", help="--executors 0")
    parser.add_argument("--run-for", type=float, default=30.0, help="seconds each driver runs")
    parser.add_argument("--instances", type=int, default=1, help="operator shards")
    parser.add_argument("--workers", type=int, default=48, help="reconcile threads per operator")
    parser.add_argument("--nodes", type=int, default=20, help="fake nodes (300 pods each)")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--state-dir", help="dev cluster state dir (default: the kubeconfig's)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument(
        "--api",
        choices=("apache", "kubeflow"),
        default="apache",
        help="submit spark.apache.org/v1 or Kubeflow's sparkoperator.k8s.io/v1beta2 apps",
    )
    parser.add_argument(
        "--no-capacity-limit",
        action="store_true",
        help="the operator as before: no backpressure, no urgent lane",
    )
    args = parser.parse_args()
    if not args.kubeconfig:
        parser.error("--kubeconfig (or SPARKPLANE_KUBECONFIG) is required")
    config = Config(
        kubeconfig=args.kubeconfig,
        apps=args.apps,
        rate=args.rate,
        namespaces=args.namespaces,
        executors=0 if args.driver_only else args.executors,
        run_for=args.run_for,
        instances=args.instances,
        workers=args.workers,
        nodes=args.nodes,
        timeout=args.timeout,
        state_dir=args.state_dir,
        capacity=not args.no_capacity_limit,
        api=args.api,
    )
    print(f"config: {json.dumps(asdict(config))}", flush=True)
    started = time.monotonic()
    report = run(config)
    print(f"wall {time.monotonic() - started:.0f}s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
