"""Benchmark: the log archive in etcd (ConfigMaps, ``kube``) against object storage (``s3://``).

On a running dev cluster (its etcd, API server and SeaweedFS), archives ``--apps`` finished apps
into each store through the same :class:`~sparkplane.history.archive.ArchiveStore` calls the
operator and ``gc`` make (``replace`` of one app's files), then reads ``--reads`` of them back
the way ``sparkplane logs`` does (:func:`~sparkplane.history.logs.read_archived`, newest record
then the driver log). Each driver log is ``--log-kib`` KiB of Spark-like text (timestamps, task
and stage numbers, some random ids: it compresses about as a real one does).

Prints per store: archive write time per app (median, p90), read time per app (median, p90), and
what etcd holds: the ConfigMaps' bytes as the API returns them (summed), and the growth of etcd's
database (``etcd_mvcc_db_total_size_in_bytes``; etcd keeps old revisions until compaction). The
S3 store's etcd figures are what its run added (nothing of the archive). Cleans up after itself.
Prints figures; asserts nothing.

    .venv/bin/python benchmarks/archive_stores.py --state-dir DIR [--apps 200] [--log-kib 256]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sparkplane.history.archive import META, ArchiveMeta, ArchiveStore
from sparkplane.history.kube_store import KubeStore
from sparkplane.history.logs import read_archived
from sparkplane.history.s3_store import S3Store, parse_location
from sparkplane.kube import Kube, connect
from sparkplane.settings import Settings
from sparkplane_devcluster.seaweed import S3Access

LINES = [
    "{t} INFO TaskSetManager: Starting task {a}.0 in stage {b}.0 (TID {c}) ({h}, executor {e}, "
    "partition {a}, PROCESS_LOCAL, 9{a} bytes)",
    "{t} INFO TaskSetManager: Finished task {a}.0 in stage {b}.0 (TID {c}) in {d} ms on {h} "
    "(executor {e}) ({a}/{n})",
    "{t} INFO DAGScheduler: ResultStage {b} (reduce at SparkPi.scala:38) finished in {d} ms",
    "{t} INFO BlockManagerInfo: Added broadcast_{b}_piece0 in memory on {h}:7079 (size: {d}.0 B, "
    "free: 117.{a} MiB)",
    "{t} WARN ExecutorPodsWatchSnapshotSource: pod {i}-exec-{e} changed phase Running",
]


def spark_log(kib: int, rng: random.Random) -> bytes:
    """About ``kib`` KiB of driver-log-like text."""
    out, size, second = [], 0, 0
    while size < kib * 1024:
        second += rng.randint(0, 2)
        line = rng.choice(LINES).format(
            t=f"26/11/27 23:{second // 60 % 60:02d}:{second % 60:02d}",
            a=rng.randint(0, 199),
            b=rng.randint(0, 40),
            c=rng.randint(0, 99999),
            d=rng.randint(1, 9999),
            e=rng.randint(1, 8),
            n=200,
            h=f"10.218.{rng.randint(0, 255)}.{rng.randint(0, 255)}",
            i=uuid.UUID(int=rng.getrandbits(128)).hex[:12],
        )
        out.append(line)
        size += len(line) + 1
    return ("\n".join(out) + "\n").encode()


def files_of(namespace: str, app: str, log: bytes) -> dict[str, bytes]:
    meta = ArchiveMeta(
        namespace=namespace,
        app=app,
        driver_pod=f"{app}-driver",
        archived_at=datetime.now(UTC).isoformat(timespec="seconds"),
        reason="benchmark",
        retain_seconds=3600,
    )
    return {"driver.log": log, META: meta.to_json()}


def etcd_db_bytes(port: int) -> int:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = re.search(r"^etcd_mvcc_db_total_size_in_bytes (\S+)$", text, re.M)
    return int(float(found[1])) if found else 0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_store(
    name: str,
    store: ArchiveStore,
    namespace: str,
    logs: list[bytes],
    reads: int,
    etcd: Callable[[], int],
    configmap_bytes: Callable[[], int],
) -> dict[str, float]:
    before = etcd()
    writes = []
    for n, log in enumerate(logs):
        app = f"bench-{n:05d}"
        started = time.perf_counter()
        store.replace(f"{namespace}/{app}/", files_of(namespace, app, log))
        writes.append(time.perf_counter() - started)
    time.sleep(2)  # etcd's size metric is refreshed periodically
    grown = etcd() - before
    read_times = []
    for n in range(0, len(logs), max(1, len(logs) // reads))[:reads]:
        started = time.perf_counter()
        found = read_archived(namespace, f"bench-{n:05d}", settings=Settings(), store=store)
        read_times.append(time.perf_counter() - started)
        assert found is not None and len(found[1]) > 10
    figures = {
        "write_ms_median": statistics.median(writes) * 1000,
        "write_ms_p90": pct(writes, 0.9) * 1000,
        "read_ms_median": statistics.median(read_times) * 1000,
        "read_ms_p90": pct(read_times, 0.9) * 1000,
        "configmap_bytes": configmap_bytes(),
        "etcd_db_growth_bytes": grown,
    }
    print(f"{name}: " + json.dumps({k: round(v, 1) for k, v in figures.items()}), flush=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", type=Path, required=True, help="the dev cluster's")
    parser.add_argument("--apps", type=int, default=200)
    parser.add_argument("--log-kib", type=int, default=256)
    parser.add_argument("--reads", type=int, default=20)
    args = parser.parse_args()
    state = json.loads((args.state_dir / "state.json").read_text())
    etcd_port = int(state["port_base"]) + 1
    access = S3Access.load(args.state_dir / "seaweedfs" / "s3.json")
    kube = Kube(connect(kubeconfig=args.state_dir / "kubeconfig"))
    namespace = f"bench-archive-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    rng = random.Random(7)
    logs = [spark_log(args.log_kib, rng) for _ in range(args.apps)]
    print(
        f"{args.apps} apps, driver logs of {args.log_kib} KiB ({sum(map(len, logs)) >> 20} MiB "
        f"in all), {args.reads} reads per store",
        flush=True,
    )
    s3 = S3Store(parse_location(access.archive), [namespace], client=access.client())

    def cm_bytes() -> int:
        listed = kube.list("v1", "ConfigMap", namespace, label_selector="sparkplane.io/log-archive")
        return sum(len(json.dumps(o)) for o in listed)

    try:
        run_store(
            "kube (ConfigMaps)",
            KubeStore(kube, [namespace]),
            namespace,
            logs,
            args.reads,
            lambda: etcd_db_bytes(etcd_port),
            cm_bytes,
        )
        kube.delete("v1", "Namespace", namespace)
        run_store(
            "s3 (SeaweedFS)",
            s3,
            namespace,
            logs,
            args.reads,
            lambda: etcd_db_bytes(etcd_port),
            lambda: 0,
        )
    finally:
        s3.delete_prefix(f"{namespace}/")
        if kube.get_or_none("v1", "Namespace", namespace):
            kube.delete("v1", "Namespace", namespace)
        kube.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
