"""Application commands, kubectl style: get, wait, logs, ui, events, kill, gc."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer
from rich.table import Table

from sparkplane.cli import history
from sparkplane.cli.console import Output, dump, err, out
from sparkplane.cli.options import AllNamespaces, Context, Kubeconfig, Namespace, make_kube
from sparkplane.client import SparkPlane
from sparkplane.kube import Kube
from sparkplane.lifecycle.apps import App
from sparkplane.lifecycle.events import event_time
from sparkplane.lifecycle.gc import gc_bundle, gc_cronjob
from sparkplane.lifecycle.model import AppPhase, is_finished
from sparkplane.lifecycle.ttl import format_duration, parse_duration

get_app = typer.Typer(help="Show resources (kubectl style).", no_args_is_help=True)
OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="table, wide, yaml or json.")]
AppName = Annotated[str, typer.Argument(help="Application name (native or SparkApplication).")]


def _client(kubeconfig: str | None, context: str | None, namespace: str) -> SparkPlane:
    return SparkPlane(make_kube(kubeconfig, context), namespace)


def _age(app: App) -> str:
    if not app.created:
        return "?"
    return format_duration(
        timedelta(seconds=int((datetime.now(UTC) - app.created).total_seconds()))
    )


def _table(apps: list[App], wide: bool, all_ns: bool) -> Table:
    cols = (["NAMESPACE"] if all_ns else []) + [
        "NAME",
        "MODE",
        "STATE",
        "REASON",
        "AGE",
        "DRIVER",
        "EXECUTORS",
    ]
    if wide:
        cols += ["APP ID", "PREEMPTOR", "MESSAGE"]
    table = Table(*cols, box=None, pad_edge=False, header_style="bold")
    for a in apps:
        ex = a.state.executors
        execs = f"{ex.get('running', 0)}/{sum(ex.values())}" if ex else "0"
        color = {AppPhase.SUCCEEDED: "green", AppPhase.FAILED: "red", AppPhase.RUNNING: "cyan"}.get(
            a.state.phase, "yellow"
        )
        row = ([a.namespace] if all_ns else []) + [
            a.name,
            a.mode.value,
            f"[{color}]{a.state.phase}[/{color}]",
            str(a.state.reason or ""),
            _age(a),
            a.driver_pod or "",
            execs,
        ]
        if wide:
            row += [a.app_id or "", a.state.preemptor or "", a.state.message[:60]]
        table.add_row(*row)
    return table


@get_app.command("apps")
def get_apps(
    name: Annotated[str | None, typer.Argument(help="Only this application.")] = None,
    namespace: Namespace = "default",
    all_namespaces: AllNamespaces = False,
    output: OutputOpt = Output.table,
    watch: Annotated[
        bool, typer.Option("-w", "--watch", help="Keep printing state changes.")
    ] = False,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """List applications (both modes) with state, age, driver and executor counts."""
    sp = _client(kubeconfig, context, namespace)
    apps = [sp.get(name)] if name else sp.list(all_namespaces=all_namespaces)
    if output in (Output.yaml, Output.json):
        dump([a.summary() for a in apps] if not name else apps[0].summary(), output)
    elif not apps:
        err.print(f"No Spark applications in {'any namespace' if all_namespaces else namespace}.")
    else:
        out.print(_table(apps, output is Output.wide, all_namespaces))
    if watch:
        seen = {(a.namespace, a.name): a.state for a in apps}
        for app in sp.watch(None if all_namespaces else namespace):
            if name and app.name != name:
                continue
            if seen.get((app.namespace, app.name)) != app.state:
                seen[(app.namespace, app.name)] = app.state
                out.print(_table([app], output is Output.wide, all_namespaces))


def wait_for_app(kube: Kube, name: str, namespace: str, until: str, timeout: float | None) -> App:
    """Wait with a live status line; exit 1 if the app failed."""
    sp = SparkPlane(kube, namespace)
    started = time.monotonic()
    with err.status(f"waiting for {name} ...") as status:

        def show(app: App) -> None:
            st = app.state
            status.update(
                f"{name}: {st.phase}{f' ({st.reason})' if st.reason else ''} "
                f"[dim]{time.monotonic() - started:.0f}s[/dim]"
            )

        app = sp.wait(name, until, timeout=timeout, on_change=show)
    st = app.state
    err.print(
        f"{name}: {st.phase}{f' ({st.reason})' if st.reason else ''}"
        f"{f' - {st.message}' if st.message else ''}"
    )
    if is_finished(st) and st.phase is AppPhase.FAILED:
        raise typer.Exit(1)
    return app


def wait(
    name: AppName,
    until: Annotated[str, typer.Option("--for", help="finished, running or pending.")] = "finished",
    timeout: Annotated[
        float | None, typer.Option(help="Seconds (exit code 9 when exceeded).")
    ] = None,
    namespace: Namespace = "default",
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Wait for an application; exit 0 when reached, 1 if it failed, 9 on timeout."""
    wait_for_app(make_kube(kubeconfig, context), name, namespace, until, timeout)


