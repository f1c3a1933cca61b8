"""The resource staging server: HTTP upload and download of bundles, plus the clean-up loop.

API (JSON errors are ``{"error": <code>, "message": <text>}``, :mod:`~.answers`; a full disk
is ``507 insufficient_storage`` and leaves no partial bundle):
  ``POST /api/v0/resources``   ``Authorization: Bearer <upload secret | Kubernetes token>``,
      ``Content-Length``, owner in headers (:mod:`~.owner`), body = the bundle, streamed
      -> 201 ``{resourceId, resourceSecret}``
  ``GET /api/v0/resources/{id}`` with ``Authorization: Bearer <secret>`` -> the bytes, streamed
  ``DELETE /api/v0/resources/{id}`` with the same secret -> 204 (a submitter's rollback)
  ``GET /healthz`` -> ``{"status": "ok"}``

Started by ``sparkplane staging serve`` (:func:`serve`), :mod:`~.background` and tests
(:func:`create_app`, :func:`start`). Every upload is admitted (uploader, size, quotas, slots:
:mod:`~.admission`, :mod:`~.limits`) before its body is read; bodies move through
:mod:`~.transfer`; idle connections are closed by the :class:`~.limits.ConnectionGuard`.
Kubernetes is reached only through the injected owner checker and token reviewer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from sparkplane.history.s3_store import parse_location
from sparkplane.staging import tokens
from sparkplane.staging.admission import (
    ADDRESS_LIMITER,
    AUTH,
    CLOCK,
    DB,
    LIMITER,
    QUOTAS,
    REVIEWS,
    SETTINGS,
    Clock,
    admit_upload,
    check_secret,
    upload_expect,
)
from sparkplane.staging.answers import HTTPFail, disk_full, json_errors
from sparkplane.staging.auth import TokenReviewer, UploadAuth
from sparkplane.staging.cleanup import OwnerChecker, no_owner_check, run_cleanup, sweep_orphans
from sparkplane.staging.limits import ConnectionGuard, Quotas, UploadSlots, descriptor_budget
from sparkplane.staging.metadata import MetadataDB, ResourceRecord
from sparkplane.staging.ratelimit import FailureLimiter
from sparkplane.staging.s3 import S3BundleStore, S3Metadata
from sparkplane.staging.settings import StagingSettings
from sparkplane.staging.store import BundleNotStoredError, LocalDiskStore, Store
from sparkplane.staging.transfer import (
    WriteBehind,
    receive_spliced,
    receive_streamed,
    splice_socket,
)

log = logging.getLogger(__name__)

RESOURCES_PATH = "/api/v0/resources"
STORE = web.AppKey("store", Store)
SLOTS = web.AppKey("slots", UploadSlots)
GUARD = web.AppKey("guard", ConnectionGuard)
CHECKER: web.AppKey[OwnerChecker] = web.AppKey("owner_checker")


async def _upload(request: web.Request) -> web.Response:
    app = request.app
    settings, store = app[SETTINGS], app[STORE]
    owner, declared, uploader = await admit_upload(request)
    with (
        app[SLOTS].take(uploader.name),
        app[QUOTAS].reserve(owner.namespace, declared, app[DB].usage(owner.namespace)),
    ):
        resource_id, secret = tokens.new_resource_id(), tokens.new_secret()
        hashing = asyncio.ensure_future(
            asyncio.to_thread(
                tokens.hash_secret, secret, iterations=settings.secret_hash_iterations
            )
        )
        try:
            writer = WriteBehind(await asyncio.to_thread(store.open_writer, resource_id))
        except BaseException:
            hashing.cancel()
            raise
        sock = splice_socket(request, writer.writer)
        stall = settings.body_timeout_seconds
        try:
            if sock is not None:
                size = await receive_spliced(request, writer, sock, stall)
            else:
                size = await receive_streamed(
                    request,
                    writer,
                    limit=settings.max_bundle_bytes,
                    batch=settings.chunk_bytes,
                    stall_seconds=stall,
                )
            if size != declared:
                raise HTTPFail(400, "incomplete", f"got {size} of {declared} declared bytes")
            await writer.commit()
        except BaseException as exc:
            hashing.cancel()
            if not disk_full(exc):
                writer.abort()  # quick and synchronous: must also run when the handler is cancelled
                raise
            await writer.discard()  # the partial bundle is gone before the 507 is answered
            raise
        record = ResourceRecord(resource_id, await hashing, owner, size, app[CLOCK]())
        try:
            app[DB].insert(record)
        except Exception:  # no record, no bundle: nothing is left that nobody owns
            await asyncio.to_thread(store.delete, resource_id)
            raise
    log.info(
        "stored bundle %s (%d bytes) for namespace %s from %s (%s)",
        *(resource_id, size, owner.namespace, uploader.name, uploader.via),
    )
    body = {"resourceId": resource_id, "resourceSecret": secret}
    response = web.json_response(
        body, status=201, headers={"Location": f"{RESOURCES_PATH}/{resource_id}"}
    )
    if sock is not None:
        response.force_close()
    return response


async def _download(request: web.Request) -> web.StreamResponse:
    settings, store = request.app[SETTINGS], request.app[STORE]
    resource_id = request.match_info["resource_id"]
    record = await check_secret(request, resource_id)
    headers = {"Content-Type": "application/octet-stream"}
    local = await asyncio.to_thread(store.local_path, resource_id)
    if local is None and not await asyncio.to_thread(store.exists, resource_id):
        raise HTTPFail(410, "gone", f"resource {resource_id} is no longer stored")
    request.app[DB].mark_downloaded(resource_id, request.app[CLOCK]())
    if local is not None:  # zero-copy sendfile (falls back to chunked reads under TLS)
        return web.FileResponse(local, chunk_size=settings.chunk_bytes, headers=headers)
    try:
        reader = await asyncio.to_thread(store.open_reader, resource_id)
    except BundleNotStoredError as exc:
        raise HTTPFail(410, "gone", f"resource {resource_id} is no longer stored") from exc
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
    await check_secret(request, resource_id)
    await asyncio.to_thread(request.app[STORE].delete, resource_id)
    request.app[DB].delete(resource_id)
    log.info("deleted staged bundle %s on request", resource_id)
    return web.Response(status=204)


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


@web.middleware
async def _mark_busy(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Tell the connection guard this connection is working, not idle."""
    guard = request.app[GUARD]
    guard.busy(request.protocol)
    try:
        return await handler(request)
    finally:
        guard.done(request.protocol)


