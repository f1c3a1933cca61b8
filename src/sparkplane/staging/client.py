"""Client side of staging: upload a bundle, fetch and unpack one, localize remote URIs.

Called by the submitter (:func:`upload_bundle`) and by the init-container command
``sparkplane fetch`` (:func:`fetch`, :func:`localize_uris`). The async functions are the API,
the plain ones facades for synchronous callers. Each transfer runs in a worker thread on a
standard-library HTTP/1.1 connection so the kernel moves the bytes: uploads go out with
``sendfile`` and plain-HTTP downloads are ``splice``d from the socket into the file, so the
payload never passes through Python (TLS falls back to one reused 1 MiB buffer). A bundle is
never held in memory; downloads land in a ``.part`` file renamed once complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import http.client
import json
import os
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote, urljoin, urlsplit

from sparkplane.staging.bundle import unpack_bundle
from sparkplane.staging.errors import StagingClientError, StagingError
from sparkplane.staging.owner import ResourceOwner

CHUNK = 1024 * 1024
RESOURCES_PATH = "/api/v0/resources"
CONNECT_TIMEOUT = 30.0
READ_TIMEOUT = 300.0
MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_T = TypeVar("_T")


class StagedResource(NamedTuple):
    """What an upload returns: the id and the secret a download must present."""

    resource_id: str
    secret: str


class _Cancel:
    """Lets a cancelled coroutine stop its worker thread: shutting the socket wakes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._sockets: list[socket.socket] = []

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self._cancelled:
                sock.shutdown(socket.SHUT_RDWR)

    def trigger(self) -> None:
        with self._lock:
            self._cancelled = True
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


async def _in_thread(action: str, work: Callable[[_Cancel], _T]) -> _T:
    """Run blocking ``work`` in a thread; network failures become :class:`StagingClientError`."""
    cancel = _Cancel()
    try:
        return await asyncio.to_thread(_guarded, action, work, cancel)
    except asyncio.CancelledError:
        cancel.trigger()
        raise


def _guarded(action: str, work: Callable[[_Cancel], _T], cancel: _Cancel) -> _T:
    try:
        return work(cancel)
    except (OSError, http.client.HTTPException) as exc:
        raise StagingClientError(f"{action} failed: {exc}") from exc


def _connect(
    url: str, ca_file: Path | None, cancel: _Cancel
) -> tuple[http.client.HTTPConnection, str]:
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
    cancel.watch(conn.sock)
    return conn, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _check(response: http.client.HTTPResponse, action: str) -> None:
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


def _send_file(sock: socket.socket, path: Path, size: int) -> None:
    """Send ``size`` bytes of ``path``: zero-copy ``sendfile``, or a 1 MiB loop under TLS."""
    with open(path, "rb", buffering=0) as source:
        if not isinstance(sock, ssl.SSLSocket):
            sock.sendfile(source, 0, size)
            return
        view = memoryview(bytearray(CHUNK))
        while size and (n := source.readinto(view[: min(size, CHUNK)])):
            sock.sendall(view[:n])
            size -= n