def logs(
    name: AppName,
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Stream until the pod ends.")
    ] = False,
    executor: Annotated[int | None, typer.Option("--executor", help="Executor id instead.")] = None,
    since: Annotated[str | None, typer.Option(help="Only newer lines, e.g. 10m.")] = None,
    tail: Annotated[int | None, typer.Option(help="Only the last N lines.")] = None,
    namespace: Namespace = "default",
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Print the driver's log (or executor N's)."""
    sp = _client(kubeconfig, context, namespace)
    lines = sp.logs(
        name,
        executor=executor,
        follow=follow,
        tail=tail,
        since=parse_duration(since, field="--since") if since else None,
        notice=lambda msg: err.print(msg, markup=False, highlight=False),
    )
    for line in lines:
        out.print(line, markup=False, highlight=False)


def ui(
    name: AppName,
    wait_seconds: Annotated[
        float, typer.Option("--wait", help="Seconds to wait for the Ingress address.")
    ] = 0.0,
    port: Annotated[int, typer.Option(help="Local port for the port-forward fallback.")] = 4040,
    no_forward: Annotated[bool, typer.Option("--no-port-forward", help="Only print.")] = False,
    namespace: Namespace = "default",
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Print the Spark UI address; without an Ingress address, port-forward to the driver."""
    sp = _client(kubeconfig, context, namespace)
    if not no_forward and history.open_in_history(sp, name, namespace, port):
        return  # finished: its page in the History Server
    address = sp.ui(name, wait=wait_seconds)
    if address.url:
        out.print(address.url, markup=False)
        return
    if not address.pod:
        raise typer.Exit(1)
    if no_forward:
        err.print(f"no Ingress address yet; the UI is on pod {address.pod} port {address.port}")
        raise typer.Exit(1)
    import threading

    from sparkplane.kube.portforward import forward

    ready, bound = threading.Event(), list[int]()
    thread = threading.Thread(
        target=forward,
        args=(sp.kube, address.pod, namespace, address.port),
        kwargs={"local_port": port, "ready": ready, "bound": bound},
        daemon=True,
    )
    thread.start()
    ready.wait(10)
    local = f"http://127.0.0.1:{bound[0] if bound else port}"
    err.print(
        f"no Ingress address; forwarding {local} -> {namespace}/{address.pod}:"
        f"{address.port} (Ctrl-C to stop)"
    )
    out.print(local, markup=False)
    while thread.is_alive():
        thread.join(1)


def events(
    name: AppName,
    output: OutputOpt = Output.table,
    namespace: Namespace = "default",
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Every event of the application's objects, oldest first."""
    evs = _client(kubeconfig, context, namespace).events(name)
    if output in (Output.yaml, Output.json):
        dump(evs, output)
        return
    table = Table("TIME", "TYPE", "REASON", "OBJECT", "MESSAGE", box=None, header_style="bold")
    for e in evs:
        obj = e.get("involvedObject") or {}
        table.add_row(
            event_time(e),
            e.get("type", ""),
            e.get("reason", ""),
            f"{obj.get('kind', '')}/{obj.get('name', '')}",
            e.get("message", ""),
        )
    out.print(table)


def kill(
    name: AppName,
    wait_: Annotated[
        bool,
        typer.Option(
            "--wait", help="Return once the garbage collector removed every owned object."
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds for --wait.")] = 120.0,
    namespace: Namespace = "default",
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Delete the app's owner (driver pod or SparkApplication) with Background propagation."""
    sp = _client(kubeconfig, context, namespace)
    with err.status(f"killing {name} ...") as status:
        sp.kill(name, wait=wait_, timeout=timeout, progress=status.update)
    err.print(f"{name} killed" + (" and everything it owned is gone" if wait_ else ""))


def gc(
    older_than: Annotated[
        str | None,
        typer.Option(
            help="Default TTL for apps without their own (e.g. 24h); without it only per-app TTLs."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show what would go.")] = False,
    cronjob: Annotated[
        bool,
        typer.Option(
            "--cronjob",
            help="Print a CronJob (and its least-privilege RBAC) running this in-cluster.",
        ),
    ] = False,
    schedule: Annotated[str, typer.Option(help="CronJob schedule.")] = "*/10 * * * *",
    image: Annotated[
        str, typer.Option(help="CronJob image with sparkplane installed.")
    ] = "sparkplane:latest",
    in_cluster: Annotated[
        bool, typer.Option("--in-cluster", help="Use the pod's service account.")
    ] = False,
    namespace: Namespace = "default",
    all_namespaces: AllNamespaces = False,
    output: OutputOpt = Output.table,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Delete finished native drivers past their TTL (and so everything they own)."""
    ttl = parse_duration(older_than) if older_than else None
    if cronjob:
        bundle = (
            [
                gc_cronjob(
                    namespace,
                    older_than=older_than or "24h",
                    schedule=schedule,
                    image=image,
                    all_namespaces=True,
                )
            ]
            if all_namespaces
            else gc_bundle(
                namespace, older_than=older_than or "24h", schedule=schedule, image=image
            )
        )
        dump(bundle, output if output is not Output.table else Output.yaml)
        return
    if in_cluster:
        from sparkplane.kube import Kube, connect

        sp = SparkPlane(Kube(connect(in_cluster=True)), namespace)
    else:
        sp = _client(kubeconfig, context, namespace)
    decisions = sp.gc(older_than=ttl, dry_run=dry_run, all_namespaces=all_namespaces)
    if output in (Output.yaml, Output.json):
        dump(
            [
                {"namespace": d.namespace, "name": d.name, "delete": d.delete, "reason": d.reason}
                for d in decisions
            ],
            output,
        )
        return
    table = Table("NAMESPACE", "DRIVER", "ACTION", "WHY", box=None, header_style="bold")
    for d in decisions:
        action = ("would delete" if dry_run else "deleted") if d.delete else "kept"
        table.add_row(d.namespace, d.name, action, d.reason)
    out.print(table)
