"""Client configuration: the three ways of the seed article to reach a cluster.

1. a kubeconfig file and context. A path or context that was named but does not exist is an
   error, never a silent fall-back to the user's default. Nothing named: ``$KUBECONFIG`` (a
   list, merged as kubectl does: the first file to define a name wins), else
   ``~/.kube/config``, else, inside a pod, the in-cluster service account (as client-go does);
2. the in-cluster service account (token re-read as the kubelet rotates it);
3. the "hard way": an explicit server URL, bearer token and CA certificate (the ``APISERVER``,
   ``TOKEN`` and ``CACERT`` environment variables of the seed; CACERT may be PEM text, its
   base64 form as stored in a Secret, or a path).

No certificate is ever written to a temporary file. The official loader writes embedded
``*-data`` fields to ``tempfile.mkstemp`` files that it removes only at interpreter exit, so a
crashed or killed process leaves its client key behind in /tmp. Here CA data goes to the TLS
layer as data (``ca_cert_data``) and client certificates and keys, which Python's ``ssl`` can
only load from a path, go to anonymous in-memory files (``memfd_create``, read through
``/proc/self/fd``) that vanish with the process. Users authenticated by an ``exec`` or
``auth-provider`` plugin are handed to the official loader for token refresh; their CA and
client certificate still take the path above. Called by ``sparkplane.cli.options`` and tests.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import os
import ssl
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s

from sparkplane.errors import ConfigError
from sparkplane.kube.transport import Transport

POOL_SIZE = 64  # connections per host: submissions and watches run concurrently
_DELEGATED_AUTH = ("exec", "auth-provider")
TOKEN_FILE_REREAD = 60.0  # seconds; client-go re-reads a tokenFile once a minute too


@dataclass(frozen=True)
class Selected:
    """The chosen context of a (merged) kubeconfig, with where each part was defined."""

    context: str
    cluster: dict[str, Any]
    user: dict[str, Any]
    namespace: str | None
    cluster_dir: Path
    user_dir: Path
    sources: tuple[Path, ...] = field(default=())


@dataclass(frozen=True)
class Endpoint:
    """Where a client talks to and what it trusts: enough to write a kubeconfig for someone."""

    server: str
    ca_pem: bytes | None
    verify: bool


def connect(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    server: str | None = None,
    token: str | None = None,
    ca_cert: str | None = None,
    in_cluster: bool = False,
) -> Transport:
    """Build the gateway's transport; see the module docstring for the precedence of the ways."""
    cfg = configuration(
        kubeconfig=kubeconfig,
        context=context,
        server=server,
        token=token,
        ca_cert=ca_cert,
        in_cluster=in_cluster,
    )
    cfg.connection_pool_maxsize = POOL_SIZE
    return Transport(cfg)


def configuration(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    server: str | None = None,
    token: str | None = None,
    ca_cert: str | None = None,
    in_cluster: bool = False,
) -> k8s.Configuration:
    """The client ``Configuration`` :func:`connect` uses (explicit > in-cluster > kubeconfig)."""
    if server:
        return _explicit(server, token, ca_cert)
    if in_cluster:
        return _in_cluster()
    files = kubeconfig_files(kubeconfig)
    if not files and kubeconfig is None and context is None and _in_pod():
        return _in_cluster()
    return _from_selected(select_context(files, context))


def endpoint(api: Transport) -> Endpoint:
    """The server and CA of an existing client (the CA from a file or from data)."""
    cfg = api.configuration
    pem: bytes | None = None
    if cfg.ca_cert_data:
        data = cfg.ca_cert_data
        pem = data.encode() if isinstance(data, str) else bytes(data)
    elif cfg.ssl_ca_cert:
        pem = Path(cfg.ssl_ca_cert).read_bytes()
    return Endpoint(server=str(cfg.host), ca_pem=pem, verify=bool(cfg.verify_ssl))


def ca_pem(value: str) -> str:
    """CACERT as PEM text: given as PEM, as base64 of PEM (a Secret's ``ca.crt``), or a path."""
    text = value.strip()
    if not text.startswith("-----BEGIN"):
        if _is_file(text):
            text = Path(text).read_text().strip()
        else:
            try:
                text = base64.b64decode(text, validate=True).decode().strip()
            except (binascii.Error, UnicodeDecodeError, ValueError):
                raise ConfigError(
                    "CACERT is neither PEM text, base64 of PEM, nor an existing file"
                ) from None
    try:
        ssl.create_default_context(cadata=text)
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigError(f"CACERT does not hold a usable CA certificate: {exc}") from exc
    return text + "\n"


def _is_file(text: str) -> bool:
    try:
        return "\n" not in text and Path(text).expanduser().is_file()
    except OSError:  # e.g. ENAMETOOLONG: base64 data is not a path
        return False


