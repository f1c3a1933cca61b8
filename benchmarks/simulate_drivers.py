"""Run the dev cluster's driver SIMULATOR for a few namespaces in its own process.

A benchmark helper: ``operator_kubeflow.py`` starts it so the executors' creation (5 per driver,
as a Spark driver would ask for them) is done by a separate process whose CPU is counted apart
from the operator's. Runs until SIGTERM.

    .venv/bin/python benchmarks/simulate_drivers.py --kubeconfig K --workers 4 ns1 ns2 ns3
"""

from __future__ import annotations

import argparse
import signal
import threading

from sparkplane.kube import Kube, connect
from sparkplane_devcluster.simulator import DriverSimulator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("namespaces", nargs="+")
    args = parser.parse_args()
    kube = Kube(connect(kubeconfig=args.kubeconfig))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sims = [DriverSimulator(kube, ns, workers=args.workers).start() for ns in args.namespaces]
    print("simulating", flush=True)
    while not stop.wait(1.0):
        pass
    for sim in sims:
        sim.stop()
    print(f"executors created {sum(s.created for s in sims)}", flush=True)


if __name__ == "__main__":
    main()
