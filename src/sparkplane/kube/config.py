"""Client configuration: the three ways of the seed article to reach a cluster.

1. a kubeconfig file and context (a path or context that was named but does not exist is an
   error, never a silent fall-back to the user's default);
2. the in-cluster service account;
3. the "hard way": an explicit server URL, bearer token and CA certificate (taken from the
   ``APISERVER``, ``TOKEN`` and ``CACERT`` environment variables by the CLI). The CA is handed to
   the TLS layer as data, so no temporary certificate file is left behind.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from sparkplane.errors import ConfigError

POOL_SIZE = 64  # connections per host: submissions and watches run concurrently


def connect(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    server: str | None = None,
    token: str | None = None,
    ca_cert: str | None = None,
    in_cluster: bool = False,
) -> k8s.ApiClient:
    """Build an ``ApiClient``; see the module docstring for the precedence of the three ways."""
    if server:
        return _explicit(server, token, ca_cert)
    if in_cluster:
        return _in_cluster()
    return _from_kubeconfig(kubeconfig, context)


def _finish(cfg: k8s.Configuration) -> k8s.ApiClient:
    cfg.connection_pool_maxsize = POOL_SIZE
    return k8s.ApiClient(cfg)


def _explicit(server: str, token: str | None, ca_cert: str | None) -> k8s.ApiClient:
    if not token:
        raise ConfigError(f"a server ({server}) was given without a token: set TOKEN or --token")
    cfg = k8s.Configuration(host=server)
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    if ca_cert:
        # PEM text or a path; either way it is passed as data (no temp file is written).
        text = Path(ca_cert).read_text() if not ca_cert.lstrip().startswith("-----") else ca_cert
        cfg.ca_cert_data = text
    else:
        raise ConfigError(
            f"no CA certificate for {server}: set CACERT to the cluster CA (PEM data or a path); "
            "sparkplane does not disable TLS verification"
        )
    return _finish(cfg)


def _in_cluster() -> k8s.ApiClient:
    cfg = k8s.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
    except ConfigException as exc:
        raise ConfigError(f"not running inside a cluster: {exc}") from exc
    return _finish(cfg)


def _from_kubeconfig(path: str | os.PathLike[str] | None, context: str | None) -> k8s.ApiClient:
    if path is not None and not Path(path).is_file():
        raise ConfigError(f"kubeconfig {path} does not exist (it was named explicitly)")
    env_path = os.environ.get("KUBECONFIG")
    file = os.fspath(path) if path is not None else None
    cfg = k8s.Configuration()
    try:
        if context is not None:
            contexts, _ = k8s_config.list_kube_config_contexts(config_file=file)
            names = [c["name"] for c in contexts]
            if context not in names:
                raise ConfigError(
                    f"context {context!r} is not in {path or env_path or '~/.kube/config'}; "
                    f"known contexts: {', '.join(names) or 'none'}"
                )
        k8s_config.load_kube_config(
            config_file=file,
            context=context,
            client_configuration=cfg,
        )
    except ConfigException as exc:
        raise ConfigError(f"cannot load kubeconfig: {exc}") from exc
    return _finish(cfg)
