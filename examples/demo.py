"""The sparkplane demo: the main job on the embedded local cluster (`make demo`).

1. brings the dev cluster up (the first run builds it from Go modules; later runs reuse the cache)
   and shows its simulated nodes;
2. submits the examples natively: SparkPi (JVM) and Python pi as specs, and the seed article's
   template directory (the user's own manifests with ${VAR} values);
3. follows them to completion in one live table (one shared watch cache, not a poll per app);
4. shows a driver log, the events of one app, and the owned objects the garbage collector
   removes when an app is killed.
KWOK plays the kubelet: containers do not run, pods move through their phases as annotated.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from sparkplane import AppPhase, SparkPlane
from sparkplane.devcluster import DevCluster
from sparkplane.kube import Kube, connect
from sparkplane.lifecycle.kill import remaining_objects
from sparkplane.lifecycle.submit import submit_objects
from sparkplane.templates import load_app, parse_env

console = Console()
NAMESPACE = "sparkplane-demo"
EXAMPLES = Path(__file__).parent


def ensure_namespace(kube: Kube) -> None:
    if kube.get_or_none("v1", "Namespace", NAMESPACE) is None:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    while kube.get_or_none("v1", "ServiceAccount", "default", NAMESPACE) is None:
        time.sleep(0.2)


def show_nodes(kube: Kube) -> None:
    table = Table("node", "cpu", "memory", "pods", title="simulated nodes (KWOK)")
    for node in kube.list("v1", "Node"):
        cap = node["status"]["allocatable"]
        table.add_row(node["metadata"]["name"], cap["cpu"], cap["memory"], cap["pods"])
    console.print(table)


def state_table(sp: SparkPlane, names: list[str]) -> Table:
    table = Table("app", "state", "reason", "driver", title="applications (live)")
    for app in sp.tracker(NAMESPACE).apps(NAMESPACE):
        if app.name in names:
            color = {AppPhase.SUCCEEDED: "green", AppPhase.FAILED: "red"}.get(
                app.state.phase, "yellow"
            )
            table.add_row(
                app.name,
                f"[{color}]{app.state.phase}[/{color}]",
                str(app.state.reason or ""),
                app.driver_pod or "",
            )
    return table


def main() -> int:
    kubeconfig = DevCluster().up(progress=lambda m: console.print(f"[dim]• {m}[/dim]"))
    console.print(f"[bold]dev cluster up[/bold]: export KUBECONFIG={kubeconfig}")
    kube = Kube(connect(kubeconfig=kubeconfig))
    show_nodes(kube)
    ensure_namespace(kube)
    sp = SparkPlane(kube, NAMESPACE)
    sp.tracker(NAMESPACE)  # one shared cache for every app below

    names = []
    for spec in ("spark-pi.yaml", "python-pi.yaml"):
        result = sp.submit(EXAMPLES / spec)
        console.print(f"submitted [bold]{result.name}[/bold] natively: {', '.join(result.objects)}")
        names.append(result.name)
    values = parse_env((EXAMPLES / "template" / "values.env").read_text())
    values.update(NAMESPACE=NAMESPACE, NAME_SUFFIX=str(int(time.time())), RUN_FOR="4s")
    template = load_app(EXAMPLES / "template", values)
    result = submit_objects(kube, template.driver, template.dependents)
    console.print(
        f"submitted [bold]{result.name}[/bold] from the template directory: "
        f"{', '.join(result.objects)}"
    )
    names.append(result.name)

    with Live(state_table(sp, names), console=console, refresh_per_second=4) as live:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            live.update(state_table(sp, names))
            apps = [a for a in sp.tracker(NAMESPACE).apps(NAMESPACE) if a.name in names]
            if len(apps) == len(names) and all(a.state.finished for a in apps):
                break
            time.sleep(0.25)
        live.update(state_table(sp, names))
    finished = [sp.get(n) for n in names]

    console.print(f"\n[bold]log of {names[0]}[/bold] (simulated driver output):")
    for line in sp.logs(names[0], tail=3):
        console.print(f"  {line}", markup=False)
    console.print(f"\n[bold]events of {names[0]}[/bold]:")
    for event in sp.events(names[0])[-4:]:
        console.print(f"  {event.get('reason')}: {event.get('message')}", markup=False)

    app = finished[0]
    uid = app.owner["metadata"]["uid"]
    owned = remaining_objects(kube, NAMESPACE, {uid})
    console.print(f"\n[bold]kill {app.name}[/bold]: it owns {', '.join(owned)}")
    sp.kill(app, wait=True)
    console.print(
        "  the garbage collector removed every owned object "
        f"(left: {remaining_objects(kube, NAMESPACE, {uid}) or 'nothing'})"
    )
    ok = all(a.state.phase is AppPhase.SUCCEEDED for a in finished)
    console.print(
        f"\n[{'green' if ok else 'red'}]demo finished[/]: "
        f"{sum(a.state.phase is AppPhase.SUCCEEDED for a in finished)}/{len(finished)} "
        "apps succeeded. Try `sparkplane get apps -n sparkplane-demo` "
        f"(KUBECONFIG={kubeconfig}); stop with `sparkplane dev-cluster down`."
    )
    sp.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