async def _background(app: web.Application) -> None:
    settings, guard = app[SETTINGS], app[GUARD]
    next_cleanup = time.monotonic() + settings.cleanup_interval_seconds
    while True:
        await asyncio.sleep(min(1.0, settings.idle_timeout_seconds / 4))
        guard.reap()
        if time.monotonic() < next_cleanup:
            continue
        next_cleanup = time.monotonic() + settings.cleanup_interval_seconds
        try:
            await asyncio.to_thread(
                run_cleanup,
                app[DB],
                app[STORE],
                app[CHECKER],
                app[CLOCK](),
                settings.cleanup_policy,
            )
        except Exception as exc:
            log.warning(
                "clean-up round failed (%s: %s); retrying next interval", type(exc).__name__, exc
            )


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    swept = await asyncio.to_thread(app[STORE].sweep)
    orphans = await asyncio.to_thread(sweep_orphans, app[DB], app[STORE])
    if swept or orphans:
        log.info("start-up: removed %d partial uploads and %d orphan bundles", swept, orphans)
    task = asyncio.create_task(_background(app))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    app[DB].close()


def create_app(
    settings: StagingSettings,
    owner_checker: OwnerChecker | None = None,
    *,
    token_reviewer: TokenReviewer | None = None,
    store: Store | None = None,
    clock: Clock = time.time,
) -> web.Application:
    """The staging web application. Without ``owner_checker``, downloaded bundles expire at
    ``max_age``; uploads need an upload secret from ``settings`` or a token ``token_reviewer``
    confirms (or ``allow_anonymous_uploads``). ``store`` defaults to the local disk store, or
    with ``settings.store`` (``s3://BUCKET/PREFIX``) to the bucket, the records there too."""
    app = web.Application(
        middlewares=[json_errors, _mark_busy],
        # a refused upload's unread body is drained for 2 s at most (so the client reads the
        # answer), not aiohttp's 10 s
        handler_args={"read_bufsize": settings.chunk_bytes, "lingering_time": 2.0},
    )
    app[SETTINGS] = settings
    if settings.store:  # object storage: bytes and records in the bucket, shared by replicas
        location = parse_location(settings.store, "--store")
        app[STORE] = store or S3BundleStore(location)
        app[DB] = S3Metadata(location)
    else:
        app[STORE] = store or LocalDiskStore(settings.storage_dir, fsync=settings.fsync)
        app[DB] = MetadataDB(settings.db_path)
    window = settings.failed_attempts_window_seconds
    app[LIMITER] = FailureLimiter(max_failures=settings.max_failed_attempts, window=window)
    app[ADDRESS_LIMITER] = FailureLimiter(settings.max_failed_attempts * 10, window)
    app[REVIEWS] = asyncio.Semaphore(16)
    app[AUTH] = UploadAuth(
        settings.upload_secrets,
        token_reviewer,
        allow_anonymous=settings.allow_anonymous_uploads,
        cache_seconds=settings.auth_cache_seconds,
        clock=clock,
    )
    app[QUOTAS] = Quotas(settings.total_quota_bytes, settings.namespace_quota_bytes)
    app[SLOTS] = UploadSlots(settings.max_uploads, settings.max_uploads_per_client)
    app[GUARD] = ConnectionGuard(
        settings.max_connections, settings.idle_timeout_seconds, time.monotonic
    )
    app[CLOCK] = clock
    app[CHECKER] = owner_checker or no_owner_check
    app.router.add_post(RESOURCES_PATH, _upload, expect_handler=upload_expect)
    app.router.add_get(RESOURCES_PATH + "/{resource_id}", _download)
    app.router.add_delete(RESOURCES_PATH + "/{resource_id}", _delete)
    app.router.add_get("/healthz", _healthz)
    app.cleanup_ctx.append(_lifecycle)
    return app


async def start(app: web.Application, **runner_args: Any) -> tuple[web.AppRunner, int]:
    """Listen as ``app``'s settings say, behind its connection guard; (runner, bound port)."""
    settings = app[SETTINGS]
    runner = web.AppRunner(app, **runner_args)
    await runner.setup()
    assert runner.server is not None
    app[GUARD].attach(runner.server)
    site = web.TCPSite(runner, settings.host, settings.port, ssl_context=settings.ssl_context())
    await site.start()
    return runner, int(runner.addresses[0][1])


def serve(
    settings: StagingSettings,
    owner_checker: OwnerChecker | None = None,
    token_reviewer: TokenReviewer | None = None,
) -> None:
    """Run the server until interrupted (blocking)."""

    async def main() -> None:
        app = create_app(settings, owner_checker, token_reviewer=token_reviewer)
        app[GUARD].max_connections = descriptor_budget(settings.max_connections)
        runner, port = await start(app, access_log=log, handle_signals=True)
        where = "loopback only; --host 0.0.0.0 serves other machines"
        if settings.host not in ("127.0.0.1", "::1", "localhost"):
            where = "reachable from other machines"
        scheme = "https" if settings.tls_cert else "http"
        log.info("staging server on %s://%s:%d (%s)", scheme, settings.host, port, where)
        if owner_checker is None:
            log.info(
                "no cluster credentials: downloaded bundles are deleted when %gs old (--max-age)",
                settings.max_age_seconds,
            )
        methods = app[AUTH].methods
        if methods:
            log.info("uploads accepted with: %s", "; ".join(methods))
        else:
            log.warning(
                "uploads accepted with: nothing: every upload is refused "
                "(give --upload-secret-file or cluster credentials)"
            )
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt, web.GracefulExit):
        asyncio.run(main())
