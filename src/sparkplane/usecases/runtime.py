"""The one place where synchronous sparkplane code runs a coroutine: a background event loop.

sparkplane's core is synchronous (the Kubernetes client blocks; concurrency comes from
threads and shared watch caches). The few asynchronous APIs it uses (the staging client's
``*_async`` functions) run on one daemon thread's event loop, started on first use, through
:func:`run_coroutine`. So a synchronous call never calls ``asyncio.run``: it works the same from
a plain script, from a worker thread, and from inside a running event loop (a notebook cell, an
``async def`` calling the sync API), whose loop it neither needs nor blocks on.
Called by :mod:`sparkplane.usecases.stage`. Must not hold application state.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

_T = TypeVar("_T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop  # noqa: PLW0603 - one loop per process, started lazily
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="sparkplane-async", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run_coroutine(coro: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
    """Run ``coro`` on the background loop and wait for its result in this thread.

    Cancels the coroutine if the wait is interrupted (timeout, KeyboardInterrupt)."""
    future = asyncio.run_coroutine_threadsafe(coro, _background_loop())
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise
