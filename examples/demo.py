"""The sparkplane demo: the main job on the embedded local cluster (`make demo`).

1. brings the dev cluster up (the first run builds it from Go modules; later runs reuse the cache),
2. shows its simulated nodes,
3. runs a pod through its lifecycle (Pending -> Running -> Succeeded) while watching it, and
   reads its (simulated) log through the API.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.table import Table

from sparkplane.devcluster import DevCluster
from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube, connect

console = Console()
NAMESPACE = "sparkplane-demo"


def main() -> int:
    cluster = DevCluster()
    kubeconfig = cluster.up(progress=lambda m: console.print(f"[dim]• {m}[/dim]"))
    console.print(f"[bold]dev cluster up[/bold]; export KUBECONFIG={kubeconfig}")
    kube = Kube(connect(kubeconfig=kubeconfig))

    table = Table("node", "cpu", "memory", "pods", title="simulated nodes (KWOK)")
    for node in kube.list("v1", "Node"):
        cap = node["status"]["allocatable"]
        table.add_row(node["metadata"]["name"], cap["cpu"], cap["memory"], cap["pods"])
    console.print(table)

    if kube.get_or_none("v1", "Namespace", NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    while kube.get_or_none("v1", "ServiceAccount", "default", NAMESPACE) is None:
        time.sleep(0.2)
    name = f"lifecycle-{int(time.time())}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "annotations": {
                "sim.sparkplane.io/outcome": "Succeeded",
                "sim.sparkplane.io/run-for": "4s",
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "apache/spark:4.0.1"}],
        },
    }
    created = kube.create(pod, NAMESPACE)
    console.print(f"created pod {NAMESPACE}/{name}; watching its phase:")
    start = time.monotonic()
    last = ""
    for event in kube.watch(
        "v1",
        "Pod",
        NAMESPACE,
        field_selector=f"metadata.name={name}",
        resource_version=created["metadata"]["resourceVersion"],
        timeout_seconds=60,
    ):
        phase = event.object.get("status", {}).get("phase", "")
        node = event.object.get("spec", {}).get("nodeName", "")
        if phase != last:
            console.print(f"  {time.monotonic() - start:5.1f}s  {phase:<10} {node}")
            last = phase
        if phase in ("Succeeded", "Failed"):
            break
    console.print("log of the pod (served by KWOK through the API):")
    for line in kube.logs(name, NAMESPACE, tail_lines=3):
        console.print(f"  {line}", markup=False)
    try:
        kube.delete("v1", "Pod", name, NAMESPACE)
    except NotFoundError:
        pass
    console.print(
        "[green]demo finished[/green]; stop the cluster with `sparkplane dev-cluster down`"
    )
    return 0 if last == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
