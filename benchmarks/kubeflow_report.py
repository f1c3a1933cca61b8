"""The figures of one Kubeflow-shape run, from what :class:`BenchRun` observed.

``build`` turns the per-app timings, the two API-server scrapes and the CPU readings into a
plain dict (JSON-able); ``render`` prints it as the lines docs/benchmarks.md quotes.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Any

from benchmarks import procstats

if TYPE_CHECKING:
    from collections.abc import Iterable

    from benchmarks.kubeflow_run import BenchRun, Times


_CONFIG_KEYS = (
    "apps", "rate", "namespaces", "executors", "run_for", "instances", "workers", "capacity",
)  # fmt: skip


def _last_state(history: list[str]) -> str:
    """The state an app ended in: the last one before ``ResourceReleased`` (or the last)."""
    kept = [h for h in history if h != "ResourceReleased"]
    return kept[-1] if kept else "never seen"


def _between(times: Iterable[Times], start: str, end: str, *, clamp: bool = False) -> list[float]:
    """``end - start`` (two ``Times`` fields) for every app that has both; ``clamp``: not below 0
    (two clocks or two watches can order the same moment either way)."""
    out = []
    for t in times:
        a, b = getattr(t, start), getattr(t, end)
        if a is not None and b is not None:
            out.append(max(b - a, 0.0) if clamp else b - a)
    return out


def build(bench: BenchRun) -> dict[str, Any]:
    from benchmarks.kubeflow_run import etcd_url, summary

    cfg = bench.config
    with bench.lock:
        times = list(bench.apps.values())
    n = len(times)
    released = sorted(t.released - bench.t0 for t in times if t.released is not None)
    driver_lag = [t.driver_seen - t.submitted for t in times if t.driver_seen is not None]
    admitted_lag = _between(times, "requested", "driver_seen", clamp=True)
    started_lag = _between(times, "driver_running", "status_started", clamp=True)
    ended_lag = _between(times, "driver_done", "status_done", clamp=True)
    status_lag = started_lag + ended_lag
    server_started_lag = _between(times, "server_running", "server_started", clamp=True)
    delivery_lag = _between(times, "server_written", "seen_written")
    probe_lag = _between(times, "server_written", "probe_written")
    probe_to_bench = _between(times, "probe_written", "seen_written")
    server_written_lag = _between(times, "server_running", "server_written", clamp=True)
    scheduling = _between(times, "driver_seen", "driver_bound")
    starting = _between(times, "driver_bound", "driver_running")
    releasing = _between(times, "driver_done", "released")
    not_succeeded = [t for t in times if t.released is None or "Succeeded" not in t.history]
    short = [t for t in times if t.released is not None and len(t.executors) < cfg.executors]
    overall = n / released[-1] * 60 if len(released) == n and released else float("nan")
    steady = float("nan")
    if len(released) >= 10:
        lo, hi = released[len(released) // 10], released[len(released) * 9 // 10]
        steady = (len(released) * 8 // 10) / (hi - lo) * 60 if hi > lo else float("nan")
    (b0, c0, _, r0), (b1, c1, g1, r1) = bench.api0, bench.api1
    per_app = {k: (v - r0.get(k, 0.0)) / max(n, 1) for k, v in r1.items()}
    top_requests = dict(sorted(per_app.items(), key=lambda kv: -kv[1])[:12])
    cpu = {name: bench.cpu1.get(name, 0.0) - bench.cpu0.get(name, 0.0) for name in bench.cpu1}
    operators = [k for k in cpu if k.startswith("operator-")]
    memory = {name: procstats.memory_mib(pid)[1] for name, pid in bench._pids().items()}
    control = sum(cpu.get(c, 0.0) for c in procstats.COMPONENTS)
    return {
        "config": {k: getattr(cfg, k) for k in _CONFIG_KEYS},
        "submitted_in_s": bench.submitted_in,
        "create_p50_s": summary(bench.create_seconds)["p50"],
        "elapsed_s": bench.elapsed,
        "released": len(released),
        "apps_per_min_end_to_end": overall,
        "apps_per_min_steady": steady,
        "driver_lag_s": summary(driver_lag),
        "drivers_within_60s": sum(1 for v in driver_lag if v <= 60) / max(n, 1),
        "admission_to_driver_s": summary(admitted_lag),
        "admitted_within_60s": sum(1 for v in admitted_lag if v <= 60) / max(len(admitted_lag), 1),
        "apps_held_for_capacity": sum(1 for t in times if t.held),
        "status_lag_s": summary(status_lag),
        "status_lag_started_s": summary(started_lag),
        "status_lag_ended_s": summary(ended_lag),
        "status_lag_started_server_s": summary(server_started_lag),
        "status_lag_started_written_s": summary(server_written_lag),
        "status_write_to_watch_s": summary(delivery_lag),
        "status_write_to_idle_watch_s": summary(probe_lag),
        "idle_watch_to_watch_s": summary(probe_to_bench),
        "driver_created_to_bound_s": summary(scheduling),
        "driver_bound_to_running_s": summary(starting),
        "driver_done_to_released_s": summary(releasing),
        "apiserver_latency_s": {
            "p50": procstats.quantile(b0, b1, 0.50),
            "p99": procstats.quantile(b0, b1, 0.99),
        },
        "apiserver_requests": c1 - c0,
        "apiserver_requests_per_app": (c1 - c0) / max(n, 1),
        "apiserver_requests_per_app_by_kind": top_requests,
        "cpu_s": cpu,
        "cpu_ms_per_app": {
            "operator": 1000 * sum(cpu[k] for k in operators) / max(n, 1),
            "simulator": 1000 * cpu.get("simulator", 0.0) / max(n, 1),
            "control_plane": 1000 * control / max(n, 1),
        },
        "peak_rss_mib": memory,
        "etcd_db_bytes": procstats.etcd_db_bytes(etcd_url(cfg.kubeconfig))
        or g1.get("storage_bytes"),
        "failures": {
            "create_errors": bench.create_errors,
            "not_succeeded": len(not_succeeded),
            # the state each of those ended in (the one before ResourceReleased)
            "ended_in": dict(Counter(_last_state(t.history) for t in not_succeeded)),
            "missing_executors": len(short),
        },
        "load_average": os.getloadavg()[0],
        "load_average_range": [min(bench.loads, default=0.0), max(bench.loads, default=0.0)],
    }


def _lag(d: dict[str, float]) -> str:
    return f"p50 {d['p50']:.2f}s p95 {d['p95']:.2f}s p99 {d['p99']:.2f}s max {d['max']:.2f}s"


def render(r: dict[str, Any]) -> str:
    lat = r["apiserver_latency_s"]
    per_app = r["cpu_ms_per_app"]
    etcd = r["etcd_db_bytes"]
    lines = [
        f"config {r['config']}",
        f"submitted in {r['submitted_in_s']:.1f}s (create p50 {r['create_p50_s'] * 1000:.0f} ms);"
        f" {r['released']} released after {r['elapsed_s']:.1f}s",
        f"apps/min end to end {r['apps_per_min_end_to_end']:.0f};"
        f" steady {r['apps_per_min_steady']:.0f}",
        f"submission -> driver pod: {_lag(r['driver_lag_s'])};"
        f" within 60 s: {r['drivers_within_60s'] * 100:.1f}%",
        f"admission (DriverRequested) -> driver pod: {_lag(r['admission_to_driver_s'])};"
        f" within 60 s: {r['admitted_within_60s'] * 100:.1f}%;"
        f" apps held for capacity: {r['apps_held_for_capacity']}",
        f"driver phase -> app status: {_lag(r['status_lag_s'])}",
        f"  driver Running -> app started: {_lag(r['status_lag_started_s'])}",
        f"  the same by the objects' own times (1 s): decided"
        f" {_lag(r['status_lag_started_server_s'])}; written (API server's managedFields)"
        f" {_lag(r['status_lag_started_written_s'])}",
        f"  that write -> this process's watch (wall clock): {_lag(r['status_write_to_watch_s'])}",
        f"  that write -> an idle watcher's watch (watch_probe.py):"
        f" {_lag(r['status_write_to_idle_watch_s'])}; idle -> this process:"
        f" {_lag(r['idle_watch_to_watch_s'])}",
        f"  driver ended -> app ended: {_lag(r['status_lag_ended_s'])}",
        f"driver created -> bound (scheduler): {_lag(r['driver_created_to_bound_s'])}",
        f"driver bound -> Running (KWOK): {_lag(r['driver_bound_to_running_s'])}",
        f"driver ended -> app released: {_lag(r['driver_done_to_released_s'])}",
        f"API server: p50 {lat['p50'] * 1000:.1f} ms, p99 {lat['p99'] * 1000:.1f} ms;"
        f" {r['apiserver_requests']:.0f} requests ({r['apiserver_requests_per_app']:.1f}/app)",
        "  per app: "
        + ", ".join(f"{k} {v:.1f}" for k, v in r["apiserver_requests_per_app_by_kind"].items()),
        "CPU-s: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["cpu_s"].items())),
        f"CPU ms/app: operator {per_app['operator']:.1f}, simulator {per_app['simulator']:.1f},"
        f" control plane {per_app['control_plane']:.1f}",
        "peak RSS MiB: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(r["peak_rss_mib"].items())),
        f"etcd db: {etcd / 2**20:.1f} MiB" if etcd else "etcd db: unknown",
        f"failures: {r['failures']}; load average {r['load_average']:.1f}"
        f" (during the run {r['load_average_range'][0]:.1f}-{r['load_average_range'][1]:.1f})",
    ]
    return "\n".join(lines)
