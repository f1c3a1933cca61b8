"""Application operations, kubectl style: logs, ui, events, suspend, resume, kill, gc.

Each command parses its options, calls one :class:`sparkplane.SparkPlane` method and prints
(plain text, never markup); mounted by ``sparkplane.cli.main`` next to ``cli.apps``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sparkplane.cli.apps import AppName, OutputOpt, events_table
from sparkplane.cli.console import Output, Status, dump, note, table, write
from sparkplane.cli.options import AllNamespaces, Context, Kubeconfig, Namespace, client
from sparkplane.version import SPARKPLANE_IMAGE

commands = typer.Typer()


@commands.command()
def logs(
    name: AppName,
    follow: Annotated[
        bool, typer.Option("-f", "--follow", help="Stream until the pod ends.")
    ] = False,
    executor: Annotated[int | None, typer.Option("--executor", help="Executor id instead.")] = None,
    since: Annotated[str | None, typer.Option(help="Only newer lines, e.g. 10m.")] = None,
    tail: Annotated[int | None, typer.Option(help="Only the last N lines.")] = None,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Print the driver's log (or executor N's)."""
    from sparkplane.model.ttl import parse_duration

    sp = client(kubeconfig, context, namespace)
    lines = sp.logs(
        name,
        executor=executor,
        follow=follow,
        tail=tail,
        since=parse_duration(since, field="--since") if since else None,
        notice=note,  # read from the log archive once the pod is gone
    )
    for line in lines:
        write(line)


@commands.command()
def ui(
    name: AppName,
    wait_seconds: Annotated[
        float, typer.Option("--wait", help="Seconds to wait for the Ingress address.")
    ] = 0.0,
    port: Annotated[
        int, typer.Option(help="Local port for the port-forward fallback (0: any free one).")
    ] = 4040,
    no_forward: Annotated[bool, typer.Option("--no-port-forward", help="Only print.")] = False,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Print the Spark UI address; without an Ingress address, port-forward to the driver (a
    finished app: to its page in the namespace's History Server, when there is one)."""
    sp = client(kubeconfig, context, namespace)
    address = sp.ui(name, wait=wait_seconds, history=not no_forward)
    if address.url:
        write(address.url)
        return
    if not address.pod:
        note(
            f"error: {name} has no Spark UI to show: no Ingress with an address and no driver "
            "pod to port-forward to (the app may not have started, or has been cleaned up)"
        )
        raise typer.Exit(8)
    if no_forward:
        note(f"no Ingress address yet; the UI is on pod {address.pod} port {address.port}")
        raise typer.Exit(1)

    def ready(local: str) -> None:
        where = f"{sp.namespace}/{address.pod}"
        if address.via == "history":
            note(f"History Server: forwarding {local} -> {where} (Ctrl-C to stop)")
        else:
            note(
                f"no Ingress address; forwarding {local} -> {where}:{address.port} (Ctrl-C to stop)"
            )
        write(local)

    sp.forward_ui(address, local_port=port, on_ready=ready)


@commands.command()
def events(
    name: AppName,
    output: OutputOpt = Output.table,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Every event of the application's objects, oldest first."""
    evs = client(kubeconfig, context, namespace).events(name)
    if output in (Output.yaml, Output.json):
        dump([dict(e.raw) for e in evs], output)  # the Event objects, as kubectl prints them
    elif output is Output.name:
        for e in evs:
            write(f"event/{e.name}")
    else:
        write(events_table(evs))


@commands.command()
def kill(
    name: AppName,
    wait_: Annotated[
        bool,
        typer.Option(
            "--wait", help="Return once the garbage collector removed every owned object."
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds for --wait.")] = 120.0,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Delete the app's owner (driver pod or SparkApplication) with Background propagation."""
    sp = client(kubeconfig, context, namespace)
    with Status(f"killing {name} ...") as status:
        sp.kill(name, wait=wait_, timeout=timeout, progress=status.update)
    note(f"{name} killed" + (" and everything it owned is gone" if wait_ else ""))


@commands.command()
def suspend(
    name: AppName,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Suspend an operator-mode app: the operator releases its driver and executors (logs
    archived) and holds it Suspended. A native app is refused (exit 12)."""
    done = client(kubeconfig, context, namespace).suspend(name)
    note(
        f"{done.name}: spec.suspend set (was {done.state or 'not reconciled'}); the operator "
        f"releases its pods and holds it Suspended. Resume with `sparkplane resume {done.name}`"
    )


@commands.command()
def resume(
    name: AppName,
    namespace: Namespace = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Resume a suspended operator-mode app (a new attempt). A native app is refused (exit 12)."""
    done = client(kubeconfig, context, namespace).resume(name)
    note(
        f"{done.name}: spec.suspend cleared (was {done.state or 'not reconciled'}); the operator "
        "starts a new attempt"
    )


@commands.command()
def gc(
    older_than: Annotated[
        str | None,
        typer.Option(
            help="Default TTL for apps without their own (e.g. 24h); without it only per-app TTLs."
        ),
    ] = None,
    grace: Annotated[
        str,
        typer.Option(
            help="Half-made apps: how old an unfinished driver whose announced ConfigMaps or "
            "Services never came must be before it is deleted (a submitter killed half-way)."
        ),
    ] = "5m",
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
    ] = SPARKPLANE_IMAGE,
    in_cluster: Annotated[
        bool, typer.Option("--in-cluster", help="Use the pod's service account.")
    ] = False,
    namespace: Namespace = None,
    all_namespaces: AllNamespaces = False,
    output: OutputOpt = Output.table,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Delete finished native drivers past their TTL (and so everything they own)."""
    from sparkplane.manifests.gc import gc_bundle, gc_cronjob
    from sparkplane.model.ttl import parse_duration

    ttl = parse_duration(older_than) if older_than else None
    half_made_after = parse_duration(grace, field="--grace")
    if cronjob:
        ns = namespace or "default"
        bundle = (
            [
                gc_cronjob(
                    ns,
                    older_than=older_than or "24h",
                    schedule=schedule,
                    image=image,
                    all_namespaces=True,
                )
            ]
            if all_namespaces
            else gc_bundle(ns, older_than=older_than or "24h", schedule=schedule, image=image)
        )
        dump(bundle, output if output in (Output.json, Output.yaml) else Output.yaml)
        return
    if in_cluster:
        from sparkplane.api.client import SparkPlane

        sp = SparkPlane.connect(in_cluster=True, namespace=namespace)
    else:
        sp = client(kubeconfig, context, namespace)
    decisions = sp.gc(
        older_than=ttl, dry_run=dry_run, all_namespaces=all_namespaces, grace=half_made_after
    )
    if output in (Output.yaml, Output.json):
        rows = [
            {"namespace": d.namespace, "name": d.name, "delete": d.delete, "reason": d.reason}
            for d in decisions
        ]
        dump(rows, output)
        return
    if output is Output.name:
        for d in decisions:
            if d.delete:
                write(f"pod/{d.name}")
        return
    cells = []
    for d in decisions:
        action = ("would delete" if dry_run else "deleted") if d.delete else "kept"
        cells.append([d.namespace, d.name, action, d.reason])
    write(table(["NAMESPACE", "DRIVER", "ACTION", "WHY"], cells))
