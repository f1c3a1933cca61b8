"""The driver's log, live in the task log while the task is deferred.

A trigger's log lines land in its task's log (Airflow 3 routes them by the trigger's context
variables), so :func:`follow` runs inside the trigger's own asyncio task and logs every driver
line as it is written. The Kubernetes log stream is blocking (sparkplane's gateway is sync): each
follow reads it in a thread of its own, never in the loop's default executor, whose few workers
(``min(32, cpus + 4)``) the shared watch of :mod:`sparkplane_airflow.waiter` needs; lines cross
to the loop through a queue. Before the driver's container has started there is no log to read:
the follow tries again every :data:`RETRY` seconds, skipping the lines it has already logged, and
ends once the stream ends with the pod. Its result says whether the whole log went by, so the
resumed task copies the driver's last lines only when it did not.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparkplane import SparkPlane

RETRY = 2.0  # seconds between tries to open the driver's log (not yet started, or a broken stream)
_END = object()


async def _lines(open_log: Callable[[], Iterator[str]]) -> Any:
    """Yield the lines of ``open_log()`` read in a thread of its own (see the module's note)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def pump() -> None:
        try:
            for line in open_log():
                loop.call_soon_threadsafe(queue.put_nowait, line)
            loop.call_soon_threadsafe(queue.put_nowait, _END)
        except BaseException as exc:  # handed to the loop, raised there
            loop.call_soon_threadsafe(queue.put_nowait, exc)

    threading.Thread(target=pump, daemon=True, name="sparkplane-live-log").start()
    while True:
        item = await queue.get()
        if item is _END:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


async def follow(sp: SparkPlane, name: str, namespace: str, say: Callable[..., None]) -> bool:
    """Log the driver's lines through ``say`` until its pod ends; True once it has.

    Cancel it to stop early (the app finished before the stream closed, or was killed)."""
    from sparkplane.errors import SparkplaneError

    logged = 0
    while True:
        index = 0
        try:
            async for line in _lines(lambda: sp.logs(name, namespace=namespace, follow=True)):
                index += 1
                if index > logged:  # a re-opened stream starts again at the first line
                    say("driver | %s", str(line).rstrip("\n"))
                    logged = index
        except SparkplaneError:  # no driver yet, or it has not started: try again
            await asyncio.sleep(RETRY)
            continue
        except OSError:  # the stream broke: read it again, skipping what went by
            await asyncio.sleep(RETRY)
            continue
        if logged:
            return True
        await asyncio.sleep(RETRY)  # an empty log of a pod not yet running: not the end
