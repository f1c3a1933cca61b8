"""Benchmark: how fast the ``sparkplane`` command starts, next to ``kubectl`` (issue 11).

Runs each command ``--runs`` times (default 15) as a fresh process against the same cluster
and prints min / median / max wall time: ``sparkplane --help``, ``sparkplane get apps``
(one namespace: a pod list, an event list and two SparkApplication kinds), ``kubectl --help``
and ``kubectl get pods -l spark-role`` (the nearest kubectl command), with a bare
``python -c pass`` as the interpreter floor. kubectl v<pinned> is built once from the same Go
modules as the dev cluster's kube-apiserver (``devcluster.build.build_kubernetes``), into the
shared cache, the first time. Also prints where ``get apps``'s import time goes
(``python -X importtime``).
Target: ``sparkplane get apps`` under 0.3 s. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/cli_startup.py --kubeconfig PATH [--runs 15] [--namespace default]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sparkplane_devcluster import versions
from sparkplane_devcluster.build import build_kubernetes, go_command, lock
from sparkplane_devcluster.cluster import default_cache_dir

SPARKPLANE = str(Path(sys.executable).with_name("sparkplane"))


def ensure_kubectl(cache_dir: Path) -> Path:
    """kubectl of the pinned release, built once like the control plane (several minutes)."""
    dest = cache_dir / "bin" / f"kubectl-v{versions.KUBERNETES}"
    binary = dest / "kubectl"
    if not os.access(binary, os.X_OK):
        (cache_dir / "logs").mkdir(parents=True, exist_ok=True)
        with lock(cache_dir / "bin.lock"):
            if not os.access(binary, os.X_OK):
                print(f"[kubectl] building v{versions.KUBERNETES} (several minutes, once)")
                log = cache_dir / "logs" / "build-kubectl.log"
                build_kubernetes(go_command(), dest, log, binaries=("kubectl",))
    return binary


def timed(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm the page cache
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, check=False)
        out.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return out


def import_breakdown(env: dict[str, str], namespace: str) -> list[tuple[int, str]]:
    """The top-level imports of ``get apps`` by cumulative microseconds."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "sparkplane.cli",
            "get",
            "apps",
            "-n",
            namespace,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
            rows.append((int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)[:8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if not args.kubeconfig:
        raise SystemExit("--kubeconfig (or KUBECONFIG) names the cluster to query")
    kubectl = str(ensure_kubectl(default_cache_dir()))
    env = dict(os.environ, KUBECONFIG=args.kubeconfig)
    env.pop("SPARKPLANE_KUBECONFIG", None)
    ns = args.namespace
    commands = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "sparkplane --help": [SPARKPLANE, "--help"],
        "sparkplane get apps": [SPARKPLANE, "get", "apps", "-n", ns],
        "kubectl --help": [kubectl, "--help"],
        "kubectl get pods -l spark-role": [kubectl, "get", "pods", "-l", "spark-role", "-n", ns],
    }
    load = os.getloadavg()[0]
    print(f"{args.runs} runs each, {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"{'command':34} {'min':>7} {'median':>7} {'max':>7}")
    for label, cmd in commands.items():
        t = timed(cmd, env, args.runs)
        print(f"{label:34} {min(t):7.3f} {statistics.median(t):7.3f} {max(t):7.3f}")
    print("\nget apps: largest top-level imports (cumulative ms)")
    for micros, module in import_breakdown(env, ns):
        print(f"  {micros / 1000:7.1f}  {module}")


if __name__ == "__main__":
    main()
