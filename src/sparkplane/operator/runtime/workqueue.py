"""A work queue of keys with de-duplication, delayed adds and per-key exponential backoff.

As client-go's rate-limited workqueue: a key waiting in the queue is queued once however often
it is added; a key being processed is never handed to a second worker at the same time (adding it
meanwhile marks it dirty, and it is queued again when the worker calls :meth:`done`); ``add_after``
schedules a key for later (the earliest request wins); ``add_rate_limited`` backs off
exponentially per key until :meth:`forget`. Called by the operator runner. Thread-safe, no I/O.

Two lanes: ``add(key, urgent=True)`` puts a key in the urgent lane, which :meth:`get` always
empties first; a key already waiting in the normal lane moves up. The operator adds a resource
whose observed pods changed as urgent (its status must follow its pods: a status write), and new
or resynced resources as normal (typically a driver to create), so under overload the status of
running apps is written first and new apps wait (issue 21 item 5). Delayed and rate-limited adds
go to the normal lane.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    """Keys to reconcile; ``get`` blocks until one is due or the queue shuts down."""

    def __init__(
        self,
        *,
        base_delay: float = 0.05,
        max_delay: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_delay, self.max_delay = base_delay, max_delay
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._urgent: deque[K] = deque()
        self._queued: dict[K, bool] = {}  # key -> in the urgent lane (stale deque entries skipped)
        self._processing: set[K] = set()
        self._dirty: dict[K, bool] = {}
        self._delayed: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._failures: dict[K, int] = {}
        self._seq = 0
        self._shutdown = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._queued)

    def urgent(self) -> int:
        """How many keys wait in the urgent lane."""
        with self._cond:
            return sum(1 for lane in self._queued.values() if lane)

    def add(self, key: K, *, urgent: bool = False) -> None:
        """Queue ``key`` now (no-op if already queued in that lane or a more urgent one)."""
        with self._cond:
            self._add_locked(key, urgent)

    def _add_locked(self, key: K, urgent: bool = False) -> None:
        if self._shutdown:
            return
        self._due.pop(key, None)
        if key in self._processing:
            self._dirty[key] = self._dirty.get(key, False) or urgent
            return
        lane = self._queued.get(key)
        if lane is None or (urgent and not lane):
            self._queued[key] = urgent
            (self._urgent if urgent else self._queue).append(key)
            self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds (an earlier pending request wins)."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            due = self._clock() + delay
            if key in self._due and self._due[key] <= due:
                return
            self._due[key] = due
            self._seq += 1
            heapq.heappush(self._delayed, (due, self._seq, key))
            self._cond.notify()

    def add_soon(self, key: K, delay: float) -> None:
        """Queue ``key`` in ``delay`` seconds unless it already waits in a lane (that pass will
        read what changed): changes that arrive together are folded into one pass."""
        with self._cond:
            if key in self._queued:
                return
        self.add_after(key, delay)

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its next backoff (base x 2^failures, capped); returns the delay."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = float(min(self.base_delay * (2.0**failures), self.max_delay))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (after a successful reconcile)."""
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def get(self, timeout: float | None = None) -> K | None:
        """The next due key (marked as processing), or None on shutdown or timeout."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                self._promote_locked()
                if self._shutdown:
                    return None
                key = self._pop_locked()
                if key is not None:
                    return key
                wait = None
                if self._delayed:
                    wait = max(self._delayed[0][0] - self._clock(), 0.0)
                if deadline is not None:
                    left = deadline - self._clock()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def _pop_locked(self) -> K | None:
        """The first key of the urgent lane, else of the normal one (marked as processing)."""
        for lane, urgent in ((self._urgent, True), (self._queue, False)):
            while lane:
                key = lane.popleft()
                if self._queued.get(key) is urgent:  # else moved up, or a stale entry
                    del self._queued[key]
                    self._processing.add(key)
                    return key
        return None

    def _promote_locked(self) -> None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            if self._due.get(key) == due:
                self._add_locked(key)

    def done(self, key: K) -> None:
        """``key`` is processed; if it was added meanwhile it is queued again."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._add_locked(key, self._dirty.pop(key))

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