def _explicit(server: str, token: str | None, ca_cert: str | None) -> k8s.Configuration:
    if not token:
        raise ConfigError(f"a server ({server}) was given without a token: set TOKEN or --token")
    if not ca_cert:
        raise ConfigError(
            f"no CA certificate for {server}: set CACERT to the cluster CA (PEM, base64 or a "
            "path); sparkplane does not disable TLS verification"
        )
    cfg = k8s.Configuration(host=server)
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    cfg.ca_cert_data = ca_pem(ca_cert)
    return cfg


def _in_pod() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _in_cluster() -> k8s.Configuration:
    from kubernetes import config as k8s_config  # only here: it costs ~0.1 s to import
    from kubernetes.config.config_exception import ConfigException

    cfg = k8s.Configuration()
    try:
        k8s_config.load_incluster_config(client_configuration=cfg)
    except ConfigException as exc:
        raise ConfigError(f"not running inside a cluster: {exc}") from exc
    return cfg


def kubeconfig_files(path: str | os.PathLike[str] | None) -> list[Path]:
    """The kubeconfig files to merge: the named one (which must exist), else $KUBECONFIG's
    existing entries, else ~/.kube/config if it exists."""
    if path is not None:
        named = Path(path).expanduser()
        if not named.is_file():
            raise ConfigError(f"kubeconfig {path} does not exist (it was named explicitly)")
        return [named]
    env = os.environ.get("KUBECONFIG")
    if env:
        candidates = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    else:
        candidates = [Path("~/.kube/config").expanduser()]
    return [p for p in candidates if p.is_file()]


Entries = dict[str, dict[str, tuple[dict[str, Any], Path]]]


def _merged(files: list[Path]) -> tuple[Entries, str | None]:
    """The clusters, users and contexts of ``files`` by name (the first definition wins, as
    kubectl merges), each with the folder of its file; and the first current-context."""
    entries: Entries = {"clusters": {}, "users": {}, "contexts": {}}
    current: str | None = None
    for file in files:
        try:
            doc = yaml.safe_load(file.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read kubeconfig {file}: {exc}") from exc
        current = current or doc.get("current-context") or None
        for section, table in entries.items():
            item_key = section[:-1]
            for item in doc.get(section) or []:
                table.setdefault(item.get("name", ""), (item.get(item_key) or {}, file.parent))
    return entries, current


def select_context(files: list[Path], context: str | None) -> Selected:
    """Merge ``files`` (first definition of a name wins) and pick ``context`` or the current."""
    if not files:
        where = os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise ConfigError(f"no kubeconfig found at {where} (and not running inside a pod)")
    entries, current = _merged(files)
    shown = ", ".join(map(str, files))
    name = context or current
    if not name:
        raise ConfigError(f"no current-context in {shown}: name one with --context")
    if name not in entries["contexts"]:
        known = ", ".join(sorted(entries["contexts"])) or "none"
        raise ConfigError(f"context {name!r} is not in {shown}; known contexts: {known}")
    ctx, _ = entries["contexts"][name]
    cluster = entries["clusters"].get(ctx.get("cluster", ""))
    user = entries["users"].get(ctx.get("user", ""), ({}, files[0].parent))
    if cluster is None or not cluster[0].get("server"):
        raise ConfigError(f"context {name!r} names cluster {ctx.get('cluster')!r}, not in {shown}")
    return Selected(
        context=name,
        cluster=cluster[0],
        user=user[0],
        namespace=ctx.get("namespace") or None,
        cluster_dir=cluster[1],
        user_dir=user[1],
        sources=tuple(files),
    )


def context_namespace(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> str | None:
    """The namespace set in the selected kubeconfig context, if any."""
    files = kubeconfig_files(kubeconfig)
    return select_context(files, context).namespace if files else None


def contexts_for_server(kubeconfig: str | os.PathLike[str] | None, server: str) -> list[str]:
    """Contexts of the (merged) kubeconfig whose cluster's server is ``server`` (what
    spark-submit's ``--master k8s://<server>`` selects), current context first."""
    entries, current = _merged(kubeconfig_files(kubeconfig))
    servers = {name: str(c.get("server", "")) for name, (c, _) in entries["clusters"].items()}
    wanted = server.rstrip("/")
    found = [
        name
        for name, (ctx, _) in entries["contexts"].items()
        if servers.get(ctx.get("cluster", ""), "").rstrip("/") == wanted
    ]
    return sorted(found, key=lambda n: n != current)


def _from_selected(sel: Selected) -> k8s.Configuration:
    cfg = k8s.Configuration()
    user = dict(sel.user)
    if user.get("username") or user.get("password"):
        raise ConfigError(
            f"context {sel.context!r} uses basic auth (username/password), which Kubernetes "
            "removed in 1.19: use a token, a client certificate or an exec plugin"
        )
    if any(user.get(k) for k in _DELEGATED_AUTH):
        _delegate(sel, user, cfg)
    cfg.host = str(sel.cluster["server"]).rstrip("/")
    cluster = sel.cluster
    if cluster.get("insecure-skip-tls-verify"):
        cfg.verify_ssl = False
    elif cluster.get("certificate-authority-data"):
        cfg.ca_cert_data = _b64(cluster["certificate-authority-data"], "certificate-authority-data")
        cfg.ssl_ca_cert = None
    elif cluster.get("certificate-authority"):
        cfg.ssl_ca_cert = str(_resolve(sel.cluster_dir, cluster["certificate-authority"]))
    if cluster.get("tls-server-name"):
        cfg.tls_server_name = cluster["tls-server-name"]
    if cluster.get("proxy-url"):
        cfg.proxy = cluster["proxy-url"]
    if user.get("token"):
        cfg.api_key = {"BearerToken": user["token"]}
    elif user.get("tokenFile"):
        _token_file(cfg, _resolve(sel.user_dir, user["tokenFile"]))
    if user.get("token") or user.get("tokenFile"):
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
    held: list[int] = []
    for field_name, attr in (("client-certificate", "cert_file"), ("client-key", "key_file")):
        if user.get(f"{field_name}-data"):
            pem = base64.b64decode(user[f"{field_name}-data"])
            setattr(cfg, attr, _memory_file(pem, field_name, held))
        elif user.get(field_name):
            setattr(cfg, attr, str(_resolve(sel.user_dir, user[field_name])))
    if held:
        weakref.finalize(cfg, _close_all, held)
    return cfg


def _delegate(sel: Selected, user: dict[str, Any], cfg: k8s.Configuration) -> None:
    """Plugins (exec, auth-provider): the official loader runs them into a scratch
    configuration, of which only the credentials are copied (on every refresh). It never sees
    our CA or client certificate fields, so it writes none of them to temporary files."""
    plain = {k: v for k, v in user.items() if not k.startswith(("client-", "token"))}
    cluster = {"server": sel.cluster["server"], "insecure-skip-tls-verify": True}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": plain}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    from kubernetes import config as k8s_config  # only here: it costs ~0.1 s to import
    from kubernetes.config.config_exception import ConfigException

    scratch = k8s.Configuration()
    try:
        k8s_config.load_kube_config_from_dict(doc, client_configuration=scratch)
    except ConfigException as exc:
        raise ConfigError(f"cannot authenticate with context {sel.context!r}: {exc}") from exc

    def refresh(c: k8s.Configuration) -> None:
        plugin_hook = scratch.refresh_api_key_hook
        if plugin_hook is not None:
            plugin_hook(scratch)
        c.api_key = dict(scratch.api_key)

    refresh(cfg)
    # an exec plugin may answer with a client certificate (the official loader's temp files)
    cfg.cert_file, cfg.key_file = scratch.cert_file, scratch.key_file
    hook: Callable[[k8s.Configuration], None] = refresh
    setattr(cfg, "refresh_api_key_hook", hook)  # noqa: B010 - the stub types it as None


def _token_file(cfg: k8s.Configuration, path: Path) -> None:
    """A bearer token read from ``path`` now and again on each refresh (it may rotate)."""

    last = [0.0]

    def read(c: k8s.Configuration) -> None:
        now = time.monotonic()
        if now - last[0] >= TOKEN_FILE_REREAD or not c.api_key:
            try:
                c.api_key = {"BearerToken": path.read_text().strip()}
            except OSError as exc:
                raise ConfigError(f"cannot read the kubeconfig tokenFile {path}: {exc}") from exc
            last[0] = now

    read(cfg)
    hook: Callable[[k8s.Configuration], None] = read
    setattr(cfg, "refresh_api_key_hook", hook)  # noqa: B010 - the stub types it as None


def _b64(value: str, name: str) -> str:
    try:
        return base64.b64decode(value).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"kubeconfig field {name} is not base64 PEM: {exc}") from exc


def _resolve(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _memory_file(data: bytes, name: str, held: list[int]) -> str:
    """A path that reads back ``data`` and exists nowhere on disk (Linux ``memfd``).

    Elsewhere: a private temporary file removed at exit, as the official loader does.
    """
    if hasattr(os, "memfd_create") and Path("/proc/self/fd").is_dir():
        fd = os.memfd_create(f"sparkplane-{name}", os.MFD_CLOEXEC)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        held.append(fd)
        return f"/proc/self/fd/{fd}"
    fd, path = tempfile.mkstemp(prefix="sparkplane-")  # pragma: no cover - non-Linux only
    with os.fdopen(fd, "wb") as f:  # pragma: no cover
        f.write(data)
    atexit.register(_unlink, path)  # pragma: no cover
    return path  # pragma: no cover


def _unlink(path: str) -> None:  # pragma: no cover - non-Linux only
    try:
        os.unlink(path)
    except OSError:
        pass


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
