"""Application commands, kubectl style: get, describe, wait (logs, ui, events, kill and gc
are in ``cli.operations``).

Each command parses its options, calls one :class:`sparkplane.SparkPlane` method and prints.
Tables are plain text (``cli.console.table``), ``-o json|yaml|name`` are exact, ``get -w``
prints one row (or one JSON object) per change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer

from sparkplane.cli.console import Output, Status, dump, note, table, write
from sparkplane.cli.options import (
    AllNamespaces,
    Context,
    Kubeconfig,
    Namespace,
    client,
    seconds_option,
)
from sparkplane.model.phase import AppPhase, is_finished

if TYPE_CHECKING:
    from sparkplane.api.client import SparkPlane
    from sparkplane.model.apps import App
    from sparkplane.model.phase import Event

commands = typer.Typer()
get_app = typer.Typer(help="Show resources (kubectl style).", no_args_is_help=True)
commands.add_typer(get_app, name="get")
OutputOpt = Annotated[
    Output, typer.Option("-o", "--output", help="table, wide, yaml, json or name.")
]
AppName = Annotated[str, typer.Argument(help="Application name (native or SparkApplication).")]
Selector = Annotated[
    str | None,
    typer.Option("-l", "--selector", help="Label selector, e.g. team=data,tier!=batch."),
]


def _age(app: App) -> str:
    from sparkplane.model.ttl import format_duration

    if not app.created:
        return "?"
    return format_duration(
        timedelta(seconds=int((datetime.now(UTC) - app.created).total_seconds()))
    )


def _headers(wide: bool, all_ns: bool) -> list[str]:
    cols = ["NAME", "MODE", "STATE", "REASON", "AGE", "DRIVER", "EXECUTORS"]
    return (
        (["NAMESPACE"] if all_ns else [])
        + cols
        + (["APP ID", "PREEMPTOR", "MESSAGE"] if wide else [])
    )


def _row(a: App, wide: bool, all_ns: bool) -> list[str]:
    ex = a.state.executors
    execs = f"{ex.get('running', 0)}/{sum(ex.values())}" if ex else "0"
    row = ([a.namespace] if all_ns else []) + [
        a.name,
        a.mode.value,
        str(a.state.phase),
        str(a.state.reason or ""),
        _age(a),
        a.driver_pod or "",
        execs,
    ]
    if wide:
        row += [a.app_id or "", a.state.preemptor or "", a.state.message]
    return row


def _name(a: App) -> str:
    kind = "pod" if a.mode.value == "native" else "sparkapplication"
    return f"{kind}/{a.driver_pod if kind == 'pod' else a.name}"


def _print_apps(apps: list[App], output: Output, all_ns: bool, *, header: bool = True) -> None:
    if output is Output.name:
        for a in apps:
            write(_name(a))
    elif output in (Output.table, Output.wide):
        wide = output is Output.wide
        write(table(_headers(wide, all_ns), [_row(a, wide, all_ns) for a in apps], header=header))


@get_app.command("apps")
def get_apps(
    name: Annotated[str | None, typer.Argument(help="Only this application.")] = None,
    namespace: Namespace = None,
    all_namespaces: AllNamespaces = False,
    selector: Selector = None,
    output: OutputOpt = Output.table,
    watch: Annotated[
        bool, typer.Option("-w", "--watch", help="Keep printing one line per state change.")
    ] = False,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """List applications (both modes) with state, age, driver and executor counts."""
    sp = client(kubeconfig, context, namespace)
    apps = [sp.get(name)] if name else sp.list(all_namespaces=all_namespaces, selector=selector)
    if output in (Output.yaml, Output.json) and not watch:
        dump([a.summary() for a in apps] if not name else apps[0].summary(), output)
    elif output in (Output.yaml, Output.json):
        for a in apps:
            _print_change(a, output)
    elif not apps:
        where = "any namespace" if all_namespaces else f"namespace {sp.namespace}"
        note(f"No Spark applications in {where}.")
    else:
        _print_apps(apps, output, all_namespaces)
    if watch:
        _watch(sp, apps, name, selector, output, all_namespaces)


def _print_change(app: App, output: Output) -> None:
    if output is Output.json:
        write(json.dumps(app.summary(), default=str))  # one object per line
    else:
        dump(app.summary(), output)
        write("---")


def _watch(
    sp: SparkPlane,
    apps: list[App],
    name: str | None,
    selector: str | None,
    output: Output,
    all_ns: bool,
) -> None:
    seen = {(a.namespace, a.name): a.state for a in apps}
    header = not apps  # kubectl prints the header once, with the first row
    wanted = {(a.namespace, a.name) for a in sp.list(selector=selector)} if selector else None
    for app in sp.watch(None if all_ns else sp.namespace):
        key = (app.namespace, app.name)
        if (name and app.name != name) or (wanted is not None and key not in wanted):
            continue
        if seen.get(key) == app.state:
            continue
        seen[key] = app.state
        if output in (Output.yaml, Output.json):
            _print_change(app, output)
        else:
            _print_apps([app], output, all_ns, header=header)
            header = False


@commands.command()
def describe(
    name: AppName,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Show one application in detail: state, driver, objects it owns, and its events."""
    info = client(kubeconfig, context, namespace).describe(name)
    app, st = info.app, info.app.state
    fields = [
        ("Name", app.name),
        ("Namespace", app.namespace),
        ("Mode", app.mode.value),
        ("App ID", app.app_id or ""),
        ("Driver", app.driver_pod or ""),
        ("Created", app.created.isoformat() if app.created else ""),
        ("State", st.phase.value),
        ("Reason", str(st.reason or "")),
        ("Message", st.message or ""),
        ("Preemptor", st.preemptor or ""),
        ("Executors", ", ".join(f"{k}={v}" for k, v in st.executors.items()) or "0"),
        ("Objects", ", ".join(info.objects) or "<none>"),
    ]
    write(table(["", ""], [[f"{k}:", str(v)] for k, v in fields], header=False))
    write("Events:")
    write(events_table(info.events) if info.events else "  <none>")


