"""The Kubeflow-shape benchmark at a smoke size: it runs end to end and every app is right.

No timing is asserted (speed figures live in benchmarks/ and docs/benchmarks.md): 60 apps, a
driver and 5 simulated executors each, submitted at 600/min over 3 namespaces to two operator
shards (``sparkplane operator run`` processes with leader election, split by label selector),
must all end ``ResourceReleased`` after ``Succeeded``, with every executor created and no
failed create; and the report carries every figure the full run prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.operator_kubeflow import Config, run

pytestmark = pytest.mark.integration


def test_kubeflow_shape_smoke(kubeconfig: Path) -> None:
    config = Config(
        kubeconfig=str(kubeconfig),
        apps=60,
        rate=600,
        executors=5,
        run_for=6,
        instances=2,
        workers=8,
        nodes=2,
        timeout=240,
        quiet=True,
    )
    report = run(config)
    assert report["released"] == 60
    assert report["failures"] == {
        "create_errors": 0,
        "not_succeeded": 0,
        "ended_in": {},
        "missing_executors": 0,
    }
    assert report["driver_lag_s"]["n"] == 60
    assert report["status_lag_s"]["n"] == 120  # start and end of every driver
    # the idle watcher process (benchmarks/watch_probe.py) saw every app's started state too
    seen = report["status_write_to_watch_s"]["n"]
    assert seen == 60 and report["status_write_to_idle_watch_s"]["n"] == seen
    assert report["apiserver_requests_per_app_by_kind"]["POST pods"] >= 6  # driver + 5 executors
    for key in ("apiserver_latency_s", "cpu_ms_per_app", "peak_rss_mib", "etcd_db_bytes"):
        assert report[key], key
    assert report["cpu_s"]["operator-0"] > 0 and report["cpu_s"]["operator-1"] > 0
