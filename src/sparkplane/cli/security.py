"""``sparkplane rbac`` and ``sparkplane kubeconfig``: least-privilege identities and their
credentials. Parse and print only: :meth:`~sparkplane.SparkPlane.rbac` and
:meth:`~sparkplane.SparkPlane.kubeconfig` do the work (the rules live in ``sparkplane.security``).

Mount both as top-level commands: ``root.add_typer(security.app)`` (no name) or
``root.command("rbac")(security.rbac)`` and ``root.command("kubeconfig")(security.kubeconfig)``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from sparkplane.api.client import SparkPlane
from sparkplane.cli.console import err, out, progress
from sparkplane.cli.options import Context, Kubeconfig, client, namespace_option
from sparkplane.model.ttl import parse_duration
from sparkplane.security.rbac import to_json, to_yaml
from sparkplane.security.rules import Identity
from sparkplane.usecases.kubeconfig import check_duration, write_private

app = typer.Typer(no_args_is_help=True)


class Format(StrEnum):
    """Output formats of ``sparkplane rbac``."""

    yaml = "yaml"
    json = "json"


TargetNamespaces = Annotated[
    list[str] | None,
    typer.Option(
        "--target-namespace",
        help="operator/staging/gc: a namespace it acts in (repeatable; default: -n).",
        show_default=False,
    ),
]


@app.command("rbac")
def rbac(
    identity: Annotated[Identity, typer.Argument(help="Which identity to render.")],
    namespace: Annotated[
        str,
        typer.Option(
            "-n",
            "--namespace",
            help="Namespace of the service account.",
            show_default=False,
            callback=namespace_option,
        ),
    ],
    service_account: Annotated[
        str | None,
        typer.Option(help="Service account name (default: sparkplane-<identity>, spark-driver)."),
    ] = None,
    target_namespace: TargetNamespaces = None,
    cluster_wide: Annotated[
        bool, typer.Option(help="operator/staging/gc: act in every namespace (ClusterRole).")
    ] = False,
    output: Annotated[Format, typer.Option("-o", "--output", help="yaml or json.")] = Format.yaml,
    apply: Annotated[
        bool, typer.Option("--apply", help="Server-side apply instead of printing.")
    ] = False,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Render (or --apply) the minimal RBAC of an identity; every rule says why it exists."""
    sp = client(kubeconfig, context, namespace) if apply else SparkPlane.offline(namespace)
    try:
        objects = sp.rbac(
            identity,
            namespace,
            service_account=service_account,
            target_namespaces=target_namespace or (),
            cluster_wide=cluster_wide,
            apply=apply,
            progress=progress,
        )
    finally:
        sp.close()
    if not apply:
        text = to_json(objects) + "\n" if output is Format.json else to_yaml(objects)
        out.print(text, end="", markup=False, highlight=False)


@app.command("kubeconfig")
def kubeconfig(
    service_account: Annotated[
        str, typer.Option("--service-account", help="Service account to mint a token for.")
    ],
    namespace: Annotated[
        str,
        typer.Option(
            "-n",
            "--namespace",
            help="Its namespace (set in the context).",
            callback=namespace_option,
        ),
    ],
    duration: Annotated[
        str, typer.Option(help="Token lifetime, e.g. 30m, 1h, 7d (10m to 7d).")
    ] = "1h",
    force: Annotated[
        bool, typer.Option("--force", help="Allow a --duration longer than 7d.")
    ] = False,
    output_file: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write here with mode 0600 (default: stdout)."),
    ] = None,
    cluster_name: Annotated[str, typer.Option(help="Cluster name in the file.")] = "sparkplane",
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Write a kubeconfig for a service account (TokenRequest API, CA embedded, expiring)."""
    lifetime = parse_duration(duration, field="--duration")
    check_duration(lifetime, force=force)  # before connecting
    with client(kubeconfig, context, namespace) as sp:
        minted = sp.kubeconfig(
            service_account, namespace, duration=lifetime, cluster_name=cluster_name, force=force
        )
    if output_file is None or str(output_file) == "-":
        out.print(minted.text(), end="", markup=False, highlight=False)
    else:
        write_private(output_file, minted.text())
        progress(f"wrote {output_file} (mode 0600)")
    err.print(f"token for {namespace}/{service_account} expires {minted.expires}", markup=False)
