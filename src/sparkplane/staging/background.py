"""Run the staging server inside this process, on a background thread (tests, demo, notebooks).

``sparkplane staging serve`` is the production entry point; this runs the same application
(:func:`sparkplane.staging.server.create_app`) on its own event loop in a daemon thread so
synchronous code (a submitter, a test, ``examples/demo.py``) can use it, then stops it cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

from aiohttp import web

from sparkplane.staging.auth import TokenReviewer
from sparkplane.staging.cleanup import OwnerChecker
from sparkplane.staging.server import create_app, start
from sparkplane.staging.settings import StagingSettings

_WILDCARD = ("", "0.0.0.0", "::")


@contextlib.contextmanager
def serve_in_background(
    settings: StagingSettings,
    owner_checker: OwnerChecker | None = None,
    token_reviewer: TokenReviewer | None = None,
) -> Iterator[str]:
    """Serve until the block ends; yields the base URL (``settings.port`` 0 = a free port)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="sparkplane-staging", daemon=True)
    thread.start()

    async def begin() -> tuple[web.AppRunner, int]:
        app = create_app(settings, owner_checker, token_reviewer=token_reviewer)
        return await start(app, access_log=None)

    try:
        runner, port = asyncio.run_coroutine_threadsafe(begin(), loop).result(timeout=30)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        raise
    scheme = "https" if settings.tls_cert else "http"
    host = "127.0.0.1" if settings.host in _WILDCARD else settings.host
    try:
        yield f"{scheme}://{host}:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(_stop(runner), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


async def _stop(runner: web.AppRunner) -> None:
    """Clean up, then end what is left (a refused upload's handler still draining)."""
    await runner.cleanup()
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
