"""Map HTTP answers of the API server onto the sparkplane exception tree.

The parsed Kubernetes ``Status`` body travels with the exception; the message names the verb,
the object and, for 403, the ``kubectl auth can-i`` check that explains it.
"""

from __future__ import annotations

import json
from typing import Any

from sparkplane.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    GoneError,
    KubeError,
    NotFoundError,
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
    if code == 403:
        ns_flag = f" -n {namespace}" if namespace else ""
        return ForbiddenError(
            f"forbidden: cannot {verb} {plural}{where} ({obj}): {message}. "
            f"Check with `kubectl auth can-i {verb} {plural}{ns_flag}` and the RBAC of "
            "your identity (`sparkplane rbac` renders the minimal roles).",
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
