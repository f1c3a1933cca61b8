"""Options every cluster-facing command shares, kubectl style, and the client they build."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from sparkplane.kube import Kube, connect

Kubeconfig = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        help="Path of the kubeconfig (default: $KUBECONFIG, ~/.kube/config).",
        envvar="SPARKPLANE_KUBECONFIG",
        show_default=False,
    ),
]
Context = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="kubeconfig context to use (never silently defaulted).",
        show_default=False,
    ),
]
Namespace = Annotated[
    str,
    typer.Option("-n", "--namespace", help="Namespace.", envvar="SPARKPLANE_NAMESPACE"),
]
AllNamespaces = Annotated[
    bool, typer.Option("-A", "--all-namespaces", help="Across all namespaces.")
]


def make_kube(kubeconfig: str | None = None, context: str | None = None) -> Kube:
    """A gateway from the common options, or from APISERVER/TOKEN/CACERT (the seed's hard way)."""
    server = os.environ.get("APISERVER")
    if server and not kubeconfig and not context:
        return Kube(
            connect(server=server, token=os.environ.get("TOKEN"), ca_cert=os.environ.get("CACERT"))
        )
    return Kube(connect(kubeconfig=kubeconfig, context=context))
