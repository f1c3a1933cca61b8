"""How every front end reaches the cluster, and which namespace it means by default.

The CLI and :meth:`sparkplane.SparkPlane.connect` both call :func:`open_connection`:
explicit server/token/CA, else the ``APISERVER``/``TOKEN``/``CACERT`` environment variables of
the seed article (when no kubeconfig or context is named), else in-cluster, else the kubeconfig
(``--kubeconfig``/``$KUBECONFIG``/``~/.kube/config``) and context. The default namespace is the
one named explicitly, else the kubeconfig context's (as kubectl), else the pod's own namespace
in-cluster, else ``default``. :func:`for_master` applies spark-submit's ``--master k8s://…``:
the kubeconfig context whose cluster is that server, or a refusal. Never lists or creates.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sparkplane.errors import ConfigError, Problem, ValidationError
from sparkplane.kube import Kube, connect
from sparkplane.kube.config import context_namespace, contexts_for_server, kubeconfig_files

SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True)
class Connection:
    """What a connection was opened with (so a ``--master`` can reopen it elsewhere)."""

    kubeconfig: str | None = None
    context: str | None = None
    server: str | None = None
    token: str | None = None
    ca_cert: str | None = None
    in_cluster: bool = False

    def open(self) -> Kube:
        return Kube(
            connect(
                kubeconfig=self.kubeconfig,
                context=self.context,
                server=self.server,
                token=self.token,
                ca_cert=self.ca_cert,
                in_cluster=self.in_cluster,
            )
        )

    def default_namespace(self) -> str:
        """The context's namespace (kubectl's rule), the pod's in-cluster, else default."""
        if not self.server and not self.in_cluster and kubeconfig_files(self.kubeconfig):
            return context_namespace(self.kubeconfig, self.context) or "default"
        if (self.in_cluster or not self.server) and SA_NAMESPACE.is_file():
            return SA_NAMESPACE.read_text().strip() or "default"
        return "default"


def resolve(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    server: str | None = None,
    token: str | None = None,
    ca_cert: str | None = None,
    in_cluster: bool = False,
    env: Mapping[str, str] | None = None,
) -> Connection:
    """The connection the arguments (and, failing them, the environment) describe."""
    environ = os.environ if env is None else env
    if not server and not in_cluster and kubeconfig is None and context is None:
        server = environ.get("APISERVER") or None
        if server:
            token, ca_cert = environ.get("TOKEN"), environ.get("CACERT")
    return Connection(
        str(kubeconfig) if kubeconfig is not None else None,
        context,
        server,
        token,
        ca_cert,
        in_cluster,
    )


def for_master(conn: Connection, current_server: str, master: str | None) -> Connection | None:
    """The connection spark-submit's ``--master`` asks for: None if it is the current one;
    else the kubeconfig context whose cluster is that server; else a ValidationError."""
    if master is None:
        return None
    from sparkplane.spec.submit_args import k8s_master_url

    url = k8s_master_url(master).rstrip("/")
    if url == current_server.rstrip("/"):
        return None
    names = [] if conn.server or conn.in_cluster else contexts_for_server(conn.kubeconfig, url)
    if not names:
        raise ValidationError(
            [
                Problem(
                    "--master",
                    f"no credentials for {url}: the connection goes to {current_server} and no "
                    "kubeconfig context names a cluster at that address",
                    "add a context for that cluster to the kubeconfig, pass --context, or "
                    "leave --master out",
                )
            ],
            subject="spark-submit arguments",
        )
    if conn.context and conn.context not in names:
        raise ConfigError(
            f"--master {master} is not the cluster of context {conn.context!r} "
            f"(contexts for it: {', '.join(names)})"
        )
    return Connection(conn.kubeconfig, names[0])
