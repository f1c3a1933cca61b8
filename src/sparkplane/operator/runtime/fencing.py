"""The fence: a gateway whose every write first asks "do I still hold the lease?".

Owns :class:`FencedKube`, a :class:`~sparkplane.kube.Kube` on the same connection whose
``before_write`` hook runs ``may_write`` (the leader elector's
:meth:`.leader.LeaderElector.holds`, which has a margin) as the last step
before each create, replace, patch, apply or delete leaves the process (after the body is
serialised, before the HTTP call), and raises :class:`LostLease` instead of sending it. Reads go
through unchanged. The runner hands it to everything that writes (status commits, actions,
Events, the sweeper), so no code path can write without passing the check.

A check right before the request narrows the window of a frozen replica to the moment between
the check and the socket send; the API's own guarantees close most of the rest: the runner
commits ``.status`` with the resourceVersion it decided from BEFORE creating or deleting
anything (a stale replica gets 409 Conflict first), names are deterministic per attempt (a
second create answers 409 AlreadyExists while the first object exists), pod deletes carry a uid
precondition. Kubernetes has no conditional create across objects, so an object whose create was
already on its way when the process froze can still land after its attempt was released: the
new leader deletes such a driver pod as soon as its informer shows it, and the sweeper deletes
leftover ConfigMaps and Services (:mod:`sparkplane.operator.runtime.sweep`). Called by the runner.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sparkplane.errors import SparkplaneError
from sparkplane.kube import Kube


class LostLease(SparkplaneError):
    """This replica no longer holds (or cannot prove it holds) the lease: it must not write."""


class FencedKube(Kube):
    """``kube``'s connection and discovery, with every write guarded by ``may_write``."""

    def __init__(self, kube: Kube, may_write: Callable[[], bool]) -> None:
        super().__init__(kube.api, timeout=kube.timeout)
        self.discovery = kube.discovery
        self.may_write = may_write
        self.refused = 0  # writes not sent because the lease was not held
        self.before_write = self._check
        #: Told each request's duration and failure (the backpressure's signals:
        #: :meth:`sparkplane.operator.runtime.capacity.CapacityGate.on_request`); None: no one.
        self.on_request: Callable[[float, Exception | None], None] | None = None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        if self.on_request is None:
            return super().request(method, path, **kwargs)
        started = time.monotonic()
        try:
            result = super().request(method, path, **kwargs)
        except LostLease:
            raise
        except Exception as exc:
            self.on_request(time.monotonic() - started, exc)
            raise
        self.on_request(time.monotonic() - started, None)
        return result

    def _check(self, method: str, path: str) -> None:
        if not self.may_write():
            self.refused += 1
            raise LostLease(f"not the leader: refusing {method} {path}")
