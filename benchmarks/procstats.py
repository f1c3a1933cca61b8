"""Benchmark helpers: CPU and memory of processes from /proc, Prometheus text from endpoints.

Used by ``operator_kubeflow.py``: CPU-seconds and peak RSS of the operator, the driver
simulator and each control-plane component (found by the state directory in their command
line), and quantiles of the API server's request-latency histogram between two scrapes.
"""

from __future__ import annotations

import os
import urllib.request
from collections import defaultdict
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from sparkplane.kube import Kube

_TICK = os.sysconf("SC_CLK_TCK")
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
_LONG_RUNNING = {"WATCH", "WATCHLIST", "CONNECT"}


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` (and its reaped children), 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / _TICK


def memory_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) in MiB."""
    values = {"VmRSS": 0.0, "VmHWM": 0.0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in values:
                values[key] = int(rest.split()[0]) / 1024
    except OSError:
        pass
    return values["VmRSS"], values["VmHWM"]


def control_plane_pids(state_dir: Path) -> dict[str, int]:
    """Component name → pid, for processes whose command line mentions ``state_dir``."""
    found: dict[str, int] = {}
    marker = str(state_dir.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = b" ".join(argv).decode(errors="replace")
        if marker not in text or not argv[0]:
            continue
        binary = Path(argv[0].decode(errors="replace")).name
        if binary in COMPONENTS:
            found[binary] = int(entry.name)
    return found


Histogram = dict[float, float]  # upper bound -> cumulative count


def apiserver_scrape(
    kube: Kube,
) -> tuple[Histogram, float, dict[str, float], dict[str, float]]:
    """The API server's request-duration histogram (long-running verbs excluded), its total
    request count, gauges of interest (storage size), and the request count per
    ``VERB resource[/subresource]``."""
    response = kube.request("GET", "/metrics", stream=True, timeout=60)
    text = response.data.decode()
    buckets: Histogram = defaultdict(float)
    total = 0.0
    gauges: dict[str, float] = {}
    by_request: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "apiserver_request_duration_seconds":
            for sample in family.samples:
                if sample.labels.get("verb", "").upper() in _LONG_RUNNING:
                    continue
                if sample.name.endswith("_bucket"):
                    buckets[float(sample.labels["le"])] += sample.value
                elif sample.name.endswith("_count"):
                    total += sample.value
                    labels = sample.labels
                    verb, resource = labels.get("verb", ""), labels.get("resource", "")
                    sub = labels.get("subresource", "")
                    key = f"{verb} {resource}/{sub}" if sub else f"{verb} {resource}"
                    by_request[key] = by_request.get(key, 0.0) + sample.value
        elif family.name in (
            "apiserver_storage_size_bytes",
            "apiserver_storage_db_total_size_in_bytes",
        ):
            gauges["storage_bytes"] = max(s.value for s in family.samples) if family.samples else 0
    return dict(buckets), total, gauges, by_request


def etcd_db_bytes(url: str) -> float | None:
    """``etcd_mvcc_db_total_size_in_bytes`` from etcd's /metrics, None if unreachable."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return None
    for family in text_string_to_metric_families(text):
        if family.name == "etcd_mvcc_db_total_size_in_bytes":
            return float(family.samples[0].value)
    return None


def quantile(before: Histogram, after: Histogram, q: float) -> float:
    """Quantile ``q`` of the observations between two scrapes of one histogram (linear
    interpolation inside the bucket, as Prometheus' histogram_quantile)."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    if not counts or counts[-1] <= 0:
        return float("nan")
    rank = q * counts[-1]
    lower, below = 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= rank:
            if bound == float("inf"):
                return lower
            span = count - below
            return lower + (bound - lower) * ((rank - below) / span if span else 1.0)
        lower, below = bound, count
    return lower


def group_pids(leader: int) -> list[int]:
    """Every process of ``leader``'s process group (an Airflow component and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[2]) == leader:  # field 5: pgrp
                found.append(int(entry.name))
    return found


def tcp_connections(pids: list[int], port: int) -> int:
    """Established TCP connections of ``pids`` to remote ``port`` (the API server)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if fields[3] == "01" and remote_port == port and fields[9] in inodes:
                count += 1
    return count


def apiserver_requests(kube: Kube) -> dict[str, float]:
    """The API server's request counter (``apiserver_request_total``) by ``VERB resource``,
    long-running verbs (watches) left out: a plain scan of /metrics, cheap enough to repeat."""
    response = kube.request("GET", "/metrics", stream=True, timeout=60)
    counts: dict[str, float] = defaultdict(float)
    for line in response.data.decode().splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line[len("apiserver_request_total{") :].rpartition("} ")
        labels = dict(part.split("=", 1) for part in labels_text.split('",') if "=" in part)
        verb = labels.get("verb", "").strip('"').upper()
        resource = labels.get("resource", "").strip('"')
        if verb not in _LONG_RUNNING:
            counts[f"{verb} {resource}"] += float(value)
    return dict(counts)


def pss_mib(pid: int) -> float:
    """Proportional set size in MiB (shared pages split among their processes: a group's sum
    counts a forked worker's pages shared with its parent once), 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
