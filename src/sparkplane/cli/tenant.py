"""``sparkplane tenant setup``: hold a namespace to the tenant pod policy. Parses and prints only;
the use case is :meth:`sparkplane.SparkPlane.tenant_setup` (docs/security.md)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from sparkplane.cli.console import out, progress
from sparkplane.cli.options import Context, Kubeconfig, client, namespace_option

app = typer.Typer(no_args_is_help=True, help="Tenant namespaces held to the pod policy.")


@app.callback()
def tenant() -> None:
    """Tenant namespaces held to the pod policy (docs/security.md)."""


@app.command("setup")
def setup(
    namespace: Annotated[
        str,
        typer.Option(
            "-n",
            "--namespace",
            help="The tenant's namespace.",
            show_default=False,
            callback=namespace_option,
        ),
    ],
    driver_service_account: Annotated[
        str, typer.Option(help="The drivers' service account (the driver role).")
    ] = "spark-driver",
    executor_service_account: Annotated[
        list[str] | None,
        typer.Option(help="Another account executors may run as (repeatable).", show_default=False),
    ] = None,
    allow: Annotated[
        list[str] | None,
        typer.Option(
            help="Opt this namespace out of one check: privileged, host-namespaces, host-path, "
            "capabilities, privilege-escalation, system-priority, driver-statefulsets "
            "(repeatable).",
            show_default=False,
        ),
    ] = None,
    allow_secret: Annotated[
        list[str] | None,
        typer.Option(
            help="A Secret pods may use; NAME or PREFIX* (repeatable).", show_default=False
        ),
    ] = None,
    executor_volume: Annotated[
        list[str] | None,
        typer.Option(
            help="A ConfigMap or PVC a driver's executors may mount besides their own "
            "(repeatable).",
            show_default=False,
        ),
    ] = None,
    quota: Annotated[
        str, typer.Option(help="The tenant's ResourceQuota, RESOURCE=AMOUNT,... ('' for none).")
    ] = "pods=200",
    pod_security: Annotated[
        str | None,
        typer.Option(
            help="Pod Security Admission level: baseline, restricted or privileged (default: "
            "baseline, privileged when --allow needs it).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("-o", "--output", help="yaml or json: print the objects, apply nothing."),
    ] = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Admission policies, namespace labels, the client and driver roles and quotas (admin)."""
    from sparkplane.api.client import SparkPlane
    from sparkplane.errors import Problem, ValidationError
    from sparkplane.security.admission import parse_quota, to_yaml

    if output not in (None, "yaml", "json"):
        raise ValidationError([Problem("--output", f"{output!r}", "yaml or json")], subject="flags")
    options: dict[str, Any] = {
        "driver_service_account": driver_service_account,
        "executor_service_accounts": executor_service_account or (),
        "allow": allow or (),
        "secrets": allow_secret or (),
        "executor_volumes": executor_volume or (),
        "quota": parse_quota(quota),
        "pod_security": pod_security,
    }
    if output is not None:
        objects = SparkPlane.offline(namespace).tenant_setup(namespace, apply=False, **options)
        text = to_yaml(objects) if output == "yaml" else json.dumps(objects, indent=2) + "\n"
        out.print(text, end="", markup=False, highlight=False)
        return
    with client(kubeconfig, context, namespace) as plane:
        for obj in plane.tenant_setup(namespace, **options):
            meta = obj.get("metadata") or {}
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            progress(f"applied {obj.get('kind')} {where}{meta.get('name')}")
