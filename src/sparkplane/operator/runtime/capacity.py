"""The backpressure's I/O side: feeds :class:`~sparkplane.operator.core.capacity.AimdLimit` the
control plane's signals and decides, per app, whether its driver may be created now.

Owns :class:`CapacityGate`. Its inputs: every request the operator's fenced gateway sends
(:meth:`CapacityGate.on_request`: duration, and 429/503 answers with their Retry-After), every
event of this operator's pods (:meth:`CapacityGate.on_pod`: which drivers have no node yet, which
got one), and the round trip of its own status writes through its watch
(:meth:`CapacityGate.wrote` when the API server answered one, :meth:`CapacityGate.saw` when the
watch brought that resourceVersion back: the API server's delivery lag, which every watcher
sees). Its one question, :meth:`CapacityGate.admit`, is asked by the SparkApplication adapter
right before it would create a driver: admitted apps count as in flight until their driver pod
is seen (or ``REQUESTED_SECONDS`` pass: a create that failed); held apps wait in arrival order
(first held, first admitted: a new app never overtakes one already waiting) and are woken
(:meth:`CapacityGate.wake`, returned keys the runner queues) as drivers get nodes. Their status
says they wait (:func:`sparkplane.operator.core.reconciler.decide`, ``WaitingForCapacity``); the
metrics ``sparkplane_operator_capacity_*`` give the limit, the drivers in flight and the apps
held. Called by the runner. Thread-safe.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from itertools import islice
from typing import Any

from sparkplane.errors import KubeError
from sparkplane.operator.core.capacity import AimdLimit, CapacitySettings, Verdict
from sparkplane.vocab import DRIVER_ROLE, ROLE_LABEL

log = logging.getLogger(__name__)
Obj = dict[str, Any]
THROTTLE_CODES = frozenset({429, 503})
#: An admitted app whose driver pod has not shown up this long stops counting (its create failed).
REQUESTED_SECONDS = 60.0
#: A status write not seen back through the watch this long is forgotten (a relist skipped it).
WRITTEN_SECONDS = 300.0


def retry_after(exc: KubeError) -> float | None:
    """The Retry-After of a 429/503 answer: its Status ``details.retryAfterSeconds`` (the API
    server sets the header and this field to the same value)."""
    status: dict[str, Any] = dict(exc.status or {})
    details = status.get("details") or {}
    try:
        return float(details.get("retryAfterSeconds") or 0) or None
    except (TypeError, ValueError):
        return None


class CapacityGate:
    """The adaptive in-flight limit on driver creation (see :mod:`.core.capacity` for why AIMD)."""

    def __init__(
        self,
        settings: CapacitySettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings or CapacitySettings()
        self.limiter = AimdLimit(self.settings)
        self._clock = clock
        self._lock = threading.Lock()
        self._unscheduled: set[str] = set()  # driver pod uids still Pending
        self._requested: dict[Hashable, float] = {}  # admitted app key -> when
        self._waiting: OrderedDict[Hashable, float] = OrderedDict()  # held app key -> since
        self._woken: dict[Hashable, float] = {}  # held app key -> last handed to the runner
        self._wrote: dict[Hashable, tuple[int, float]] = {}  # key -> (resourceVersion, when)
        self.held_total = 0

    # -- signals --------------------------------------------------------------------------
    def on_request(self, seconds: float, error: Exception | None) -> None:
        """A request of the operator's gateway ended after ``seconds`` (``error``: its failure)."""
        now = self._clock()
        with self._lock:
            if isinstance(error, KubeError) and error.code in THROTTLE_CODES:
                self.limiter.on_throttled(error.code, retry_after(error), now)
                log.warning("API server answered %s: driver creation backs off", error.code)
            else:
                self.limiter.on_latency(seconds, now)

    def on_pod(self, event: str, pod: Obj, keys: tuple[Hashable, ...]) -> None:
        """A pod of this operator changed; ``keys`` are the apps it belongs to."""
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get(ROLE_LABEL) != DRIVER_ROLE:
            return
        uid = str(meta.get("uid") or meta.get("name"))
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        waiting = event != "DELETED" and phase == "Pending"
        with self._lock:
            for key in keys:
                self._requested.pop(key, None)
            if waiting:
                self._unscheduled.add(uid)
            elif uid in self._unscheduled:
                self._unscheduled.discard(uid)
                self.limiter.on_scheduled(self._pending_locked(self._clock()))

    def wrote(self, key: Hashable, resource_version: int) -> None:
        """The API server answered a status write of ``key`` with ``resource_version``."""
        now = self._clock()
        with self._lock:
            self._wrote[key] = (resource_version, now)
            if len(self._wrote) > 4096:  # writes whose event never came (relists): drop them
                old = [k for k, (_, t) in self._wrote.items() if now - t > WRITTEN_SECONDS]
                for k in old:
                    del self._wrote[k]

    def saw(self, key: Hashable, resource_version: int) -> None:
        """The watch delivered ``key`` at ``resource_version``: if it is the last write's, its
        round trip is a watch-lag sample."""
        now = self._clock()
        with self._lock:
            written = self._wrote.get(key)
            if written is None or written[0] != resource_version:
                return
            del self._wrote[key]
            self.limiter.on_watch_lag(now - written[1], now)

    # -- the question ---------------------------------------------------------------------
    def admit(self, key: Hashable) -> Verdict:
        """May ``key``'s driver be created now? Admitted: it counts as in flight."""
        if not self.settings.enabled:
            return Verdict(True)
        now = self._clock()
        with self._lock:
            pending = self._pending_locked(now)
            ahead = 0
            if key in self._waiting:
                ahead = next(i for i, k in enumerate(self._waiting) if k == key)
            else:
                ahead = len(self._waiting)
            verdict = self.limiter.admit(pending + ahead, now)
            if verdict.admitted:
                self._waiting.pop(key, None)
                self._woken.pop(key, None)
                self._requested[key] = now
            elif key not in self._waiting:
                self._waiting[key] = now
                self.held_total += 1
        if not verdict.admitted:
            log.debug("driver of %s held back: %s", key, verdict.detail)
        return verdict

    def forget(self, key: Hashable) -> None:
        """``key`` no longer wants a driver (deleted, or decided otherwise)."""
        with self._lock:
            self._waiting.pop(key, None)
            self._woken.pop(key, None)

    def wake(self) -> list[Hashable]:
        """The held apps that may be admitted now (the runner queues them), oldest first; an
        app handed out within ``retry_seconds`` is not handed out again (it is on its way)."""
        now = self._clock()
        with self._lock:
            if not self._waiting or now < self.limiter.blocked_until:
                return []
            free = self.limiter.whole - self._pending_locked(now)
            first = list(islice(self._waiting, max(free, 0)))
            every = self.settings.retry_seconds
            due = [k for k in first if now - self._woken.get(k, -math.inf) >= every]
            for key in due:
                self._woken[key] = now
            return due

    def _pending_locked(self, now: float) -> int:
        stale = [k for k, t in self._requested.items() if now - t > REQUESTED_SECONDS]
        for key in stale:
            del self._requested[key]
        return len(self._unscheduled) + len(self._requested)

    # -- what the metrics show ------------------------------------------------------------
    def snapshot(self) -> dict[str, float]:
        """``limit``, ``in_flight`` (drivers not yet scheduled), ``held`` (apps waiting),
        ``watch_lag_seconds`` (the mean round trip of the operator's status writes)."""
        with self._lock:
            return {
                "limit": float(self.limiter.whole),
                "in_flight": float(self._pending_locked(self._clock())),
                "held": float(len(self._waiting)),
                "watch_lag_seconds": self.limiter.watch_lag,
            }