def _upload(
    endpoint: str, path: Path, headers: dict[str, str], ca_file: Path | None, cancel: _Cancel
) -> Any:
    conn, target = _connect(endpoint, ca_file, cancel)
    try:
        conn.putrequest("POST", target, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            _send_file(conn.sock, path, int(headers["Content-Length"]))
        # ^ a server refusing mid-body (413) closes early; its answer is read below
        response = conn.getresponse()
        _check(response, f"upload of {path} to {endpoint}")
        return json.loads(response.read())
    finally:
        conn.close()


async def upload_bundle_async(
    url: str, path: Path, owner: ResourceOwner, *, ca_file: Path | None = None
) -> StagedResource:
    """Stream the file at ``path`` to the staging server at ``url`` (its base URL)."""
    headers = {
        **owner.to_headers(),
        "Content-Type": "application/octet-stream",
        "Content-Length": str(path.stat().st_size),
    }
    endpoint = url.rstrip("/") + RESOURCES_PATH
    action = f"upload of {path} to {endpoint}"
    body = await _in_thread(action, partial(_upload, endpoint, path, headers, ca_file))
    return StagedResource(str(body["resourceId"]), str(body["resourceSecret"]))


def _delete(endpoint: str, headers: dict[str, str], ca_file: Path | None, cancel: _Cancel) -> None:
    conn, target = _connect(endpoint, ca_file, cancel)
    try:
        conn.request("DELETE", target, headers=headers)
        response = conn.getresponse()
        _check(response, f"delete of {endpoint}")
        response.read()
    finally:
        conn.close()


async def delete_bundle_async(
    url: str, resource_id: str, secret: str, *, ca_file: Path | None = None
) -> None:
    """Delete bundle ``resource_id`` now (its secret proves the right to)."""
    endpoint = f"{url.rstrip('/')}{RESOURCES_PATH}/{resource_id}"
    headers = {"Authorization": f"Bearer {secret}"}
    await _in_thread(f"delete of {endpoint}", partial(_delete, endpoint, headers, ca_file))


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


def _save(conn: http.client.HTTPConnection, response: http.client.HTTPResponse, path: Path) -> None:
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


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def _get(
    url: str, part: Path, headers: dict[str, str], ca_file: Path | None, cancel: _Cancel
) -> None:
    """GET ``url`` into ``part``, following redirects (credentials stay with their origin)."""
    location = url
    for _ in range(MAX_REDIRECTS + 1):
        conn, target = _connect(location, ca_file, cancel)
        try:
            conn.request("GET", target, headers=headers)
            response = conn.getresponse()
            if response.status in _REDIRECTS and response.getheader("Location"):
                following = urljoin(location, response.getheader("Location", ""))
                if _origin(following) != _origin(location):
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                location = following
                continue
            _check(response, f"download of {url}")
            _save(conn, response, part)
            return
        finally:
            conn.close()
    raise StagingClientError(f"download of {url} failed: more than {MAX_REDIRECTS} redirects")


async def _download(
    url: str,
    dest: Path,
    *,
    headers: dict[str, str] | None = None,
    ca_file: Path | None = None,
    retries: int = 3,
) -> None:
    """GET ``url`` into ``dest`` via ``dest.part``; retries connection errors and 5xx."""
    part = dest.with_name(dest.name + ".part")
    work = partial(_get, url, part, headers or {}, ca_file)
    for attempt in range(retries + 1):
        try:
            await _in_thread(f"download of {url}", work)
            os.replace(part, dest)
            return
        except StagingClientError as exc:
            part.unlink(missing_ok=True)
            if attempt >= retries or 0 < exc.status < 500:
                raise
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        await asyncio.sleep(min(2**attempt, 10))


async def download_bundle_async(
    url: str, resource_id: str, secret: str, dest: Path, *, ca_file: Path | None = None
) -> None:
    """Stream bundle ``resource_id`` into the file ``dest`` as is (no unpacking)."""
    endpoint = f"{url.rstrip('/')}{RESOURCES_PATH}/{resource_id}"
    auth = {"Authorization": f"Bearer {secret}"}
    await _download(endpoint, dest, headers=auth, ca_file=ca_file)


async def fetch_async(
    url: str,
    resource_id: str,
    secret: str,
    dest_dir: Path,
    *,
    ca_file: Path | None = None,
    max_bytes: int | None = None,
) -> list[str]:
    """Download bundle ``resource_id`` and unpack it safely into ``dest_dir``; returns names."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    part = dest_dir / f".sparkplane-bundle-{resource_id}"
    try:
        await download_bundle_async(url, resource_id, secret, part, ca_file=ca_file)
        return await asyncio.to_thread(unpack_bundle, part, dest_dir, max_bytes=max_bytes)
    finally:
        part.unlink(missing_ok=True)


def _local_name(uri: str) -> str:
    parts = urlsplit(uri)
    name = unquote(parts.fragment) or unquote(parts.path.rsplit("/", 1)[-1])
    if not name or name in (".", "..") or "/" in name:
        raise StagingError(f"cannot derive a file name from {uri!r}; add '#name' to the URI")
    return name


async def localize_uris_async(
    uris: Iterable[str], dest_dir: Path, *, ca_file: Path | None = None, parallel: int = 4
) -> dict[str, Path]:
    """Download http(s) URIs into ``dest_dir`` (named by ``#alias`` or the last path segment).

    ``local:`` URIs are already in the image and map to their own path. Other schemes are
    refused: Spark fetches ``hdfs:``/``s3a:`` itself, and ``file:`` must go through staging.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Path] = {}
    remote: dict[str, Path] = {}
    for uri in uris:
        scheme = urlsplit(uri).scheme.lower()
        if scheme == "local":
            result[uri] = Path(urlsplit(uri).path)
        elif scheme in ("http", "https"):
            target = dest_dir / _local_name(uri)
            if target in remote.values():
                raise StagingError(f"two URIs would both be saved as {target.name}: use '#alias'")
            remote[uri] = result[uri] = target
        else:
            raise StagingError(
                f"cannot localize {uri!r}: the init-container fetches http(s) and local: URIs; "
                "upload submitter-local files through the staging server"
            )
    gate = asyncio.Semaphore(parallel)

    async def one(uri: str, target: Path) -> None:
        async with gate:
            await _download(uri, target, ca_file=ca_file)

    await asyncio.gather(*(one(uri, target) for uri, target in remote.items()))
    return result


def upload_bundle(
    url: str, path: Path, owner: ResourceOwner, *, ca_file: Path | None = None
) -> StagedResource:
    """Synchronous :func:`upload_bundle_async`."""
    return asyncio.run(upload_bundle_async(url, path, owner, ca_file=ca_file))


def delete_bundle(url: str, resource_id: str, secret: str, *, ca_file: Path | None = None) -> None:
    """Synchronous :func:`delete_bundle_async`."""
    asyncio.run(delete_bundle_async(url, resource_id, secret, ca_file=ca_file))


def fetch(
    url: str,
    resource_id: str,
    secret: str,
    dest_dir: Path,
    *,
    ca_file: Path | None = None,
    max_bytes: int | None = None,
) -> list[str]:
    """Synchronous :func:`fetch_async`."""
    return asyncio.run(
        fetch_async(url, resource_id, secret, dest_dir, ca_file=ca_file, max_bytes=max_bytes)
    )


def localize_uris(
    uris: Iterable[str], dest_dir: Path, *, ca_file: Path | None = None
) -> dict[str, Path]:
    """Synchronous :func:`localize_uris_async`."""
    return asyncio.run(localize_uris_async(uris, dest_dir, ca_file=ca_file))
