"""Receiving an upload body into a :class:`~sparkplane.staging.store.BundleWriter`.

Called by the server's upload handler. On plain TCP to the local disk store the body is
``splice``d from the socket into the file on a per-upload writer thread, so the payload never
enters Python; TLS, chunked bodies and remote stores stream through aiohttp in ``chunk_bytes``
batches. Both paths give up on a body that stalls for ``stall_seconds`` (a slow or idle client
must not hold a slot and a thread for ever). Owns no HTTP answers beyond :class:`TransferFailed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from aiohttp import web

from sparkplane.staging.store import BundleWriter, SpliceTarget

_T = TypeVar("_T")


class TransferFailed(Exception):
    """The body did not arrive whole: ``status`` 400 (incomplete, stalled) or 413 (too big)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class WriteBehind:
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

    async def discard(self) -> None:
        """Abort and wait until what was written is removed (before a refusal is answered)."""
        if not self._closed:
            removed = self.run(self.writer.abort)  # after the queued writes
            self._close()
            await asyncio.shield(removed)  # a cancelled handler still gets it removed

    def _close(self) -> None:
        self._closed = True
        self._thread.shutdown(wait=False)


def splice_socket(request: web.Request, writer: BundleWriter) -> Any:
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


async def receive_spliced(
    request: web.Request, writer: WriteBehind, sock: Any, stall_seconds: float
) -> int:
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
        if not poller.poll(int(stall_seconds * 1000)):
            raise TimeoutError(f"no upload data for {stall_seconds:g}s")

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
        raise TransferFailed(400, "incomplete", f"upload ended early: {exc}") from exc
    finally:
        request.content.feed_eof()  # aiohttp must not wait for body bytes it will never see
    return declared


async def receive_streamed(
    request: web.Request, writer: WriteBehind, *, limit: int, batch: int, stall_seconds: float
) -> int:
    """Read the body through aiohttp (TLS, chunked, remote stores) in ``batch``-byte batches."""
    size, buffered = 0, 0
    pending: list[bytes] = []
    while True:
        try:
            chunk = await asyncio.wait_for(request.content.readany(), stall_seconds)
        except TimeoutError as exc:
            raise TransferFailed(
                400, "incomplete", f"upload ended early: no data for {stall_seconds:g}s"
            ) from exc
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise TransferFailed(413, "too_large", f"bundle exceeds limit of {limit} bytes")
        pending.append(chunk)
        buffered += len(chunk)
        if buffered >= batch:
            await writer.write(pending)
            pending, buffered = [], 0
    await writer.write(pending)
    return size
