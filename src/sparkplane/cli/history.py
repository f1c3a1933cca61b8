"""``sparkplane history``: deploy (or find) the Spark History Server of a namespace and open it;
``history up|open|conf|down``. Parses and prints only: each command calls one
:class:`~sparkplane.SparkPlane` method (:mod:`sparkplane.usecases.history`), and ``ui APP``
reaches the History Server through :meth:`~sparkplane.SparkPlane.ui` the same way.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sparkplane.api.client import SparkPlane
from sparkplane.cli.console import note, write
from sparkplane.cli.options import Context, Kubeconfig, Namespace, client
from sparkplane.history import server as history
from sparkplane.model.ttl import format_duration, parse_duration
from sparkplane.usecases.history import HistoryDeployed
from sparkplane.usecases.ui import UiAddress
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
    sp = client(kubeconfig, context, namespace)
    deployed = sp.history_ensure()
    if deployed is not None:
        _report(deployed, "created")
    forward(sp, sp.history_address(wait=180.0), port)


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
    s3_endpoint: Annotated[
        str | None,
        typer.Option(help="S3 endpoint URL of an s3a:// store (SeaweedFS, MinIO, Ceph; not AWS)."),
    ] = None,
    s3_secret: Annotated[
        str | None,
        typer.Option(
            help="Secret with AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for an s3a:// store "
            "(drivers and the History Server; default: the pods' own AWS identity)."
        ),
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
    from sparkplane.usecases.history import store_for

    ttl = parse_duration(retention, field="--retention")
    store_for(
        namespace or "NAMESPACE",
        host_path=host_path,
        claim=claim,
        log_dir=log_dir,
        s3_endpoint=s3_endpoint,
        s3_secret=s3_secret,
    )
    sp = client(kubeconfig, context, namespace)  # the options are checked before connecting
    deployed = sp.history_up(
        host_path=host_path,
        claim=claim,
        log_dir=log_dir,
        default=default,
        retention=ttl,
        image=image,
        wait=wait,
        s3_endpoint=s3_endpoint,
        s3_secret=s3_secret,
    )
    _report(deployed, "applied")
    if deployed.pod:
        note(f"History Server ready (pod {deployed.pod}); retention {format_duration(ttl)}")


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
    sp = client(kubeconfig, context, namespace)
    address = sp.history_address(app_id)
    if no_forward:
        write(f"{sp.namespace}/{address.pod}:{address.port}")
        return
    forward(sp, address, port)


@app.command("conf")
def conf(
    namespace: Namespace = None, kubeconfig: Kubeconfig = None, context: Context = None
) -> None:
    """The --conf options that give one app event logs (what the namespace default adds)."""
    for key, value in client(kubeconfig, context, namespace).history_conf().items():
        write(f"--conf {key}={value}")


@app.command("down")
def down(
    namespace: Namespace = None, kubeconfig: Kubeconfig = None, context: Context = None
) -> None:
    """Remove the History Server and the event-log settings (the event logs stay)."""
    sp = client(kubeconfig, context, namespace)
    sp.history_down()
    note(f"History Server of {sp.namespace} removed (event logs kept)")


def _report(deployed: HistoryDeployed, verb: str) -> None:
    """``up`` prints what it applied (stdout, as kubectl apply); the bare command notes what it
    had to create (stderr: its stdout is the URL)."""
    for name in deployed.objects:
        if verb == "created":
            note(f"created {name}")
        else:
            write(f"{name} {verb}")
    for warning in deployed.warnings:
        note(f"warning: {warning}")


def forward(sp: SparkPlane, address: UiAddress, port: int) -> None:
    """Serve ``address`` (the History Server, or one app's page on it) on 127.0.0.1:port;
    prints the URL, blocks until Ctrl-C. A taken port fails before any URL is printed."""

    def ready(url: str) -> None:
        note(f"History Server: forwarding {url} -> {sp.namespace}/{address.pod} (Ctrl-C to stop)")
        write(url)

    sp.forward_ui(address, local_port=port, on_ready=ready)
