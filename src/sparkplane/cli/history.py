"""``sparkplane history``: deploy (or find) the Spark History Server of a namespace and open it;
``history up|conf|down``; and the History Server side of ``sparkplane ui APP`` for finished apps
(:func:`open_in_history`, called by ``ui``). The objects and settings are built by
:mod:`sparkplane.history.server`, deployed by :mod:`sparkplane.history.server_kube`.
"""

from __future__ import annotations

import threading
import time
from typing import Annotated

import typer

from sparkplane.api.client import SparkPlane
from sparkplane.cli.console import note, write
from sparkplane.cli.options import Context, Kubeconfig, Namespace, client
from sparkplane.errors import (
    AppNotFoundError,
    KubeError,
    Problem,
    TimeoutExpired,
    ValidationError,
)
from sparkplane.history import server as history
from sparkplane.history import server_kube as history_kube
from sparkplane.history.logs import archived_meta
from sparkplane.kube import Kube
from sparkplane.model.phase import is_finished
from sparkplane.model.ttl import format_duration, parse_duration
from sparkplane.version import SPARK_IMAGE

app = typer.Typer(
    help="The Spark History Server: event logs of finished apps (bare: open it, deploying it "
    "with the defaults if the namespace has none).",
    invoke_without_command=True,
)
Port = Annotated[int, typer.Option(help="Local port of the port-forward (0: any free one).")]
NoForward = Annotated[bool, typer.Option("--no-port-forward", help="Only print the pod.")]


