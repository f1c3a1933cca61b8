"""Benchmark: what the real node's API relay adds to a client's requests, idle and under CPU load.

A driver on the real node reaches the API server only through the relay
(``sparkplane_devcluster.relay``, on ``10.217.<i>.1:443``). This times the same HTTPS GET
(the real node's Node object, a few KiB like a driver's own pod) **direct** to the API server
(``127.0.0.1:<port base>``) and **through the relay**, interleaved so both see the same load, in
two ways a Kubernetes client connects:

- ``new``: a new TCP + TLS connection per request (a cold client, or a pool that lost its
  connection: the first GET of a starting driver);
- ``keep-alive``: many requests on one connection.

``--load N`` runs N CPU-bound processes meanwhile (default: 0 then 2x the cores). ``--relay
PATH`` (repeatable) also starts that relay script on the host address (a free port) in front of
the same API server and times it beside the node's own relay (compare two implementations
under identical conditions, e.g. ``git show HEAD~1:devcluster/src/sparkplane_devcluster/relay.py``).
``--from-node`` runs the client inside the node's network namespace, the path a pod's packets
take (only the relays are reachable from there).

    .venv/bin/python benchmarks/relay_latency.py --state-dir /tmp/devnet/real

Needs a running dev cluster with a real node (``dev-cluster up --real-node``) and root.
Prints p50/p90/p99/max in milliseconds per target, mode and load.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PATH = "/api/v1/nodes/sparkplane-real-node"


# -- the client (also run alone, inside the node's namespace, with --worker) ----------------
def _context(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return ctx


class _Conn(http.client.HTTPSConnection):
    """An HTTPS connection to an address whose certificate names ``kubernetes``."""

    def __init__(self, addr: tuple[str, int], ctx: ssl.SSLContext) -> None:
        super().__init__(addr[0], addr[1], context=ctx, timeout=60)
        self.ctx = ctx

    def connect(self) -> None:
        raw = socket.create_connection((self.host, self.port), self.timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.ctx.wrap_socket(raw, server_hostname="kubernetes")


def _get(conn: _Conn) -> None:
    conn.request("GET", PATH, headers={"Accept": "application/json"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 200 or not body:
        raise RuntimeError(f"GET {PATH}: {response.status}")


def measure(pki: Path, targets: dict[str, tuple[str, int]], n: int) -> dict[str, list[float]]:
    """``n`` rounds; each round one GET per target and mode, interleaved. Milliseconds."""
    ctx = _context(pki)
    times: dict[str, list[float]] = {f"{t} {m}": [] for t in targets for m in ("new", "keep")}
    kept = {name: _Conn(addr, ctx) for name, addr in targets.items()}
    for conn in kept.values():
        _get(conn)  # connected before timing
    for _ in range(n):
        for name, addr in targets.items():
            start = time.perf_counter()
            fresh = _Conn(addr, ctx)
            _get(fresh)
            fresh.close()
            times[f"{name} new"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            _get(kept[name])
            times[f"{name} keep"].append((time.perf_counter() - start) * 1000)
    for sock in kept.values():
        sock.close()
    return times


# -- the driver of the benchmark -------------------------------------------------------------
def _burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _wait_listening(addr: tuple[str, int]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(addr, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {addr}")


def _row(name: str, load: int, values: list[float]) -> str:
    q = statistics.quantiles(values, n=100)
    return (
        f"{name:<30} {load:>4} {len(values):>5} {statistics.median(values):>8.2f} "
        f"{q[89]:>8.2f} {q[98]:>8.2f} {max(values):>8.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--load", default=f"0,{2 * (os.cpu_count() or 1)}")
    parser.add_argument("--relay", action="append", default=[], type=Path)
    parser.add_argument("--from-node", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # JSON: run measure() and print
    args = parser.parse_args()
    if args.worker:
        job: dict[str, Any] = json.loads(args.worker)
        targets = {k: (v[0], int(v[1])) for k, v in job["targets"].items()}
        print(json.dumps(measure(Path(job["pki"]), targets, int(job["n"]))))
        return 0

    from sparkplane_devcluster import DevCluster, DevClusterSettings
    from sparkplane_devcluster.node.plan import RELAY_PORT

    cluster = DevCluster(DevClusterSettings(state_dir=args.state_dir))
    state = cluster._read_state()
    if not cluster.is_running() or not state.get("real_node"):
        print(f"no running dev cluster with a real node in {args.state_dir}", file=sys.stderr)
        return 1
    plan = cluster.node_plan
    pki = args.state_dir / "pki"
    targets: dict[str, tuple[str, int]] = {"node relay": (plan.host_ip, RELAY_PORT)}
    if not args.from_node:
        targets = {"direct": ("127.0.0.1", cluster.ports.apiserver), **targets}
    extra = []
    for i, script in enumerate(args.relay):
        port = _free_port(plan.host_ip)
        argv = [sys.executable, str(script), plan.host_ip, str(port)]
        extra.append(subprocess.Popen([*argv, "127.0.0.1", str(cluster.ports.apiserver)]))
        _wait_listening((plan.host_ip, port))
        targets[f"relay{i + 1} {script.name}"] = (plan.host_ip, port)
    holder = int(state["processes"]["node-holder"]["pid"])
    print(f"{'TARGET MODE':<30} {'LOAD':>4} {'N':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
    try:
        for load in (int(x) for x in args.load.split(",")):
            burners = _burners(load)
            try:
                job = {"pki": str(pki), "targets": targets, "n": args.requests}
                argv = [sys.executable, __file__, "--state-dir", ".", "--worker", json.dumps(job)]
                if args.from_node:
                    argv = ["nsenter", "-t", str(holder), "-n", "--", *argv]
                out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
                for name, values in json.loads(out).items():
                    print(_row(name, load, values), flush=True)
            finally:
                for proc in burners:
                    proc.kill()
                    proc.wait()
    finally:
        for proc in extra:
            proc.kill()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
