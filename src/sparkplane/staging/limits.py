"""What one client may cost the staging server: storage quotas, upload slots, connections.

Used by the server before an upload body is read (:class:`Quotas`, :class:`UploadSlots`) and
by the listening socket (:class:`ConnectionGuard`, sized by :func:`descriptor_budget`). Quotas
count the stored bytes (the metadata database's sums, passed in) plus the bytes reserved by
uploads in flight, so concurrent uploads cannot overshoot together. The connection guard caps
open connections below the descriptor limit and closes connections that sit idle (no request
being handled: nothing sent, slow headers, keep-alive) so thousands of idle sockets cannot
starve health checks or real clients. No disk or network I/O here; the clock is a parameter.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import resource
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


class LimitExceeded(Exception):
    """A limit refuses the request: HTTP ``status`` with ``code`` and a message naming it."""

    def __init__(self, status: int, code: str, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


@dataclass
class Quotas:
    """Total and per-namespace byte quotas (0 = unlimited) with in-flight reservations."""

    total_bytes: int
    namespace_bytes: int
    _reserved: dict[int, tuple[str, int]] = field(default_factory=dict)
    _ids: Iterator[int] = field(default_factory=itertools.count)

    def _in_flight(self, namespace: str | None = None) -> int:
        return sum(n for ns, n in self._reserved.values() if namespace in (None, ns))

    @contextmanager
    def reserve(self, namespace: str, size: int, stored: tuple[int, int]) -> Iterator[None]:
        """Hold ``size`` bytes for the block; ``stored`` = (all bytes, ``namespace``'s bytes).

        Raises :class:`LimitExceeded` (507) naming the quota that would be exceeded."""
        total, in_namespace = stored
        if self.namespace_bytes:
            used = in_namespace + self._in_flight(namespace)
            if used + size > self.namespace_bytes:
                raise LimitExceeded(
                    507,
                    "namespace_quota_exceeded",
                    f"namespace quota exceeded: namespace {namespace!r} holds {used} of "
                    f"{self.namespace_bytes} bytes (--namespace-quota-mb) and this bundle needs "
                    f"{size}; wait for its apps to finish or delete them (sparkplane gc)",
                )
        if self.total_bytes:
            used = total + self._in_flight()
            if used + size > self.total_bytes:
                raise LimitExceeded(
                    507,
                    "total_quota_exceeded",
                    f"total quota exceeded: the server holds {used} of {self.total_bytes} "
                    f"bytes (--total-quota-mb) and this bundle needs {size}",
                )
        key = next(self._ids)
        self._reserved[key] = (namespace, size)
        try:
            yield
        finally:
            del self._reserved[key]


@dataclass
class UploadSlots:
    """At most ``total`` uploads at once, and ``per_client`` for any one uploader."""

    total: int
    per_client: int
    _running: Counter[str] = field(default_factory=Counter)

    @contextmanager
    def take(self, client: str) -> Iterator[None]:
        if self._running[client] >= self.per_client:
            raise LimitExceeded(
                429,
                "too_many_uploads",
                f"{client} already has {self.per_client} uploads in progress "
                "(--max-uploads-per-client); retry when one finishes",
                retry_after=5,
            )
        if sum(self._running.values()) >= self.total:
            raise LimitExceeded(
                503,
                "busy",
                f"the server is receiving {self.total} uploads (--max-uploads); retry shortly",
                retry_after=5,
            )
        self._running[client] += 1
        try:
            yield
        finally:
            self._running[client] -= 1
            if not self._running[client]:
                del self._running[client]


class ConnectionGuard:
    """Caps connections and closes idle ones; attach to an aiohttp ``web.Server``.

    A connection is *busy* while a handler runs for it (marked by :meth:`middleware`), else
    *idle* since it was accepted or its last request ended. Idle connections older than
    ``idle_timeout`` are closed by :meth:`reap`; at ``max_connections`` a new connection
    evicts the longest-idle one, or is closed itself when every connection is busy.
    """

    def __init__(
        self, max_connections: int, idle_timeout: float, clock: Callable[[], float]
    ) -> None:
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._idle_since: dict[Any, float] = {}  # handler -> time; absent while busy
        self._transports: dict[Any, asyncio.BaseTransport] = {}
        self.closed_idle = 0
        self.refused = 0

    def attach(self, server: Any) -> None:
        """Wrap ``server``'s connection hooks (an aiohttp ``web.Server``)."""
        made, lost = server.connection_made, server.connection_lost

        def connection_made(handler: Any, transport: asyncio.BaseTransport) -> None:
            made(handler, transport)
            if len(self._transports) >= self.max_connections and not self._evict_one():
                self.refused += 1
                transport.close()
                return
            self._transports[handler] = transport
            self._idle_since[handler] = self._clock()

        def connection_lost(handler: Any, exc: BaseException | None = None) -> None:
            self._transports.pop(handler, None)
            self._idle_since.pop(handler, None)
            lost(handler, exc)

        server.connection_made, server.connection_lost = connection_made, connection_lost

    @property
    def open(self) -> int:
        return len(self._transports)

    def busy(self, handler: Any) -> None:
        self._idle_since.pop(handler, None)

    def done(self, handler: Any) -> None:
        if handler in self._transports:
            self._idle_since[handler] = self._clock()

    def _evict_one(self) -> bool:
        if not self._idle_since:
            return False
        oldest = min(self._idle_since, key=self._idle_since.__getitem__)
        self._close(oldest)
        return True

    def _close(self, handler: Any) -> None:
        transport = self._transports.pop(handler, None)
        self._idle_since.pop(handler, None)
        self.closed_idle += 1
        if transport is not None:
            transport.close()

    def reap(self) -> int:
        """Close every connection idle for longer than ``idle_timeout``; returns how many."""
        limit = self._clock() - self.idle_timeout
        stale = [h for h, since in self._idle_since.items() if since < limit]
        for handler in stale:
            self._close(handler)
        return len(stale)


def descriptor_budget(wanted: int) -> int:
    """Raise the open-file limit toward ``wanted`` + headroom; the connections it allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted + 256 if hard == resource.RLIM_INFINITY else min(hard, wanted + 256)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return wanted if soft == resource.RLIM_INFINITY else max(16, min(wanted, soft - 256))