@app.callback()
def main(
    ctx: typer.Context,
    port: Port = 18080,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Open the namespace's History Server (deploying it with the defaults if missing)."""
    if ctx.invoked_subcommand is not None:
        return
    kube, namespace = _connect(kubeconfig, context, namespace)
    if history_kube.find_store(kube, namespace) is None:
        store = history.EventLogStore(host_path=history.default_host_path(namespace))
        for name in history_kube.deploy(kube, namespace, store, SPARK_IMAGE):
            note(f"created {name}")
        _warn_if_shared(kube, namespace)
    forward(kube, namespace, _ready_pod(kube, namespace, 180.0), port, "/")


@app.command("up")
def up(
    host_path: Annotated[
        str | None,
        typer.Option(
            help="Event logs on this node path (single-node/dev clusters; default "
            f"{history.DEFAULT_ROOT}/NAMESPACE: each namespace its own)."
        ),
    ] = None,
    claim: Annotated[
        str | None, typer.Option(help="Event logs on this PersistentVolumeClaim (ReadWriteMany).")
    ] = None,
    log_dir: Annotated[
        str | None, typer.Option(help="Your own store: an s3a://, gs://, abfs://, hdfs:// URI.")
    ] = None,
    default: Annotated[
        bool, typer.Option("--default/--opt-in", help="Event logs for every app of the namespace.")
    ] = True,
    retention: Annotated[str, typer.Option(help="History Server cleaner max age.")] = "7d",
    image: Annotated[str, typer.Option(help="Spark image (its History Server).")] = SPARK_IMAGE,
    wait: Annotated[float, typer.Option(help="Seconds to wait until it is ready (0: no).")] = 0,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Deploy (or update) the History Server and the namespace's event-log settings."""
    if sum(x is not None for x in (host_path, claim, log_dir)) > 1:
        raise ValidationError(
            [Problem("--host-path/--claim/--log-dir", "more than one store", "choose one")],
            subject="history up",
        )
    example = history.default_host_path(namespace or "NAMESPACE")
    if host_path is not None and not host_path.startswith("/"):
        raise ValidationError(
            [Problem("--host-path", f"{host_path!r} is not absolute", "e.g. " + example)],
            subject="history up",
        )
    ttl = parse_duration(retention, field="--retention")
    kube, namespace = _connect(kubeconfig, context, namespace)
    if host_path is None and claim is None and log_dir is None:
        host_path = history.default_host_path(namespace)  # the namespace's own directory
    store = history.EventLogStore(
        log_dir=log_dir or f"file:{history.MOUNT}",
        host_path=host_path,
        claim=claim,
        default=default,
        retention=ttl,
    )
    for name in history_kube.deploy(kube, namespace, store, image):
        write(f"{name} applied")
    _warn_if_shared(kube, namespace)
    if wait:
        pod = _ready_pod(kube, namespace, wait)
        note(f"History Server ready (pod {pod}); retention {format_duration(store.retention)}")


@app.command("open")
def open_(
    app_id: Annotated[str | None, typer.Option("--app-id", help="Open this app's page.")] = None,
    port: Port = 18080,
    no_forward: NoForward = False,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Port-forward to the History Server and print its local URL (Ctrl-C to stop)."""
    kube, namespace = _connect(kubeconfig, context, namespace)
    pod = _ready_pod(kube, namespace, 0)
    if no_forward:
        write(f"{namespace}/{pod}:{history.PORT}")
        return
    forward(kube, namespace, pod, port, history.app_path(app_id) if app_id else "/")


@app.command("conf")
def conf(
    namespace: Namespace = None, kubeconfig: Kubeconfig = None, context: Context = None
) -> None:
    """The --conf options that give one app event logs (what the namespace default adds)."""
    kube, namespace = _connect(kubeconfig, context, namespace)
    store = history_kube.find_store(kube, namespace)
    if store is None:
        raise AppNotFoundError(f"no History Server in {namespace}: run `sparkplane history up`")
    for key, value in history.event_log_conf(store).items():
        write(f"--conf {key}={value}")


@app.command("down")
def down(
    namespace: Namespace = None, kubeconfig: Kubeconfig = None, context: Context = None
) -> None:
    """Remove the History Server and the event-log settings (the event logs stay)."""
    kube, namespace = _connect(kubeconfig, context, namespace)
    history_kube.remove(kube, namespace)
    note(f"History Server of {namespace} removed (event logs kept)")


def _warn_if_shared(kube: Kube, namespace: str) -> None:
    """Warn (stderr) when another namespace's event-log store overlaps this one's; quiet when
    this identity may not list other namespaces (the operator warns then)."""
    try:
        shared = history_kube.sharing(kube)
    except KubeError:
        return
    for what, names in shared:
        if namespace in names:
            others = ", ".join(n for n in names if n != namespace)
            note(
                f"warning: {namespace} shares its event-log store ({what}) with {others}: "
                "each History Server lists the others' apps and their drivers can change them; "
                "give each namespace its own (omit --host-path for the default)"
            )


def _connect(
    kubeconfig: str | None, context: str | None, namespace: str | None
) -> tuple[Kube, str]:
    sp = client(kubeconfig, context, namespace)
    return sp.kube, sp.namespace


def _ready_pod(kube: Kube, namespace: str, wait: float) -> str:
    deadline = time.monotonic() + wait
    while (pod := history_kube.server_pod(kube, namespace)) is None:
        if time.monotonic() >= deadline:
            if history_kube.find_store(kube, namespace) is None:
                raise AppNotFoundError(
                    f"no History Server in {namespace}: run `sparkplane history up -n {namespace}`"
                )
            raise TimeoutExpired(f"the History Server of {namespace} is not ready (yet)")
        time.sleep(1)
    return pod


def forward(kube: Kube, namespace: str, pod: str, port: int, path: str) -> None:
    """Serve the History Server on 127.0.0.1:port; prints the URL, blocks until Ctrl-C."""
    from sparkplane.kube.portforward import forward as pf
    from sparkplane.kube.portforward import listen

    server = listen(port)  # a taken port fails here (LocalPortError), before any URL
    thread = threading.Thread(
        target=pf, args=(kube, pod, namespace, history.PORT, server), daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}{path}"
    note(f"History Server: forwarding {url} -> {namespace}/{pod} (Ctrl-C to stop)")
    write(url)
    while thread.is_alive():
        thread.join(1)


def open_in_history(sp: SparkPlane, name: str, namespace: str, port: int) -> bool:
    """For ``ui``: open a finished (or deleted) app's page in the History Server; False when
    the app still runs (its own UI serves it) or there is nothing to open."""
    deleted: AppNotFoundError | None = None
    try:
        current = sp.get(name, namespace)
    except AppNotFoundError as exc:
        meta = archived_meta(namespace, name, kube=sp.kube)
        if meta is None:
            raise
        deleted, app_id = exc, meta.app_id
    else:
        if not is_finished(current.state):
            return False
        kept = None if current.app_id else archived_meta(namespace, name, kube=sp.kube)
        app_id = current.app_id or (kept.app_id if kept else None)  # released: only archived
    pod = history_kube.server_pod(sp.kube, namespace)
    if (not app_id or pod is None) and deleted is None:
        return False  # the driver pod is still there: as before, its own UI address
    if not app_id or pod is None:
        raise AppNotFoundError(
            f"{deleted}; its log is in the archive (`sparkplane logs {name}`); its UI would be "
            f"in a History Server (`sparkplane history up -n {namespace}` before running apps)"
        )
    forward(sp.kube, namespace, pod, port, history.app_path(app_id))
    return True
