"""The resource staging server: HTTP upload and download of bundles, plus the clean-up loop.

API (JSON errors are ``{"error": <code>, "message": <text>}``):
  ``POST /api/v0/resources``   body = the bundle bytes, streamed (Content-Length or chunked);
      owner in headers (see :mod:`sparkplane.staging.owner`) -> 201 ``{resourceId, resourceSecret}``
  ``GET /api/v0/resources/{id}`` with ``Authorization: Bearer <secret>`` -> the bytes, streamed
  ``DELETE /api/v0/resources/{id}`` with the same secret -> 204 (a submitter's rollback)
  ``GET /healthz`` -> ``{"status": "ok"}``

Started by ``sparkplane staging serve`` (:func:`serve`) and by tests (:func:`create_app`).
Neither direction holds a bundle in memory, and on plain TCP to the local disk store neither
copies it through Python: downloads go out with ``sendfile`` and upload bodies are ``splice``d
from the socket into the file on a per-upload writer thread (TLS, chunked bodies and remote
stores stream through aiohttp in ``chunk_bytes`` batches). Kubernetes is reached only through
the injected owner checker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import socket
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from aiohttp import web

from sparkplane.errors import ValidationError
from sparkplane.staging import tokens
from sparkplane.staging.cleanup import OwnerChecker, run_cleanup, sweep_orphans
from sparkplane.staging.metadata import MetadataDB, ResourceRecord
from sparkplane.staging.owner import ResourceOwner, owner_from_headers
from sparkplane.staging.ratelimit import FailureLimiter
from sparkplane.staging.settings import StagingSettings
from sparkplane.staging.store import (
    BundleNotStoredError,
    BundleWriter,
    LocalDiskStore,
    SpliceTarget,
    Store,
)

log = logging.getLogger(__name__)

Clock = Callable[[], float]
RESOURCES_PATH = "/api/v0/resources"
_STALL_SECONDS = 300.0  # an upload socket silent this long is given up
_T = TypeVar("_T")

SETTINGS = web.AppKey("settings", StagingSettings)
STORE = web.AppKey("store", Store)
DB = web.AppKey("db", MetadataDB)
LIMITER = web.AppKey("limiter", FailureLimiter)
CLOCK: web.AppKey[Clock] = web.AppKey("clock")
CHECKER: web.AppKey[OwnerChecker] = web.AppKey("owner_checker")


class _HTTPFail(Exception):
    """A 4xx answer decided inside a handler (turned into a JSON body by the middleware)."""

    def __init__(
        self, status: int, code: str, message: str, *, close: bool = False, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra
        self.close = close or status == 413  # a 413's unread body is not worth reading


def _error(status: int, code: str, message: str, **extra: Any) -> web.Response:
    headers = {str(k): str(v) for k, v in extra.pop("headers", {}).items()}
    body = {"error": code, "message": message, **extra}
    return web.json_response(body, status=status, headers=headers)


def _fail_response(exc: Exception) -> web.Response | None:
    """The JSON error answer for a known failure, or None for anything else."""
    if isinstance(exc, _HTTPFail):
        response = _error(exc.status, exc.code, exc.message, **exc.extra)
        if exc.close:
            response.force_close()
        return response
    if isinstance(exc, ValidationError):
        problems = [{"path": p.path, "message": p.message, "hint": p.hint} for p in exc.problems]
        return _error(400, "invalid_request", str(exc), problems=problems)
    if isinstance(exc, web.HTTPException) and exc.status >= 400:
        return _error(exc.status, exc.reason.lower().replace(" ", "_"), exc.text or exc.reason)
    return None


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except (_HTTPFail, ValidationError, web.HTTPException) as exc:
        response = _fail_response(exc)
        if response is None:
            raise
        return response


def _precheck_upload(request: web.Request) -> ResourceOwner:
    """Owner and declared size, checked before any body byte is read."""
    owner = owner_from_headers(request.headers)
    limit = request.app[SETTINGS].max_bundle_bytes
    declared = request.content_length
    if declared is not None and declared > limit:
        raise _HTTPFail(413, "too_large", f"bundle of {declared} bytes exceeds limit {limit}")
    return owner


async def _upload_expect(request: web.Request) -> web.StreamResponse | None:
    """``Expect: 100-continue``: refuse a bad upload before the client sends the body."""
    if request.headers.get("Expect", "").lower() != "100-continue":
        return _error(417, "expectation_failed", "only 'Expect: 100-continue' is supported")
    try:
        _precheck_upload(request)
    except (_HTTPFail, ValidationError) as exc:
        response = _fail_response(exc)
        assert response is not None
        response.force_close()
        return response
    if request.version >= (1, 1):
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0
    return None


class _WriteBehind:
    """Feeds a :class:`BundleWriter` from one dedicated thread while the loop keeps receiving.

    Writes are queued, not awaited, until ``depth`` batches are in flight: receiving and disk
    writes overlap, and an upload holds about ``depth`` batches of memory.
    """

    def __init__(self, writer: BundleWriter, depth: int = 2) -> None:
        self.writer = writer
        self._depth = depth
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="staging-write")
        self._queued: deque[asyncio.Future[None]] = deque()
        self._closed = False

    def run(self, call: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """Run ``call`` on the writer thread, after everything queued before it."""
        return asyncio.get_running_loop().run_in_executor(self._thread, call, *args)

    async def write(self, chunks: list[bytes]) -> None:
        self._queued.append(self.run(self.writer.write, *chunks))
        while self._queued and (len(self._queued) > self._depth or self._queued[0].done()):
            await self._queued.popleft()  # re-raises a failed write

    async def commit(self) -> int:
        while self._queued:
            await self._queued.popleft()
        size = await self.run(self.writer.commit)
        self._close()
        return size

    def abort(self) -> None:
        """Abort once queued writes are done, without waiting: safe in a cancelled handler."""
        if not self._closed:
            self._thread.submit(self.writer.abort)
            self._close()

    def _close(self) -> None:
        self._closed = True
        self._thread.shutdown(wait=False)


def _splice_socket(request: web.Request, writer: BundleWriter) -> Any:
    """The raw socket of a plain-TCP upload whose body the store can ``splice``, else None."""
    transport = request.transport
    if (
        request.content_length is None  # chunked: leave the framing to aiohttp
        or not hasattr(os, "splice")  # Linux only
        or not isinstance(writer, SpliceTarget)
        or transport is None
        or transport.get_extra_info("ssl_object") is not None
    ):
        return None
    return transport.get_extra_info("socket")


async def _receive_spliced(request: web.Request, writer: _WriteBehind, sock: Any) -> int:
    """Take the body off the socket in the kernel: what aiohttp already buffered is written,
    then reading stops and the writer thread ``splice``s the rest from the socket into the
    file, so the payload never enters Python. The connection closes after the answer
    (the HTTP parser never saw the body); a cancelled handler shuts the socket to stop it."""
    declared = request.content_length or 0
    received = 0
    while data := request.content.read_nowait():  # may resume parsing and refill: loop
        received += len(data)
        await writer.write([data])
    if received == declared:  # a small body arrived with the headers
        return received
    assert request.transport is not None
    request.transport.pause_reading()  # from here on the socket's bytes are ours
    target = writer.writer
    assert isinstance(target, SpliceTarget)
    # our own descriptor: the transport may close its socket meanwhile (shutdown, reset),
    # and the number must not be reused under the writer thread
    own = socket.socket(sock.family, sock.type, fileno=os.dup(sock.fileno()))
    poller = select.poll()
    poller.register(own.fileno(), select.POLLIN)

    def wait_readable() -> None:
        if not poller.poll(int(_STALL_SECONDS * 1000)):
            raise TimeoutError(f"no upload data for {_STALL_SECONDS:.0f}s")

    def splice_rest() -> None:
        try:
            target.splice_from(own.fileno(), declared - received, wait_readable)
        finally:
            own.close()

    try:
        await writer.run(splice_rest)
    except asyncio.CancelledError:
        with contextlib.suppress(OSError):
            own.shutdown(socket.SHUT_RDWR)  # wakes the writer thread
        raise
    except (EOFError, TimeoutError, ConnectionError) as exc:
        raise _HTTPFail(400, "incomplete", f"upload ended early: {exc}", close=True) from exc
    finally:
        request.content.feed_eof()  # aiohttp must not wait for body bytes it will never see
    return declared


async def _receive_streamed(request: web.Request, writer: _WriteBehind, limit: int) -> int:
    """Read the body through aiohttp (TLS, chunked, remote stores) in ``chunk_bytes`` batches."""
    batch = request.app[SETTINGS].chunk_bytes
    size, buffered = 0, 0
    pending: list[bytes] = []
    while chunk := await request.content.readany():
        size += len(chunk)
        if size > limit:
            raise _HTTPFail(413, "too_large", f"bundle exceeds limit of {limit} bytes")
        pending.append(chunk)
        buffered += len(chunk)
        if buffered >= batch:
            await writer.write(pending)
            pending, buffered = [], 0
    await writer.write(pending)
    return size


async def _upload(request: web.Request) -> web.Response:
    settings, store, db = request.app[SETTINGS], request.app[STORE], request.app[DB]
    owner = _precheck_upload(request)
    declared = request.content_length
    resource_id, secret = tokens.new_resource_id(), tokens.new_secret()
    hashing = asyncio.ensure_future(
        asyncio.to_thread(tokens.hash_secret, secret, iterations=settings.secret_hash_iterations)
    )
    writer = _WriteBehind(await asyncio.to_thread(store.open_writer, resource_id))
    sock = _splice_socket(request, writer.writer)
    try:
        if sock is not None:
            size = await _receive_spliced(request, writer, sock)
        else:
            size = await _receive_streamed(request, writer, settings.max_bundle_bytes)
        if declared is not None and size != declared:
            raise _HTTPFail(400, "incomplete", f"got {size} of {declared} declared bytes")
        await writer.commit()
    except BaseException:
        writer.abort()  # quick and synchronous: must also run when the handler is cancelled
        hashing.cancel()
        raise
    record = ResourceRecord(resource_id, await hashing, owner, size, request.app[CLOCK]())
    db.insert(record)
    log.info("stored bundle %s (%d bytes) for %s", resource_id, size, owner.namespace)
    body = {"resourceId": resource_id, "resourceSecret": secret}
    response = web.json_response(
        body, status=201, headers={"Location": f"{RESOURCES_PATH}/{resource_id}"}
    )
    if sock is not None:
        response.force_close()
    return response


async def _authenticate(request: web.Request, resource_id: str) -> ResourceRecord:
    """The record for ``resource_id`` if the bearer secret matches; counts failures per client."""
    limiter, clock = request.app[LIMITER], request.app[CLOCK]
    client = request.remote or "unknown"
    wait = limiter.retry_after(client, clock())
    if wait > 0:
        raise _HTTPFail(
            429,
            "too_many_attempts",
            f"too many failed attempts from {client}; retry in {wait:.0f}s",
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise _HTTPFail(
            401,
            "unauthorized",
            "missing credentials: send 'Authorization: Bearer <resourceSecret>'",
            headers={"WWW-Authenticate": 'Bearer realm="sparkplane-staging"'},
        )
    record = request.app[DB].get(resource_id) if tokens.is_resource_id(resource_id) else None
    if record is None:
        limiter.record_failure(client, clock())
        raise _HTTPFail(404, "not_found", f"no staged resource {resource_id} (expired or deleted?)")
    if not await asyncio.to_thread(tokens.verify_secret, secret.strip(), record.secret_hash):
        limiter.record_failure(client, clock())
        raise _HTTPFail(403, "forbidden", f"wrong secret for resource {resource_id}")
    return record


async def _download(request: web.Request) -> web.StreamResponse:
    settings, store = request.app[SETTINGS], request.app[STORE]
    resource_id = request.match_info["resource_id"]
    record = await _authenticate(request, resource_id)
    headers = {"Content-Type": "application/octet-stream"}
    local = await asyncio.to_thread(store.local_path, resource_id)
    if local is None and not await asyncio.to_thread(store.exists, resource_id):
        raise _HTTPFail(410, "gone", f"resource {resource_id} is no longer stored")
    request.app[DB].mark_downloaded(resource_id, request.app[CLOCK]())
    if local is not None:  # zero-copy sendfile (falls back to chunked reads under TLS)
        return web.FileResponse(local, chunk_size=settings.chunk_bytes, headers=headers)
    try:
        reader = await asyncio.to_thread(store.open_reader, resource_id)
    except BundleNotStoredError as exc:
        raise _HTTPFail(410, "gone", f"resource {resource_id} is no longer stored") from exc
    try:
        response = web.StreamResponse(headers=headers)
        response.content_length = record.size
        await response.prepare(request)
        while chunk := await asyncio.to_thread(reader.read, settings.chunk_bytes):
            await response.write(chunk)
        await response.write_eof()
    finally:
        reader.close()
    return response


async def _delete(request: web.Request) -> web.Response:
    """Delete a bundle at once (a submission that failed after its upload); bytes first."""
    resource_id = request.match_info["resource_id"]
    await _authenticate(request, resource_id)
    await asyncio.to_thread(request.app[STORE].delete, resource_id)
    request.app[DB].delete(resource_id)
    log.info("deleted staged bundle %s on request", resource_id)
    return web.Response(status=204)


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def _cleanup_loop(app: web.Application) -> None:
    settings = app[SETTINGS]
    while True:
        await asyncio.sleep(settings.cleanup_interval_seconds)
        try:
            await asyncio.to_thread(
                run_cleanup,
                app[DB],
                app[STORE],
                app[CHECKER],
                app[CLOCK](),
                settings.cleanup_policy,
            )
        except Exception:
            log.exception("clean-up round failed; retrying next interval")


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    swept = await asyncio.to_thread(app[STORE].sweep)
    orphans = await asyncio.to_thread(sweep_orphans, app[DB], app[STORE])
    if swept or orphans:
        log.info("start-up: removed %d partial uploads and %d orphan bundles", swept, orphans)
    task = asyncio.create_task(_cleanup_loop(app))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    app[DB].close()


def _keep_everything(namespace: str, labels: dict[str, str]) -> bool:
    return True


def create_app(
    settings: StagingSettings,
    owner_checker: OwnerChecker | None = None,
    *,
    store: Store | None = None,
    clock: Clock = time.time,
) -> web.Application:
    """The staging web application. Without ``owner_checker``, downloaded bundles are kept
    (only the never-downloaded expiry applies). ``store`` defaults to the local disk store."""
    app = web.Application(
        middlewares=[_json_errors],
        handler_args={"read_bufsize": settings.chunk_bytes},
    )
    app[SETTINGS] = settings
    app[STORE] = store or LocalDiskStore(settings.storage_dir, fsync=settings.fsync)
    app[DB] = MetadataDB(settings.db_path)
    app[LIMITER] = FailureLimiter(
        max_failures=settings.max_failed_attempts, window=settings.failed_attempts_window_seconds
    )
    app[CLOCK] = clock
    app[CHECKER] = owner_checker or _keep_everything
    app.router.add_post(RESOURCES_PATH, _upload, expect_handler=_upload_expect)
    app.router.add_get(RESOURCES_PATH + "/{resource_id}", _download)
    app.router.add_delete(RESOURCES_PATH + "/{resource_id}", _delete)
    app.router.add_get("/healthz", _healthz)
    app.cleanup_ctx.append(_lifecycle)
    return app


def serve(settings: StagingSettings, owner_checker: OwnerChecker | None = None) -> None:
    """Run the server until interrupted (blocking)."""
    web.run_app(
        create_app(settings, owner_checker),
        host=settings.host,
        port=settings.port,
        ssl_context=settings.ssl_context(),
        access_log=log,
        print=lambda *args: log.info(" ".join(str(a) for a in args)),
    )
