"""A second, idle watcher of the benchmark's SparkApplications, in its own process.

The Kubeflow-shape benchmark (``kubeflow_run.py``) times status changes through its own watches,
in a process that also submits apps and follows every pod. This probe does nothing else: one
plain watch per namespace (no cache, no handlers), and for each app the wall-clock time its
first event carrying a started state arrived. Comparing the two separates the API server's
delivery of the status write (probe - the write's managedFields time) from the benchmark
process's own lag in reading its watches (benchmark - probe). Writes ``{"ns/name": seconds}``
to ``--out`` on SIGTERM.

    .venv/bin/python -m benchmarks.watch_probe --kubeconfig K --api kubeflow --out F ns1 ns2
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.kubeflow_run import APIS, STARTED, operator_status
from sparkplane.errors import GoneError
from sparkplane.kube import Kube, connect


def started(obj: dict[str, Any], api: str) -> bool:
    """Whether the app's status history has a started state."""
    history = operator_status(obj, api).get("stateTransitionHistory") or {}
    return any((h or {}).get("currentStateSummary") in STARTED for h in history.values())


class Probe:
    def __init__(self, kube: Kube, api: str) -> None:
        self.kube, self.api = kube, api
        self.seen: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def follow(self, namespace: str) -> None:
        """Watch ``namespace`` from now on, resuming after each server-side end of the stream."""
        version = APIS[self.api]
        rv = self._now(namespace)
        while not self.stop.is_set():
            try:
                for event in self.kube.watch(
                    version, "SparkApplication", namespace, resource_version=rv, timeout_seconds=60
                ):
                    now = time.time()
                    meta = event.object.get("metadata") or {}
                    rv = str(meta.get("resourceVersion") or rv)
                    if event.type == "BOOKMARK" or not started(event.object, self.api):
                        continue
                    key = f"{namespace}/{meta.get('name')}"
                    with self.lock:
                        self.seen.setdefault(key, now)
            except GoneError:  # too old: what was missed is missed (the report counts the apps)
                rv = self._now(namespace)

    def _now(self, namespace: str) -> str:
        """The resourceVersion to watch ``namespace`` from: now (a list's)."""
        page = self.kube.list_page(APIS[self.api], "SparkApplication", namespace)
        return str(page["metadata"]["resourceVersion"])

    def dump(self, out: Path) -> None:
        with self.lock:
            out.write_text(json.dumps(self.seen))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--api", choices=sorted(APIS), default="apache")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("namespaces", nargs="+")
    args = parser.parse_args()
    probe = Probe(Kube(connect(kubeconfig=args.kubeconfig)), args.api)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    for ns in args.namespaces:
        threading.Thread(target=probe.follow, args=(ns,), daemon=True).start()
    print("probing", flush=True)
    while not done.wait(1.0):
        pass
    probe.stop.set()
    probe.dump(args.out)
    print(f"apps seen started {len(probe.seen)}", flush=True)


if __name__ == "__main__":
    main()
