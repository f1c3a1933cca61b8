"""Leader election through a coordination.k8s.io/v1 Lease, so replicas can run side by side.

One replica holds the Lease (``holderIdentity``) and renews it every ``renew_seconds``; the
others retry and take it over once ``leaseDurationSeconds`` passed without a renewal. Writes use
the Lease's resourceVersion, so two candidates racing for an expired Lease cannot both win (the
loser gets 409 Conflict). A leader that fails to renew before its lease runs out steps down.
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
from sparkplane.lifecycle.pods import parse_time

log = logging.getLogger(__name__)


def micro_time(value: datetime) -> str:
    """A Kubernetes MicroTime (``2025-01-01T10:00:00.000000Z``)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def can_acquire(lease: Mapping[str, Any] | None, identity: str, now: datetime) -> bool:
    """True if ``identity`` holds the lease, nobody does, or the holder let it expire."""
    if lease is None:
        return True
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity")
    if not holder or holder == identity:
        return True
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime"))
    duration = float(spec.get("leaseDurationSeconds") or 15)
    return renewed is None or (now - renewed).total_seconds() > duration


class LeaderElector:
    """Run in a thread; ``is_leader`` tells whether this replica may reconcile."""

    def __init__(
        self,
        kube: Kube,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_seconds: float = 15.0,
        renew_seconds: float = 5.0,
        on_change: Callable[[bool], None] | None = None,
    ) -> None:
        self.kube, self.name, self.namespace, self.identity = kube, name, namespace, identity
        self.lease_seconds, self.renew_seconds = lease_seconds, renew_seconds
        self.on_change = on_change
        self.is_leader = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_renew = 0.0

    def start(self) -> LeaderElector:
        self._thread = threading.Thread(target=self._loop, name="leader-election", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, release: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if release and self.is_leader.is_set():
            self._release()
        self._set(False)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                acquired = self.try_acquire_or_renew()
            except Exception as exc:  # network trouble: keep what we have until it expires
                log.warning("lease %s/%s: %s", self.namespace, self.name, exc)
                acquired = self.is_leader.is_set() and (
                    time.monotonic() - self._last_renew < self.lease_seconds
                )
            self._set(acquired)
            self._stop.wait(self.renew_seconds if acquired else self.renew_seconds / 2)

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
        """One round: create, renew or take over the Lease; False if someone else holds it."""
        now = datetime.now(UTC)
        lease = self.kube.get_or_none("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
        if not can_acquire(lease, self.identity, now):
            return False
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_seconds),
            "renewTime": micro_time(now),
        }
        try:
            if lease is None:
                spec["acquireTime"] = micro_time(now)
                spec["leaseTransitions"] = 0
                self.kube.create(
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": spec,
                    }
                )
            else:
                old = lease.get("spec") or {}
                if old.get("holderIdentity") != self.identity:
                    spec["acquireTime"] = micro_time(now)
                    spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
                lease = {**lease, "spec": {**old, **spec}}
                self.kube.replace(lease)
        except (AlreadyExistsError, ConflictError):
            return False
        self._last_renew = time.monotonic()
        return True

    def _release(self) -> None:
        try:
            lease = self.kube.get_or_none(
                "coordination.k8s.io/v1", "Lease", self.name, self.namespace
            )
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                spec = {**lease["spec"], "holderIdentity": None, "leaseDurationSeconds": 1}
                self.kube.replace({**lease, "spec": spec})
        except KubeError as exc:
            log.debug("could not release lease: %s", exc)
