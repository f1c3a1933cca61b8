"""Backpressure on driver creation: an adaptive in-flight limit (AIMD) on the cluster's signals.

Under overload the cost of an app is the control plane's, not the operator's (docs/benchmarks.md:
~225 ms of control-plane CPU per app against ~30 ms of the operator's): creating drivers faster
than the scheduler binds them only lengthens every queue behind the API server, and the status
writes of running apps wait in those same queues. So a new driver is created only while the
cluster keeps up, judged from four signals the operator sees without asking anyone:

* **in flight**: this operator's drivers not yet running (pods still ``Pending``: no
  ``nodeName`` yet, or bound and not started by the kubelet, plus drivers requested whose pod
  the informer has not shown yet). This is the quantity limited. Bound-but-not-started counts
  too: on an overloaded machine the kubelet's side (KWOK's here) lagged minutes behind the
  scheduler (docs/benchmarks.md), and a driver that is not running frees nothing.
* **API latency**: the duration of the operator's own requests (an exponentially weighted mean).
  Above ``target_latency_seconds`` the limit shrinks.
* **throttling**: a 429 (API Priority and Fairness) or 503 answer. The limit halves and nothing
  new is created until its ``Retry-After`` (the Status ``details.retryAfterSeconds``) has passed.
* **watch lag**: how long the operator's own status writes take to come back through its own
  watch (the API server stored the write; every watcher, the users' included, gets it that much
  later). Measured on a 2-core dev cluster at 1000 apps/min offered, the API server stored each
  status write within 3 s but delivered it to every watcher (an idle one too) 14 s p50 / 36 s
  p99 later, while its request latency stayed under 3 s p99 (docs/benchmarks.md): request
  latency alone did not see this queue. Above ``target_watch_lag_seconds`` the limit shrinks,
  down to ``minimum``: the API server's own delivery falling behind is evidence the drivers it
  has are more than it can carry, as a 429 is.

Why AIMD (additive increase, multiplicative decrease, as TCP congestion control and Netflix's
``concurrency-limits`` AIMD limiter): the capacity of the cluster is unknown and moves with the
machine's load; AIMD probes for it one driver at a time and backs off by a fraction when a
signal says the queue grows, which converges to a fair share and never oscillates wildly. A
fixed limit would be wrong on every other machine; a latency-gradient limiter (Vegas, Gradient2)
needs a stable no-load latency, which a shared API server does not have. The limit grows by
``increase`` per driver started, only while the limit is actually used (at least half of it
in flight: an idle limit proves nothing), and shrinks at most once per ``cooldown_seconds`` on
latency (each shrink needs fresh evidence; never below ``initial`` on latency alone) or watch
lag (down to ``minimum``), at once on throttling (down to ``minimum``).

Pure: the caller passes the clock's readings. Owns :class:`CapacitySettings` (the operator
settings ``capacity``), :class:`AimdLimit` and :class:`Gate` (what the adapter asks). Used by
:mod:`sparkplane.operator.runtime.capacity`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CapacitySettings:
    """The backpressure's settings (``sparkplane operator run`` flags ``--capacity-*``).

    ``enabled`` (default True; ``--no-capacity-limit`` turns it off: drivers are created as fast
    as apps arrive). ``initial`` (default 20), ``minimum`` (default 2) and ``maximum`` (default
    500): the in-flight limit's start and bounds (drivers not yet scheduled). ``increase``
    (default 1.0): added per driver scheduled while the limit is used. ``decrease`` (default
    0.75): the factor on API latency above ``target_latency_seconds`` (default 2.0: the mean of
    the operator's own requests); throttling halves it. ``cooldown_seconds`` (default 2.0):
    at most one latency decrease per this period. ``retry_seconds`` (default 1.0): how soon an
    app held back is looked at again (and the wait after a 429/503 without Retry-After).
    ``target_watch_lag_seconds`` (default 2.0): the mean time the operator's status writes take
    to come back through its watch, above which the limit stops growing and shrinks.
    """

    enabled: bool = True
    initial: float = 20.0
    minimum: float = 2.0
    maximum: float = 500.0
    increase: float = 1.0
    decrease: float = 0.75
    target_latency_seconds: float = 2.0
    cooldown_seconds: float = 2.0
    retry_seconds: float = 1.0
    target_watch_lag_seconds: float = 2.0
    #: weight of a new latency sample in the moving mean
    smoothing: float = 0.1


#: Why a driver waits (constant words: an app's status says it once) and the numbers (the log).
THROTTLED = "the API server throttles the operator (HTTP 429/503, Retry-After)"
THROTTLED_DETAIL = "HTTP {code}, retrying after {seconds:.0f}s"
FULL = "the operator's drivers not yet running are at its in-flight limit"
FULL_DETAIL = "{pending} drivers not yet running, limit {limit}"


@dataclass(frozen=True)
class Verdict:
    """Whether one more driver may be created now; ``reason`` says why not (constant words),
    ``detail`` with the numbers."""

    admitted: bool
    reason: str = ""
    detail: str = ""


class AimdLimit:
    """The in-flight limit. Not thread-safe: the runtime holds a lock around it."""

    def __init__(self, settings: CapacitySettings | None = None) -> None:
        self.settings = s = settings or CapacitySettings()
        self.limit = min(max(s.initial, s.minimum), s.maximum)
        self.latency = 0.0  # the moving mean of request durations (0: no sample yet)
        self.watch_lag = 0.0  # the moving mean of the own writes' watch round trips
        self.blocked_until = -math.inf
        self.blocked_by = 0  # the HTTP code that blocked
        self._last_decrease = -math.inf

    @property
    def whole(self) -> int:
        """The limit as a number of drivers (at least ``minimum``)."""
        return max(int(self.limit), int(self.settings.minimum))

    def admit(self, pending: int, now: float) -> Verdict:
        """May a driver be created with ``pending`` drivers already in flight?"""
        if now < self.blocked_until:
            left = self.blocked_until - now
            detail = THROTTLED_DETAIL.format(code=self.blocked_by, seconds=math.ceil(left))
            return Verdict(False, THROTTLED, detail)
        if pending >= self.whole:
            return Verdict(False, FULL, FULL_DETAIL.format(pending=pending, limit=self.whole))
        return Verdict(True)

    def on_latency(self, seconds: float, now: float) -> None:
        """One request of the operator took ``seconds``. Above the target the limit stops
        growing and shrinks, but latency alone never takes it below ``initial``: on a loaded
        machine the API server is slow whatever the operator does, and a limit cut to the
        minimum on that evidence starved the drivers (docs/benchmarks.md: 65% of the floor, with
        no better status lag); only throttling (a 429/503, the API server's own word) goes lower."""
        w = self.settings.smoothing
        self.latency = seconds if self.latency == 0.0 else (1 - w) * self.latency + w * seconds
        if self.latency > self.settings.target_latency_seconds:
            floor = max(self.settings.initial, self.settings.minimum)
            if self.limit > floor:
                self._decrease(self.settings.decrease, now, floor=floor)

    def on_watch_lag(self, seconds: float, now: float) -> None:
        """One of the operator's status writes came back through its watch ``seconds`` after
        the API server answered it. Above the target the limit stops growing and shrinks (down
        to ``minimum``: the API server's delivery to every watcher is behind, its own word)."""
        w = self.settings.smoothing
        lag = self.watch_lag
        self.watch_lag = seconds if lag == 0.0 else (1 - w) * lag + w * seconds
        if self.watch_lag > self.settings.target_watch_lag_seconds:
            self._decrease(self.settings.decrease, now)

    def on_throttled(self, code: int, retry_after: float | None, now: float) -> None:
        """The API server answered 429/503 (``retry_after``: its Retry-After, if any)."""
        wait = retry_after if retry_after and retry_after > 0 else self.settings.retry_seconds
        self.blocked_until = max(self.blocked_until, now + wait)
        self.blocked_by = code
        self._last_decrease = -math.inf  # throttling is evidence enough: no cooldown
        self._decrease(0.5, now)

    def on_scheduled(self, pending: int) -> None:
        """A driver left Pending, ``pending`` still in flight: grow when the limit is used."""
        s = self.settings
        keeping_up = (
            self.latency <= s.target_latency_seconds
            and self.watch_lag <= s.target_watch_lag_seconds
        )
        if pending * 2 >= self.whole and keeping_up:
            self.limit = min(self.limit + s.increase, s.maximum)

    def _decrease(self, factor: float, now: float, *, floor: float | None = None) -> None:
        if now - self._last_decrease < self.settings.cooldown_seconds:
            return
        self._last_decrease = now
        self.limit = max(self.limit * factor, self.settings.minimum if floor is None else floor)


class Gate(Protocol):
    """What the SparkApplication adapter asks before it creates a driver (the runtime's
    :class:`~sparkplane.operator.runtime.capacity.CapacityGate`)."""

    def admit(self, key: Hashable) -> Verdict: ...

    def forget(self, key: Hashable) -> None: ...
