"""An Airflow Connection read as sparkplane's connect and submit keyword arguments (pure).

The ``sparkplane`` connection type: ``host`` is the API server (with ``password`` its bearer
token and extra ``ca_cert`` a CA file), or extra ``kubeconfig``/``context``, or extra
``in_cluster: true``; no field at all means sparkplane's own defaults (``SPARKPLANE_KUBECONFIG``,
``KUBECONFIG``, ``~/.kube/config``). Extra ``namespace`` is the default namespace; extra
``staging_server``/``staging_ca_file``/``staging_token`` the staging server for local files;
extra ``ui_url`` an URL template for the Spark UI link (``{name}``, ``{namespace}``, ``{app_id}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONNECT_EXTRAS = ("kubeconfig", "context", "namespace", "ca_cert")
SUBMIT_EXTRAS = ("staging_server", "staging_ca_file", "staging_token")
KNOWN_EXTRAS = frozenset({*CONNECT_EXTRAS, *SUBMIT_EXTRAS, "in_cluster", "ui_url"})


class ConnectionFieldError(ValueError):
    """A field of the connection is wrong; the message names it and the fix."""


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("1", "true", "yes")


def connect_kwargs(
    host: str | None, password: str | None, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """``SparkPlane.connect`` keyword arguments for a connection's fields."""
    unknown = sorted(set(extra) - KNOWN_EXTRAS)
    if unknown:
        raise ConnectionFieldError(
            f"sparkplane connection: unknown extra field(s) {', '.join(unknown)} "
            f"(known: {', '.join(sorted(KNOWN_EXTRAS))})"
        )
    kwargs: dict[str, Any] = {k: str(extra[k]) for k in CONNECT_EXTRAS if extra.get(k)}
    if _truthy(extra.get("in_cluster", False)):
        kwargs["in_cluster"] = True
    if host:
        server = host if "://" in host else f"https://{host}"
        kwargs["server"] = server
        if password:
            kwargs["token"] = password
    if kwargs.get("in_cluster") and ("server" in kwargs or "kubeconfig" in kwargs):
        raise ConnectionFieldError(
            "sparkplane connection: in_cluster is set together with a host or kubeconfig "
            "(keep one way to reach the cluster)"
        )
    return kwargs


def submit_kwargs(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``SparkPlane.submit`` keyword arguments the connection adds (the staging server)."""
    return {k: str(extra[k]) for k in SUBMIT_EXTRAS if extra.get(k)}


def ui_link(extra: Mapping[str, Any], name: str, namespace: str, app_id: str | None) -> str | None:
    """The connection's ``ui_url`` template filled in, if it has one."""
    template = extra.get("ui_url")
    if not template:
        return None
    return str(template).format(name=name, namespace=namespace, app_id=app_id or "")
