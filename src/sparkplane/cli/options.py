"""Options every cluster-facing command shares, kubectl style, and the client they build.

``-n`` defaults to the kubeconfig context's namespace (kubectl's rule), resolved by the
use-case layer (:mod:`sparkplane.usecases.connection`), as for ``SparkPlane.connect``. A ``-n``
given must name a namespace: ``-n ''`` is refused (it would silently mean the default one).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sparkplane.vocab import is_dns1123_label

if TYPE_CHECKING:
    from sparkplane.api.client import SparkPlane
    from sparkplane.kube import Kube

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


def namespace_option(value: str | None) -> str | None:
    """``-n``: None when not given, else a valid namespace name (ValidationError, exit 2)."""
    if value is None or is_dns1123_label(value):
        return value
    from sparkplane.errors import Problem, ValidationError

    what = "is empty" if not value.strip() else f"{value[:70]!r} is not a valid namespace name"
    raise ValidationError(
        [
            Problem(
                "--namespace",
                what,
                "give a namespace name: lowercase letters, digits and '-', at most 63 characters",
            )
        ],
        subject="command line",
    )


def seconds_option(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> Any:
    """A number of seconds (``--timeout``): finite and not negative (``nan``, ``inf`` and a
    5000-digit number, which is infinity as a float, are refused with exit 2)."""
    if value is None or (math.isfinite(value) and value >= 0):
        return value
    from sparkplane.errors import Problem, ValidationError

    flag = max(param.opts, key=len) if param.opts else str(param.name)
    raise ValidationError(
        [Problem(flag, f"{value} is not a number of seconds", "a number >= 0, e.g. 300")],
        subject="command line",
    )


Namespace = Annotated[
    str | None,
    typer.Option(
        "-n",
        "--namespace",
        help="Namespace (default: the kubeconfig context's, else default).",
        envvar="SPARKPLANE_NAMESPACE",
        show_default=False,
        callback=namespace_option,
    ),
]
AllNamespaces = Annotated[
    bool, typer.Option("-A", "--all-namespaces", help="Across all namespaces.")
]


def client(kubeconfig: str | None, context: str | None, namespace: str | None) -> SparkPlane:
    """The Python API's client for these options (the CLI calls nothing else)."""
    from sparkplane.api.client import SparkPlane

    return SparkPlane.connect(kubeconfig=kubeconfig, context=context, namespace=namespace)


def make_kube(kubeconfig: str | None = None, context: str | None = None) -> Kube:
    """A gateway from the common options, or from APISERVER/TOKEN/CACERT (the seed's hard way)."""
    from sparkplane.usecases.connection import resolve

    return resolve(kubeconfig=kubeconfig, context=context).open()
