"""Leader election through a coordination.k8s.io/v1 Lease, with a fence for every write.

One replica holds the Lease (``holderIdentity``) and renews it every ``renew_seconds``. The
others take it over only after they have watched the record stay unchanged for
``leaseDurationSeconds`` by their OWN monotonic clock (as client-go does: no comparison of
another machine's ``renewTime`` with ours, so clock skew between replicas does not matter).
Writes to the Lease carry its resourceVersion, so two candidates racing for it cannot both win.

The holder may act only while :meth:`LeaderElector.holds` is true: less than
``renew_deadline_seconds`` (default 2/3 of the lease) have passed on its monotonic clock since it
SENT its last successful renewal. A process frozen by SIGSTOP, a VM pause or a long GC therefore
stops acting the moment it runs again, before its elector thread has even noticed, and the margin
``lease - renew_deadline`` covers a request in flight. The runner checks it right before every
write (:mod:`sparkplane.operator.runtime.fencing`); what timing cannot cover is covered by the API
itself (resourceVersion-checked status writes before any create or delete, deterministic names).

Why not ``kubernetes.leaderelection`` from the official client: it measures time with
``time.time()`` (a wall-clock step moves its deadlines), records the renewal time after the
response instead of when the request left, exposes no "may I still write?" check for a per-write
fence (its leader keeps running ``onstarted_leading``'s work until its renew loop gives up),
returns for good after losing the lease instead of becoming a candidate again, and talks through
typed API objects outside the gateway (``sparkplane.kube``), which the layering contracts forbid.
The decision "may I take this lease?" is the pure :func:`can_acquire`; the loop does the I/O.
Called by the operator runner.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sparkplane.errors import AlreadyExistsError, ConflictError, KubeError
from sparkplane.kube import Kube
from sparkplane.vocab import format_micro_time

log = logging.getLogger(__name__)
LEASE = "coordination.k8s.io/v1"


def record_of(lease: Mapping[str, Any] | None) -> tuple[Any, ...]:
    """What identifies one renewal of the lease (any change means its holder is alive)."""
    spec = (lease or {}).get("spec") or {}
    return tuple(spec.get(k) for k in ("holderIdentity", "renewTime", "leaseTransitions"))


def can_acquire(lease: Mapping[str, Any] | None, identity: str, unchanged_for: float) -> bool:
    """True if ``identity`` holds the lease, nobody does, or the record has not changed for
    longer than its ``leaseDurationSeconds`` (``unchanged_for``: seconds on OUR clock)."""
    if lease is None:
        return True
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    if not holder or holder == identity:
        return True
    return unchanged_for > float(spec.get("leaseDurationSeconds") or 15)


class LeaderElector:
    """Run in a thread; :meth:`holds` tells whether this replica may write right now."""

    def __init__(
        self,
        kube: Kube,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_seconds: float = 15.0,
        renew_seconds: float = 2.0,
        renew_deadline_seconds: float | None = None,
        on_change: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube, self.name, self.namespace, self.identity = kube, name, namespace, identity
        self.lease_seconds, self.renew_seconds = lease_seconds, renew_seconds
        self.renew_deadline = renew_deadline_seconds or lease_seconds * 2 / 3
        if not renew_seconds < self.renew_deadline < lease_seconds:
            raise ValueError("leader election needs renew < renew deadline < lease duration")
        self.on_change, self.clock = on_change, clock
        self.is_leader = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._renewed_at = float("-inf")  # monotonic time the last good renewal was SENT
        self._seen: tuple[Any, ...] | None = None
        self._mine: dict[str, Any] | None = None  # the Lease as our last write left it
        self._seen_at = 0.0

    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self._loop, name="leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if release and self.holds():
            self._release()
        self._set(False)

    def holds(self) -> bool:
        """May this replica write now? (leader, and its last renewal left < deadline ago)."""
        return self.is_leader.is_set() and self.clock() - self._renewed_at < self.renew_deadline

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = self.clock()
            try:
                acquired = self.try_acquire_or_renew()
            except Exception as exc:  # network trouble: keep what we have until the deadline
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
                acquired = self.holds()
            fresh = self.clock() - self._renewed_at < self.renew_deadline
            self._set(acquired and fresh)
            # every renew_seconds from when the last round BEGAN: a slow API server delays
            # one round, never the rounds after it as well
            self._stop.wait(max(0.0, began + self.renew_seconds - self.clock()))

    def _set(self, leader: bool) -> None:
        if leader == self.is_leader.is_set():
            return
        if leader:
            self.is_leader.set()
            log.info("%s became the leader (%s/%s)", self.identity, self.namespace, self.name)
        else:
            self.is_leader.clear()
            log.info("%s is no longer the leader", self.identity)
        if self.on_change is not None:
            self.on_change(leader)

    def try_acquire_or_renew(self) -> bool:
        """One round: create, renew or take over the Lease; False if someone else holds it.

        The holder renews with ONE request, a PUT of the Lease it last wrote (its
        resourceVersion proves nobody wrote in between); only when that conflicts, or when it
        does not hold the Lease, does it read first. Under an API server answering at p99 4 s
        this halves the time a renewal takes (a read and a write were 559 fence refusals in
        one overload run: docs/benchmarks.md)."""
        mine, self._mine = self._mine, None
        if mine is not None:
            sent = self.clock()
            renewed = {
                **(mine.get("spec") or {}),
                "renewTime": format_micro_time(datetime.now(UTC)),
            }
            try:
                self._mine = self.kube.replace({**mine, "spec": renewed})
            except ConflictError:
                pass  # someone wrote it (or our last write's answer was lost): read and decide
            else:
                self._renewed_at = sent
                return True
        lease = self.kube.get_or_none(LEASE, "Lease", self.name, self.namespace)
        now = self.clock()
        record = record_of(lease)
        if record != self._seen:
            self._seen, self._seen_at = record, now
        if not can_acquire(lease, self.identity, now - self._seen_at):
            return False
        sent = self.clock()
        stamp = format_micro_time(datetime.now(UTC))
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(int(self.lease_seconds), 1),
            "renewTime": stamp,
        }
        try:
            if lease is None:
                spec.update(acquireTime=stamp, leaseTransitions=0)
                meta = {"name": self.name, "namespace": self.namespace}
                written = self.kube.create(
                    {"apiVersion": LEASE, "kind": "Lease", "metadata": meta, "spec": spec}
                )
            else:
                old = lease.get("spec") or {}
                if old.get("holderIdentity") != self.identity:
                    spec["acquireTime"] = stamp
                    spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
                written = self.kube.replace({**lease, "spec": {**old, **spec}})
        except (AlreadyExistsError, ConflictError):
            return False
        self._renewed_at = sent
        self._mine = written
        return True

    def _release(self) -> None:
        try:
            lease = self.kube.get_or_none(LEASE, "Lease", self.name, self.namespace)
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                spec = {**lease["spec"], "holderIdentity": None, "leaseDurationSeconds": 1}
                self.kube.replace({**lease, "spec": spec})
        except KubeError as exc:
            log.debug("could not release lease: %s", exc)
