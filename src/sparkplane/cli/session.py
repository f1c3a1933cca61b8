"""``sparkplane session create|list|get|attach|ui|logs|delete``: Spark Connect sessions.

Parses and prints only: each command calls one :class:`~sparkplane.SparkPlane` method
(:mod:`sparkplane.usecases.session`). ``attach`` keeps a port-forward open in the foreground and
prints the ``sc://`` URL (with the session's token) a Spark Connect client uses.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

import typer

from sparkplane.cli.console import Output, dump, note, progress, table, write
from sparkplane.cli.options import AllNamespaces, Context, Kubeconfig, Namespace, client
from sparkplane.model.ttl import format_duration, parse_duration
from sparkplane.usecases.session import SessionInfo

app = typer.Typer(help="Spark Connect sessions: interactive Spark from Python.")
Name = Annotated[str, typer.Argument(help="The session's name.")]
Timeout = Annotated[float, typer.Option(help="Seconds to wait until the server serves.")]


def _duration(text: str, flag: str) -> float:
    return 0.0 if text in ("0", "none") else parse_duration(text, field=flag).total_seconds()


def _short(value: timedelta | None) -> str:
    return format_duration(value) if value is not None else "-"


def _row(s: SessionInfo) -> list[str]:
    return [
        s.name,
        s.namespace,
        s.phase,
        s.owner,
        _short(s.age),
        _short(s.idle),
        f"{_short(s.idle_timeout)}/{_short(s.max_lifetime)}",
        str(s.executors),
        s.ui,
        s.endpoint or "-",
    ]


HEADERS = [
    "NAME",
    "NAMESPACE",
    "PHASE",
    "OWNER",
    "AGE",
    "IDLE",
    "IDLE-TTL/MAX",
    "EXECUTORS",
    "UI",
    "ENDPOINT",
]


def _as_dict(s: SessionInfo) -> dict[str, object]:
    return {
        "name": s.name,
        "namespace": s.namespace,
        "pod": s.pod,
        "phase": s.phase,
        "owner": s.owner,
        "created": s.created.isoformat(),
        "ageSeconds": int(s.age.total_seconds()),
        "idleSeconds": None if s.idle is None else int(s.idle.total_seconds()),
        "idleTimeoutSeconds": None
        if s.idle_timeout is None
        else int(s.idle_timeout.total_seconds()),
        "maxLifetimeSeconds": None
        if s.max_lifetime is None
        else int(s.max_lifetime.total_seconds()),
        "executors": s.executors,
        "ui": s.ui,
        "endpoint": s.endpoint,
    }


def _show(sessions: list[SessionInfo], output: Output) -> None:
    if output in (Output.json, Output.yaml):
        dump([_as_dict(s) for s in sessions], output)
    elif output is Output.name:
        for s in sessions:
            write(s.name)
    else:
        write(table(HEADERS, [_row(s) for s in sessions]))


@app.command("create")
def create(
    name: Annotated[str | None, typer.Argument(help="Name (default: session-XXXXXX).")] = None,
    executors: Annotated[int, typer.Option(help="Executor instances.")] = 1,
    image: Annotated[str | None, typer.Option(help="Spark image (Spark 4.x).")] = None,
    driver_memory: Annotated[str, typer.Option(help="Driver memory.")] = "1g",
    executor_memory: Annotated[str, typer.Option(help="Executor memory.")] = "1g",
    driver_cores: Annotated[str | None, typer.Option(help="Driver CPU request.")] = None,
    executor_cores: Annotated[str | None, typer.Option(help="Executor CPU request.")] = None,
    conf: Annotated[
        list[str] | None, typer.Option("--conf", help="KEY=VALUE Spark property.")
    ] = None,
    idle_timeout: Annotated[
        str, typer.Option(help="End it after this long idle (0: never).")
    ] = "30m",
    max_lifetime: Annotated[str, typer.Option(help="End it after this long (0: never).")] = "8h",
    service_account: Annotated[
        str | None, typer.Option(help="The driver's service account.")
    ] = None,
    expose: Annotated[
        str | None,
        typer.Option(help="Reach it from outside the cluster: `ingress` (TLS, token kept)."),
    ] = None,
    host: Annotated[str | None, typer.Option(help="--expose: the Ingress's host name.")] = None,
    tls_secret: Annotated[
        str | None,
        typer.Option(help="--expose: a kubernetes.io/tls Secret (default: one with a new CA)."),
    ] = None,
    ingress_class: Annotated[
        str | None, typer.Option(help="--expose: IngressClass (default: the cluster's).")
    ] = None,
    ingress_port: Annotated[
        int, typer.Option(help="--expose: the port the ingress controller's TLS listens on.")
    ] = 443,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Until the server serves (gRPC answers).")
    ] = True,
    timeout: Timeout = 300.0,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Start a session's Spark Connect server and wait until it serves."""
    from sparkplane.errors import Problem, ValidationError

    pairs = [c.partition("=") for c in conf or []]
    bad = [k for k, eq, _ in pairs if not eq or not k]
    if bad:
        raise ValidationError(
            [
                Problem(
                    "--conf",
                    f"{k!r} is not KEY=VALUE",
                    "e.g. --conf spark.sql.shuffle.partitions=4",
                )
                for k in bad
            ],
            subject="command line",
        )
    options: dict[str, Any] = {
        "executors": executors,
        "driver_memory": driver_memory,
        "executor_memory": executor_memory,
        "driver_cores": driver_cores,
        "executor_cores": executor_cores,
        "conf": {k: v for k, _, v in pairs},
        "idle_timeout": _duration(idle_timeout, "--idle-timeout"),
        "max_lifetime": _duration(max_lifetime, "--max-lifetime"),
        "service_account": service_account,
        "expose": expose,
        "host": host,
        "tls_secret": tls_secret,
        "ingress_class": ingress_class,
        "ingress_port": ingress_port,
    }
    if image:
        options["image"] = image
    sp = client(kubeconfig, context, namespace)
    made = sp.session_create(name, wait=wait, timeout=timeout, on_progress=progress, **options)
    done = "serves" if wait else "is starting"
    note(f"session {made.name} {done}; connect with: sparkplane session attach {made.name}")
    write(made.name)


@app.command("list")
def list_(
    output: Annotated[Output, typer.Option("-o", "--output")] = Output.table,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Every live session: owner, age, idle time, limits, executors, UI (and, on stderr, the
    namespace's cap on sessions when it has one)."""
    sp = client(kubeconfig, context, namespace)
    found = sp.session_list(all_namespaces=all_namespaces)
    _show(found, output)
    cap = None if all_namespaces else sp.session_limit()
    if cap is not None:
        note(f"{len(found)} of {cap.sessions} sessions (ResourceQuota {cap.quota})")


@app.command("get")
def get(
    name: Name,
    output: Annotated[Output, typer.Option("-o", "--output")] = Output.table,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """One session: owner, age, idle time, limits, executors, UI."""
    sp = client(kubeconfig, context, namespace)
    _show([sp.session_get(name)], output)


@app.command("attach")
def attach(
    name: Name,
    token: Annotated[
        str | None, typer.Option(help="The session's token (default: yours, saved at create).")
    ] = None,
    timeout: Timeout = 300.0,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Forward the session's Spark Connect port to localhost and print its sc:// URL (with
    the token) until interrupted."""
    import threading

    sp = client(kubeconfig, context, namespace)
    attached = sp.session_attach(name, token=token, timeout=timeout, on_progress=progress)
    note(
        f"forwarding localhost:{attached.port} -> {attached.namespace}/{attached.pod} "
        "(Ctrl-C to stop)"
    )
    write(attached.url())
    external = attached.external_url()
    if external:
        trust = f" (trust the CA {attached.ca_file})" if attached.ca_file else ""
        note(f"from outside the cluster, through its Ingress with TLS{trust}:")
        write(external)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        attached.close()


@app.command("ui")
def ui(
    name: Name,
    output: Annotated[Output, typer.Option("-o", "--output")] = Output.table,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """The session's jobs and stages, from its driver's REST API (open the UI itself with
    the `sparkplane ui` command `session get` shows)."""
    from dataclasses import asdict

    sp = client(kubeconfig, context, namespace)
    found = sp.session_ui(name)
    if output in (Output.json, Output.yaml):
        dump(asdict(found), output)
    else:
        write(str(found))


@app.command("logs")
def logs(
    name: Name,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Until the server ends.")] = False,
    tail: Annotated[int | None, typer.Option(help="Only the last N lines.")] = None,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """The session's driver log (its Spark Connect server's)."""
    sp = client(kubeconfig, context, namespace)
    for line in sp.session_logs(name, follow=follow, tail=tail):
        write(line)


@app.command("delete")
def delete(
    name: Name,
    wait: Annotated[
        bool, typer.Option("--wait", help="Until everything it owned is gone.")
    ] = False,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """End a session: its server, executors and token Secret (driver log archived)."""
    sp = client(kubeconfig, context, namespace)
    sp.session_delete(name, wait=wait)
    write(f"session {name} deleted")
