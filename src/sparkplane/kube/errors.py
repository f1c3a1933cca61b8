"""Map HTTP answers of the API server onto the sparkplane exception tree.

The parsed Kubernetes ``Status`` body travels with the exception; the message names the verb,
the object and the real cause, read from the Status message: a 403 is RBAC (with the
``kubectl auth can-i`` check), an exceeded ResourceQuota, or an admission webhook/policy; a
413 or a connection the server closed while a large body was sent is "too large", anything
else on the wire is the network (:func:`transport_error`).
"""

from __future__ import annotations

import json
from typing import Any

from sparkplane.errors import (
    AdmissionDeniedError,
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    GoneError,
    KubeError,
    NotFoundError,
    QuotaExceededError,
    TooLargeError,
    TransportError,
)

MIB = 1024 * 1024
#: How admission refusals read (RBAC's always say 'User "x" cannot <verb> resource ...').
_ADMISSION_MARKERS = (
    "admission webhook",
    "violates podsecurity",
    "denied the request",
    "denied request",
)


def parse_status(data: bytes) -> dict[str, Any]:
    """The ``Status`` object of an error body, or a minimal one if the body is not JSON."""
    try:
        body = json.loads(data) if data else {}
    except ValueError:
        return {"message": data[:500].decode(errors="replace")}
    return body if isinstance(body, dict) else {"message": str(body)}


def error_for(
    code: int, data: bytes, *, verb: str, plural: str, namespace: str | None, obj: str
) -> KubeError:
    """The exception for an HTTP error ``code`` answering ``verb`` on ``obj``."""
    status = parse_status(data)
    reason = str(status.get("reason", ""))
    message = str(status.get("message", "")) or f"HTTP {code}"
    where = f" in namespace {namespace}" if namespace else ""
    kwargs: dict[str, Any] = {"code": code, "reason": reason, "status": status, "obj": obj}
    lowered = message.lower()
    if code == 403:
        if "exceeded quota" in lowered:
            return QuotaExceededError(
                f"ResourceQuota exceeded: cannot {verb} {obj}{where}: {message}. Free capacity "
                f"(`kubectl describe resourcequota{_ns(namespace)}`) or ask for a larger quota; "
                "this is not an RBAC problem.",
                **kwargs,
            )
        if any(m in lowered for m in _ADMISSION_MARKERS):
            return AdmissionDeniedError(
                f"admission refused to {verb} {obj}{where}: {message}. Change the object to "
                "satisfy the policy (PodSecurity, webhook); this is not an RBAC problem.",
                **kwargs,
            )
        return ForbiddenError(
            f"forbidden: cannot {verb} {plural}{where} ({obj}): {message}. "
            f"Check with `kubectl auth can-i {verb} {plural}{_ns(namespace)}` and the RBAC of "
            "your identity (`sparkplane rbac` renders the minimal roles).",
            **kwargs,
        )
    if code == 413 or "too large" in lowered or ("too long" in lowered and " bytes" in lowered):
        return TooLargeError(
            f"cannot {verb} {obj}{where}: the API server refused it as too large: {message}. "
            "Objects are stored up to about 1.5 MiB; ConfigMap data up to 1 MiB.",
            **kwargs,
        )
    if code == 404:
        return NotFoundError(f"{obj} not found: {message}", **kwargs)
    if code == 409 and reason == "AlreadyExists":
        return AlreadyExistsError(f"{obj} already exists", **kwargs)
    if code == 409:
        return ConflictError(f"conflict writing {obj}: {message}", **kwargs)
    if code == 410:
        return GoneError(f"{message} (watch of {plural} must relist)", **kwargs)
    return KubeError(f"cannot {verb} {obj}{where}: {message}", **kwargs)


def _ns(namespace: str | None) -> str:
    return f" -n {namespace}" if namespace else ""


def transport_error(exc: Exception, *, method: str, url: str, body_bytes: int) -> KubeError:
    """A request that got no HTTP answer: "too large" when a big body was cut off, else the
    network (server down, TLS, DNS, timeout), never a raw SSLEOFError."""
    why = f"{type(exc).__name__}: {exc}"
    if body_bytes > MIB:
        return TooLargeError(
            f"the API server closed the connection while receiving a {body_bytes / MIB:.1f} MiB "
            f"{method} request ({why}); it accepts requests up to about 3 MiB and stores "
            "objects up to about 1.5 MiB: make the object smaller",
            reason="TooLarge",
        )
    return TransportError(
        f"cannot reach the Kubernetes API server for {method} {url}: "
        f"{why}. Check that it is running and "
        "that the kubeconfig's server address, CA and network path are right.",
        reason="Transport",
    )
