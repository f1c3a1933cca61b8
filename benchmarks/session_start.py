"""Benchmark: ``SparkPlane.session()`` to the first query's result on a real node.

Each run starts a session (1 executor, 200m cores, 512m/768m), records when the driver runs,
when the Spark Connect server serves and when ``spark.range(1000).count()`` returns, then
leaves the block (the server is deleted). Medians over ``--runs`` (default 2). The namespace's
service account ``--service-account`` must hold the driver role (``sparkplane rbac driver``).

    .venv/bin/python benchmarks/session_start.py --kubeconfig /tmp/sp/kubeconfig -n spark-jobs

Not measured here (not this round): starting the same server by hand (submit + kubectl
port-forward) and the Kubeflow SDK's ``connect()``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from sparkplane import SparkPlane
from sparkplane.version import SPARK_IMAGE


def one_run(sp: SparkPlane, service_account: str) -> dict[str, float]:
    marks: dict[str, float] = {}
    start = time.monotonic()

    def progress(message: str) -> None:
        key = "running" if message.endswith(": Running") else message
        marks.setdefault(key, time.monotonic() - start)

    with sp.session(
        image=SPARK_IMAGE,
        executors=1,
        driver_memory="768m",
        executor_memory="512m",
        driver_cores="200m",
        executor_cores="200m",
        service_account=service_account,
        on_progress=progress,
    ) as spark:
        marks["ready"] = time.monotonic() - start
        assert spark.range(1000).count() == 1000
        marks["first result"] = time.monotonic() - start
    marks["deleted"] = time.monotonic() - start
    return {k: marks[k] for k in ("running", "serving", "ready", "first result", "deleted")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--service-account", default="default")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with SparkPlane.connect(kubeconfig=args.kubeconfig, namespace=args.namespace) as sp:
        runs = [one_run(sp, args.service_account) for _ in range(args.runs)]
    for key in runs[0]:
        values = [r[key] for r in runs]
        print(f"{key:>13}: median {statistics.median(values):6.1f}s  runs {values}")


if __name__ == "__main__":
    main()
