"""The tests' staging server: the real application on a thread of the test process.

``sparkplane staging serve`` (or :func:`sparkplane.staging.process.staging_server`, its child
process) is how the product runs the server. The tests run the same application
(:func:`sparkplane.staging.server.create_app`) on an event loop of its own in a daemon thread, so
they can hand it test settings (fast secret hashing, no clean-up rounds) and owner checkers or
token reviewers of their own, and call the synchronous client against it from the test's
thread; then it is stopped cleanly. :func:`serving_app` does the same for any aiohttp
application (a plain file server, a flaky one), :func:`loop_thread` for raw asyncio servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from ssl import SSLContext
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.test_utils import TestServer

from sparkplane.staging.admission import SETTINGS
from sparkplane.staging.auth import TokenReviewer
from sparkplane.staging.cleanup import OwnerChecker
from sparkplane.staging.server import create_app, start
from sparkplane.staging.settings import StagingSettings

_T = TypeVar("_T")
_WILDCARD = ("", "0.0.0.0", "::")


class LoopThread:
    """An event loop running in a daemon thread; :meth:`run` waits for a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-loop", daemon=True)

    def run(self, coro: Coroutine[Any, Any, _T], timeout: float = 30) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


@contextlib.contextmanager
def loop_thread() -> Iterator[LoopThread]:
    """A :class:`LoopThread` until the block ends; then what still runs on it is cancelled
    (a refused upload's handler still draining) and the loop is closed."""
    runner = LoopThread()
    runner.thread.start()
    try:
        yield runner
    finally:
        with contextlib.suppress(Exception):
            runner.run(_cancel_the_rest())
        runner.loop.call_soon_threadsafe(runner.loop.stop)
        runner.thread.join(timeout=10)
        runner.loop.close()


async def _cancel_the_rest() -> None:
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


@contextlib.contextmanager
def serve_in_background(
    settings: StagingSettings,
    owner_checker: OwnerChecker | None = None,
    token_reviewer: TokenReviewer | None = None,
) -> Iterator[str]:
    """The staging server as production starts it (its connection guard), until the block
    ends; yields the base URL (``settings.port`` 0 = a free port)."""
    app = create_app(settings, owner_checker, token_reviewer=token_reviewer)
    with served(app) as url:
        yield url


@contextlib.contextmanager
def served(app: web.Application) -> Iterator[str]:
    """A staging ``app`` (from :func:`create_app`) served as production does, on a thread."""
    with loop_thread() as runner:
        web_runner, port = runner.run(start(app, access_log=None))
        try:
            config = app[SETTINGS]
            scheme = "https" if config.tls_cert else "http"
            host = "127.0.0.1" if config.host in _WILDCARD else config.host
            yield f"{scheme}://{host}:{port}"
        finally:
            runner.run(web_runner.cleanup())


@contextlib.contextmanager
def serving_app(app: web.Application, ssl: SSLContext | None = None) -> Iterator[str]:
    """Any aiohttp ``app`` on a real 127.0.0.1 port, on a thread; yields the base URL."""
    with loop_thread() as runner:
        server = TestServer(app, host="127.0.0.1")
        runner.run(server.start_server(ssl=ssl))
        try:
            yield str(server.make_url("")).rstrip("/")
        finally:
            runner.run(server.close())
