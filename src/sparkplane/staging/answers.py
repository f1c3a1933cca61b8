"""The staging server's error answers: one JSON shape for every refusal.

Every failure a handler raises becomes ``{"error": <code>, "message": <text>, ...}`` with its
HTTP status here (:func:`json_errors`, the server's outermost middleware). A refused upload's
connection is closed: its unread body is not worth reading. A full disk (``ENOSPC``/``EDQUOT``
from the store, SQLite's "database or disk is full") is ``507 insufficient_storage`` and one
log line, not a plain-text 500 with a traceback (the upload handler has removed its partial
bundle by then). Called only by :mod:`sparkplane.staging.server`; no I/O beyond building
responses and that log line.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from sparkplane.errors import ValidationError
from sparkplane.staging.auth import Denied
from sparkplane.staging.limits import LimitExceeded
from sparkplane.staging.transfer import TransferFailed

log = logging.getLogger("sparkplane.staging.server")
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def disk_full(exc: BaseException) -> bool:
    """True when ``exc`` says the server's storage is full (bundle store or metadata)."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL
    if isinstance(exc, sqlite3.OperationalError):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or (
            "disk is full" in str(exc)
        )
    return False


def _full_answer(exc: BaseException) -> web.Response:
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return error(
        507,
        "insufficient_storage",
        f"the staging server's disk is full ({why}): nothing was stored; retry later, or ask "
        "its operator to free space (expired bundles are deleted by its clean-up) or give it "
        "a larger volume",
    )


class HTTPFail(Exception):
    """A 4xx/5xx answer decided inside a handler."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    """A JSON error response (``headers`` in ``extra`` become HTTP headers)."""
    headers = {str(k): str(v) for k, v in extra.pop("headers", {}).items()}
    body = {"error": code, "message": message, **extra}
    return web.json_response(body, status=status, headers=headers)


def _retry(seconds: float) -> dict[str, Any]:
    return {"headers": {"Retry-After": str(max(1, round(seconds)))}} if seconds > 0 else {}


def fail_response(exc: BaseException) -> web.Response | None:
    """The JSON error answer for a known failure, or None for anything else."""
    if isinstance(exc, HTTPFail):
        return error(exc.status, exc.code, exc.message, **exc.extra)
    if isinstance(exc, Denied):
        extra: dict[str, Any] = {}
        if exc.status == 401:
            extra["headers"] = {"WWW-Authenticate": 'Bearer realm="sparkplane-staging"'}
        return error(exc.status, exc.code, exc.message, **extra)
    if isinstance(exc, LimitExceeded):
        return error(exc.status, exc.code, exc.message, **_retry(exc.retry_after))
    if isinstance(exc, TransferFailed):
        return error(exc.status, exc.code, exc.message)
    if isinstance(exc, ValidationError):
        problems = [{"path": p.path, "message": p.message, "hint": p.hint} for p in exc.problems]
        return error(400, "invalid_request", str(exc), problems=problems)
    if isinstance(exc, web.HTTPException) and exc.status >= 400:
        return error(exc.status, exc.reason.lower().replace(" ", "_"), exc.text or exc.reason)
    return None


KNOWN = (HTTPFail, Denied, LimitExceeded, TransferFailed, ValidationError, web.HTTPException)


@web.middleware
async def json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Turn known failures into JSON answers; a refused upload also closes the connection."""
    try:
        return await handler(request)
    except KNOWN as exc:
        response = fail_response(exc)
        if response is None:
            raise
        if request.method == "POST":
            response.force_close()
        return response
    except (OSError, sqlite3.OperationalError) as exc:
        if not disk_full(exc):
            raise
        log.warning("%s %s: 507, the disk is full (%s)", request.method, request.path, exc)
        response = _full_answer(exc)
        if request.method == "POST":
            response.force_close()
        return response
