"""Benchmark: the operator under overload, without and with its backpressure, side by side.

Runs the Kubeflow-shape benchmark (:mod:`benchmarks.operator_kubeflow`: KWOK nodes, a driver and
``--executors`` simulated executors per app) at each offered ``--rates`` (apps/min; one above
the machine's floor, one below), once with the operator's backpressure off
(``--no-capacity-limit``: BEFORE) and once on (AFTER), on the same dev cluster, one after the
other, and prints per run: offered vs sustained apps/min, submission -> driver pod, admission
(``DriverRequested``) -> driver pod, driver phase -> app status lag, apps held for capacity, API
server latency, and the load average during the run (others share the machine). The floor is
the steady throughput the overloaded run without backpressure sustained.

    .venv/bin/python benchmarks/operator_overload.py --kubeconfig K --apps 1000 --rates 1000,250

Targets (issue 21 item 5): status lag p99 < 10 s at any rate, every admitted app's driver within
60 s of admission, throughput >= 90% of the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.kubeflow_run import Config
from benchmarks.operator_kubeflow import run


def row(label: str, r: dict[str, Any]) -> str:
    lag, adm, st = r["driver_lag_s"], r["admission_to_driver_s"], r["status_lag_s"]
    lo, hi = r["load_average_range"]
    return (
        f"{label:<26} {r['apps_per_min_steady']:>6.0f} {r['apps_per_min_end_to_end']:>6.0f}"
        f" | sub->drv p50 {lag['p50']:6.1f} p99 {lag['p99']:6.1f} max {lag['max']:6.1f}"
        f" | adm->drv p99 {adm['p99']:5.1f} max {adm['max']:5.1f} ({r['admitted_within_60s']:.0%})"
        f" | status p50 {st['p50']:5.2f} p99 {st['p99']:6.2f} max {st['max']:6.2f}"
        f" | held {r['apps_held_for_capacity']:>4} | api p99 {r['apiserver_latency_s']['p99']:.2f}s"
        f" | fail {r['failures']['not_succeeded']} | load {lo:.1f}-{hi:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("SPARKPLANE_KUBECONFIG"))
    parser.add_argument("--apps", type=int, default=1000)
    parser.add_argument("--rates", default="1000,250", help="offered apps/min, comma-separated")
    parser.add_argument("--executors", type=int, default=5)
    parser.add_argument("--run-for", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=48)
    parser.add_argument("--modes", default="off,on", help="backpressure off (before), on (after)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--api",
        choices=("apache", "kubeflow"),
        default="apache",
        help="submit spark.apache.org/v1 or Kubeflow's sparkoperator.k8s.io/v1beta2 apps",
    )
    parser.add_argument("--json", type=Path, help="also write the reports here")
    args = parser.parse_args()
    if not args.kubeconfig:
        parser.error("--kubeconfig (or SPARKPLANE_KUBECONFIG) is required")
    reports: dict[str, dict[str, Any]] = {}
    for rate in (float(r) for r in args.rates.split(",")):
        for mode in args.modes.split(","):
            label = f"{rate:.0f}/min backpressure {mode}"
            print(f"== {label}", flush=True)
            config = Config(
                kubeconfig=args.kubeconfig,
                apps=args.apps,
                rate=rate,
                executors=args.executors,
                run_for=args.run_for,
                workers=args.workers,
                timeout=args.timeout,
                capacity=mode == "on",
                api=args.api,
            )
            reports[label] = run(config)
            if args.json:
                args.json.write_text(json.dumps(reports, indent=2))
    print(f"\n{'run':<26} {'steady':>6} {'e2e':>6}   (apps/min; lags in seconds)")
    for label, report in reports.items():
        print(row(label, report))


if __name__ == "__main__":
    main()
