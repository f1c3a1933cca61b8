"""The staging client's wire: blocking HTTP/1.1 connections, kernel-side copies.

Used by :mod:`sparkplane.staging.client` only, in the caller's thread. :func:`guarded` turns
network failures into :class:`StagingClientError`; :func:`connect` opens the connection;
:func:`check` raises the server's JSON error; uploads go out with ``sendfile``
(:func:`send_file`, once :func:`await_continue` allows) and plain-HTTP downloads are
``splice``d from the socket into the file (:func:`save`), so the payload never passes through
Python (TLS falls back to one reused 1 MiB buffer).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import http.client
import json
import os
import select
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from sparkplane.staging.errors import StagingClientError, StagingError

CHUNK = 1024 * 1024
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 300.0
EXPECT_TIMEOUT = 2.0
_T = TypeVar("_T")


def guarded(action: str, work: Callable[[], _T]) -> _T:
    """Run blocking ``work``; network failures become :class:`StagingClientError`."""
    try:
        return work()
    except (OSError, http.client.HTTPException) as exc:
        raise StagingClientError(f"{action} failed: {exc}") from exc


def connect(url: str, ca_file: Path | None) -> tuple[http.client.HTTPConnection, str]:
    """An open connection to the host of ``url`` and the request target (path and query)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StagingError(f"cannot reach {url!r}: only http:// and https:// URLs are supported")
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
        conn = http.client.HTTPSConnection(
            parts.hostname, parts.port, timeout=CONNECT_TIMEOUT, context=context
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=CONNECT_TIMEOUT)
    conn.connect()
    conn.sock.settimeout(READ_TIMEOUT)
    return conn, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def check(response: http.client.HTTPResponse, action: str) -> None:
    """Raise the server's JSON error (``error``/``message``) for a 4xx or 5xx answer."""
    if response.status < 400:
        return
    code, message = "", response.reason or ""
    with contextlib.suppress(ValueError, AttributeError, OSError, http.client.HTTPException):
        body = json.loads(response.read(64 * 1024))
        code, message = str(body.get("error", "")), str(body.get("message", message))
    raise StagingClientError(
        f"{action} failed: HTTP {response.status} {code}: {message}",
        status=response.status,
        code=code,
    )


def _write_all(fd: int, data: memoryview | bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def await_continue(sock: socket.socket, timeout: float = EXPECT_TIMEOUT) -> bool:
    """After ``Expect: 100-continue`` headers: True to send the body (``100 Continue``, or no
    answer within ``timeout`` from a server that ignores Expect), False when the server has
    already answered (a refusal: the body would be wasted). Reads nothing for good."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            return True  # no (complete) answer in time: send the body, the server decides
        head = sock.recv(12, socket.MSG_PEEK)
        if not head:
            return False  # closed: getresponse reports it
        if len(head) >= 12:
            return head[8:12] == b" 100"
        time.sleep(0.01)  # "HTTP/1.1 100" arriving in pieces: wait for the rest


def send_file(sock: socket.socket, path: Path, size: int) -> None:
    """Send ``size`` bytes of ``path``: zero-copy ``sendfile``, or a 1 MiB loop under TLS."""
    with open(path, "rb", buffering=0) as source:
        if not isinstance(sock, ssl.SSLSocket):
            sock.sendfile(source, 0, size)
            return
        view = memoryview(bytearray(CHUNK))
        while size and (n := source.readinto(view[: min(size, CHUNK)])):
            sock.sendall(view[:n])
            size -= n


def _copy_exact(reader: Any, fd: int, left: int) -> None:
    """Copy ``left`` bytes from a buffered socket reader through one reused buffer."""
    view = memoryview(bytearray(min(left, CHUNK)))
    while left:
        n = reader.readinto(view[: min(left, len(view))])
        if not n:
            raise http.client.IncompleteRead(b"", left)
        _write_all(fd, view[:n])
        left -= n


def _splice_exact(response: http.client.HTTPResponse, sock: socket.socket, fd: int) -> None:
    """Move a Content-Length body from the socket to ``fd`` in the kernel (``splice``)."""
    left = response.length or 0
    reader: Any = response.fp  # bytes the header parser already buffered come first
    head = reader.read1(min(left, CHUNK)) if left else b""
    _write_all(fd, head)
    left -= len(head)
    if left and not head:
        raise http.client.IncompleteRead(b"", left)
    pipe_out, pipe_in = os.pipe()
    try:
        with contextlib.suppress(OSError):  # a larger pipe means fewer system calls
            fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, CHUNK)
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        timeout_ms = int((sock.gettimeout() or READ_TIMEOUT) * 1000)
        moved_any = False
        while left:
            try:
                moved = os.splice(sock.fileno(), pipe_in, min(left, CHUNK))
            except BlockingIOError:
                if not poller.poll(timeout_ms):
                    raise TimeoutError("timed out reading the response body") from None
                continue
            except OSError as exc:  # a file system without splice support: copy instead
                if moved_any or exc.errno not in (errno.EINVAL, errno.ENOSYS):
                    raise
                _copy_exact(reader, fd, left)
                return
            if not moved:
                raise http.client.IncompleteRead(b"", left)
            moved_any, left = True, left - moved
            while moved:
                moved -= os.splice(pipe_out, fd, moved)
    finally:
        os.close(pipe_out)
        os.close(pipe_in)


def save(conn: http.client.HTTPConnection, response: http.client.HTTPResponse, path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        if response.length is None:  # chunked or until-close: http.client decodes it
            view = memoryview(bytearray(CHUNK))
            while n := response.readinto(view):
                _write_all(fd, view[:n])
        elif hasattr(os, "splice") and not isinstance(conn.sock, ssl.SSLSocket):
            _splice_exact(response, conn.sock, fd)
        else:
            _copy_exact(response.fp, fd, response.length)
    finally:
        os.close(fd)