def wait_for_app(
    sp: SparkPlane, name: str, namespace: str, until: str, timeout: float | None
) -> App:
    """Wait with a live status line (elapsed time ticking); exit 1 if the app failed."""
    with Status(f"waiting for {name} ...") as status:

        def show(app: App) -> None:
            st = app.state
            status.update(f"{name}: {st.phase}{f' ({st.reason})' if st.reason else ''}")

        app = sp.wait(name, until, timeout=timeout, on_change=show, namespace=namespace)
    st = app.state
    note(
        f"{name}: {st.phase}{f' ({st.reason})' if st.reason else ''}"
        f"{f' - {st.message}' if st.message else ''}"
    )
    if is_finished(st) and st.phase is AppPhase.FAILED:
        raise typer.Exit(1)
    return app


@commands.command()
def wait(
    name: AppName,
    until: Annotated[
        str, typer.Option("--for", help="finished, running, pending, succeeded or failed.")
    ] = "finished",
    timeout: Annotated[
        float | None,
        typer.Option(help="Seconds (exit code 9 when exceeded).", callback=seconds_option),
    ] = None,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Wait for an application; exit 0 when reached, 1 if it failed, 9 on timeout."""
    from sparkplane.usecases.waiting import condition

    condition(until)  # a bad --for is exit 2 before anything is contacted
    sp = client(kubeconfig, context, namespace)
    wait_for_app(sp, name, sp.namespace, until, timeout)


def events_table(evs: Sequence[Event]) -> str:
    """TIME TYPE REASON OBJECT MESSAGE, one row per event."""
    rows = [
        [
            e.time.strftime("%Y-%m-%dT%H:%M:%SZ") if e.time else "",
            e.type,
            e.reason,
            e.object,
            e.message,
        ]
        for e in evs
    ]
    return table(["TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"], rows)
