"""One sparkplane watch per cluster and namespace, shared by every trigger of a triggerer.

A deferred task waits on a future here instead of holding a watch (or a worker thread) of its
own: 200 waiting tasks in one namespace cost one watch stream and one thread. The watch is
:meth:`AsyncSparkPlane.watch`, restarted every ``REFRESH`` seconds (each start re-reads every
app of the namespace from the client's shared tracker, so a missed change is caught then);
an app nobody sees finish for ``CHECK`` seconds is looked up in the watch's own cache (the
client's tracker: no request), and fetched on its own only when the cache lacks it, which is how
a deleted app is noticed (:class:`AppGone`). So 200 waiting tasks make no request of their own
while their apps run (one GET per app and minute, with its driver's and executors' pods, did:
~10 requests/s at N=200, measured by benchmarks/airflow_deferred.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkplane import AsyncSparkPlane

if TYPE_CHECKING:
    from sparkplane import App

log = logging.getLogger(__name__)

REFRESH = 10.0  # seconds of one watch before it is started again (bounds a triggerer's shutdown)
CHECK = 60.0  # seconds between direct reads of an app that the watch has not finished
BACKOFF = 5.0  # seconds before a failed watch is started again


class AppGone(LookupError):
    """The app no longer exists (deleted before it finished, or never made)."""


class Watch:
    """The finished apps of one namespace, as one watch sees them."""

    def __init__(self, sp: AsyncSparkPlane, namespace: str) -> None:
        self.sp = sp
        self.namespace = namespace
        self.latest: dict[str, App] = {}
        self.waiters: dict[str, list[asyncio.Future[App]]] = {}
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                async for app in self.sp.watch(self.namespace, timeout=REFRESH):
                    self._seen(app)
            except asyncio.CancelledError:
                raise
            except Exception:  # the API server away for a while: keep the waiters, retry
                log.warning("watch of namespace %s failed; again in %ss", self.namespace, BACKOFF)
                await asyncio.sleep(BACKOFF)

    def _seen(self, app: App) -> None:
        self.latest[app.name] = app
        if app.state.finished:
            for future in self.waiters.pop(app.name, []):
                if not future.done():
                    future.set_result(app)

    def _cached(self, name: str) -> App | None:
        """The app in the client's tracker (started by the watch; a thread: starting it blocks)."""
        return self.sp.sync.tracker(self.namespace).get(self.namespace, name)

    async def finished(self, name: str, deadline: float | None = None) -> App:
        """The app once it has finished; TimeoutError past ``deadline`` (``time.time()``)."""
        from sparkplane.errors import AppNotFoundError

        future: asyncio.Future[App] = asyncio.get_running_loop().create_future()
        self.waiters.setdefault(name, []).append(future)
        try:
            while True:
                known = self.latest.get(name)
                if known is not None and known.state.finished:
                    return known
                left = CHECK if deadline is None else min(CHECK, deadline - time.time())
                if left <= 0:
                    raise TimeoutError(name)
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(future), left)
                cached = await asyncio.to_thread(self._cached, name)
                if cached is not None:  # the watch's own cache: no request
                    self._seen(cached)
                    continue
                try:  # not in the cache: gone, or too new for it; the API server says which
                    self._seen(await self.sp.get(name, self.namespace))
                except AppNotFoundError as exc:
                    raise AppGone(name) from exc
        finally:
            waiting = self.waiters.get(name, [])
            if future in waiting:
                waiting.remove(future)
            future.cancel()


_WATCHES: dict[tuple[Any, ...], Watch] = {}


def _key(connect: Mapping[str, Any], namespace: str) -> tuple[Any, ...]:
    return (id(asyncio.get_running_loop()), tuple(sorted(connect.items())), namespace)


async def shared(connect: Mapping[str, Any], namespace: str) -> Watch:
    """The watch of ``namespace`` through the connection ``connect`` (made on first use)."""
    key = _key(connect, namespace)
    if key not in _WATCHES:
        sp = await AsyncSparkPlane.connect(**{**connect, "namespace": namespace})
        if key not in _WATCHES:  # another trigger made it while this one connected
            _WATCHES[key] = Watch(sp, namespace)
        else:
            await sp.close()
    return _WATCHES[key]
