"""A kubeconfig for one service account, minted through the TokenRequest API.

Owns :func:`mint_kubeconfig` (``sparkplane kubeconfig --service-account``): it asks the API
server for a token bound to an expiry (``POST .../serviceaccounts/NAME/token``; clusters since
1.24 no longer create the token Secrets the seed's script reads), takes the server URL and CA
of the current connection, and builds the file with :func:`build_kubeconfig` (pure).
:func:`write_private` writes it with mode 0600 from the first byte. Talks to Kubernetes only
through the gateway; never prints or logs a token.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from sparkplane.errors import ConfigError, ForbiddenError, NotFoundError, Problem, ValidationError
from sparkplane.kube import Kube
from sparkplane.kube.config import endpoint
from sparkplane.kube.errors import error_for

MIN_DURATION = timedelta(minutes=10)  # the API server rejects expirationSeconds below 600
#: Longest token minted without ``force``: a leaked kubeconfig should not outlive a week.
MAX_DURATION = timedelta(days=7)


@dataclass(frozen=True)
class Minted:
    """A kubeconfig document and when its token expires (RFC 3339, as the server says)."""

    config: dict[str, Any]
    expires: str
    requested_seconds: int

    def text(self) -> str:
        """The kubeconfig as YAML."""
        return yaml.safe_dump(self.config, sort_keys=False)


def build_kubeconfig(
    *,
    server: str,
    token: str,
    namespace: str,
    service_account: str,
    ca_pem: bytes | None,
    cluster_name: str = "sparkplane",
) -> dict[str, Any]:
    """A one-context kubeconfig: the CA embedded, the namespace set in the context."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    user = f"{namespace}-{service_account}"
    context = f"{service_account}@{cluster_name}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": cluster_name, "user": user, "namespace": namespace},
            }
        ],
        "current-context": context,
    }


def check_duration(duration: timedelta, *, force: bool = False) -> int:
    """The duration as whole seconds; at least 10 minutes (the API server's minimum) and, unless
    ``force``, at most :data:`MAX_DURATION` (a 10-year token is a standing credential)."""
    seconds = int(duration.total_seconds())
    if duration < MIN_DURATION:
        raise ValidationError(
            [Problem("--duration", f"{seconds}s is too short", "the API server's minimum is 10m")],
            subject="kubeconfig request",
        )
    if duration > MAX_DURATION and not force:
        raise ValidationError(
            [
                Problem(
                    "--duration",
                    f"{duration.days}d is longer than the {MAX_DURATION.days}d maximum",
                    "mint short-lived kubeconfigs and mint again when they expire; pass "
                    "--force if you really want a longer-lived token",
                )
            ],
            subject="kubeconfig request",
        )
    return seconds


def request_token(
    kube: Kube, service_account: str, namespace: str, *, seconds: int
) -> tuple[str, str]:
    """A bound token for the service account: ``(token, expirationTimestamp)``."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token"
    obj = f"ServiceAccount {namespace}/{service_account}"
    try:
        answer = kube.raw("POST", path, body=body, content_type="application/json")
    except NotFoundError as exc:
        raise NotFoundError(
            f"service account {namespace}/{service_account} does not exist "
            f"({exc.status.get('message', exc)}): create it with `sparkplane rbac IDENTITY "
            f"-n {namespace} --service-account {service_account} --apply`",
            code=404,
            reason="NotFound",
            status=exc.status,
            obj=obj,
        ) from None
    except ForbiddenError as exc:
        raise error_for(
            403,
            json.dumps(exc.status).encode(),
            verb="create",
            plural="serviceaccounts/token",
            namespace=namespace,
            obj=obj,
        ) from None
    status = answer.get("status", {})
    return str(status["token"]), str(status.get("expirationTimestamp", ""))


def mint_kubeconfig(
    kube: Kube,
    service_account: str,
    namespace: str,
    *,
    duration: timedelta = timedelta(hours=1),
    cluster_name: str = "sparkplane",
    force: bool = False,
) -> Minted:
    """Mint a token for ``namespace/service_account`` and wrap it in a kubeconfig
    (``force``: allow a duration over :data:`MAX_DURATION`)."""
    seconds = check_duration(duration, force=force)
    where = endpoint(kube.api)
    if not where.verify:
        raise ConfigError(
            f"the current connection to {where.server} does not verify TLS; sparkplane will not "
            "write a kubeconfig that skips verification: connect with the cluster CA"
        )
    token, expires = request_token(kube, service_account, namespace, seconds=seconds)
    doc = build_kubeconfig(
        server=where.server,
        token=token,
        namespace=namespace,
        service_account=service_account,
        ca_pem=where.ca_pem,
        cluster_name=cluster_name,
    )
    return Minted(config=doc, expires=expires, requested_seconds=seconds)


def write_private(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` readable by its owner only (0600 from creation on).

    A sibling is created with ``O_EXCL`` and mode 0600, then renamed over ``path``: the secret
    is never in a file with wider permissions, even when ``path`` existed with other modes.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
