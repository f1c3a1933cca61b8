"""The simulated demo: `make demo` where the host cannot run a real node (examples/demo.py).

KWOK fake nodes only; the flow of the real demo, played:

1. brings the dev cluster up (the first run builds it from Go modules; later runs reuse the cache)
   and shows its simulated nodes;
2. submits the examples natively: SparkPi (JVM) and Python pi as specs, and the seed article's
   template directory (the user's own manifests with ${VAR} values);
3. submits an app whose code and data are local files: a resource staging server runs here, the
   files are uploaded, and the pods' init-container fetches them (played here: KWOK runs no
   containers);
4. installs the operator's CRDs, runs the sparkplane operator (and the dev cluster's Spark driver
   simulator, which creates executor pods as a real driver would) and submits SparkPi in operator
   mode, beside the native ones;
5. follows them all to completion in one live table (one shared watch cache, not a poll per app);
6. shows a driver log, the events of one app, the operator's state history, and the owned objects
   the garbage collector removes when an app is killed.
KWOK plays the kubelet: containers do not run, pods move through their phases as annotated.
"""

from __future__ import annotations

import base64
import secrets
import sys
import tempfile
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from sparkplane import AppPhase, Mode, SparkPlane
from sparkplane.kube import Kube, connect
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.staging.client import fetch
from sparkplane.staging.process import staging_server
from sparkplane.templates import load_app, parse_env
from sparkplane.usecases.create import submit_objects
from sparkplane.usecases.kill import remaining_objects
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.simulator import DriverSimulator

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
    table = Table(
        "app", "mode", "state", "reason", "operator state", "executors", title="applications (live)"
    )
    for app in sp.tracker(NAMESPACE).apps(NAMESPACE):
        if app.name in names:
            color = {AppPhase.SUCCEEDED: "green", AppPhase.FAILED: "red"}.get(
                app.state.phase, "yellow"
            )
            ex = app.state.executors
            table.add_row(
                app.name,
                app.mode.value,
                f"[{color}]{app.state.phase}[/{color}]",
                str(app.state.reason or ""),
                app.state.raw_state,
                str(sum(ex.values())) if ex else "-",
            )
    return table


def submit_local_deps(kube: Kube, sp: SparkPlane, workdir: Path, kubeconfig: Path) -> str:
    """Local code and data through the staging server; we play the init-container."""
    upload_secret = secrets.token_urlsafe(32)
    (workdir / "upload-secrets").write_text(f"demo:{upload_secret}\n")
    serve = ["--port", "0", "--no-fsync", "--kubeconfig", str(kubeconfig)]
    serve += ["--storage-dir", str(workdir / "bundles"), "--db-path", str(workdir / "meta.sqlite3")]
    serve += ["--upload-secret-file", str(workdir / "upload-secrets")]
    # the dev cluster's admin uses a client certificate (no token to forward): the upload
    # secret authorises the upload instead
    with staging_server(*serve, log=workdir / "staging.log") as url:
        console.print(f"staging server at {url}")
        result = sp.submit(
            EXAMPLES / "local-deps" / "app.yaml",
            staging_server=url,
            staging_base_dir=EXAMPLES / "local-deps",
            staging_token=upload_secret,
        )
        pod = kube.get("v1", "Pod", result.driver_pod or "", NAMESPACE)
        cmd = pod["spec"]["initContainers"][0]["command"]
        console.print(
            f"submitted [bold]{result.name}[/bold] with local files; its "
            f"init-container runs: {' '.join(cmd)}"
        )
        secret_name = next(
            v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v
        )
        secret = kube.get("v1", "Secret", secret_name, NAMESPACE)["data"]["secret"]
        files = fetch(
            url,
            cmd[cmd.index("--resource-id") + 1],
            base64.b64decode(secret).decode(),
            workdir / "volume",
        )
        console.print(f"  (KWOK runs no containers: fetched for it) {', '.join(files)}")
    return result.name


def main() -> int:
    kubeconfig = DevCluster(DevClusterSettings()).up(  # port base: $SPARKPLANE_DEV_PORT_BASE
        progress=lambda m: console.print(f"• {m}", markup=False)
    )
    console.print(f"[bold]dev cluster up[/bold]: export KUBECONFIG={kubeconfig}")
    kube = Kube(connect(kubeconfig=kubeconfig))
    show_nodes(kube)
    ensure_namespace(kube)
    console.print(
        "installing the SparkApplication/SparkCluster CRDs; starting the operator "
        "and the driver simulator"
    )
    install_crds(kube)
    operator = Operator(
        kube, OperatorSettings(namespaces=(NAMESPACE,), leader_election=False)
    ).start()
    simulator = DriverSimulator(kube, NAMESPACE).start()
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
    workdir = Path(tempfile.mkdtemp(prefix="sparkplane-demo-"))
    names.append(submit_local_deps(kube, sp, workdir, kubeconfig))
    spec = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
    spec["metadata"]["name"] = f"spark-pi-op-{int(time.time())}"
    operated = sp.submit(spec, mode=Mode.APACHE)
    console.print(
        f"submitted [bold]{operated.name}[/bold] in operator mode (a SparkApplication "
        "the sparkplane operator reconciles)"
    )
    names.append(operated.name)

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
        console.print(f"  {event.reason}: {event.message}", markup=False)

    history = sp.get(operated.name).owner.get("status", {}).get("stateTransitionHistory", {})
    states = [history[k]["currentStateSummary"] for k in sorted(history, key=int)]
    console.print(
        f"\n[bold]operator state history of {operated.name}[/bold]: " + " -> ".join(states)
    )

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
    simulator.stop()
    operator.stop()
    sp.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
