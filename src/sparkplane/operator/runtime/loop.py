"""The one reconcile loop every kind shares, and the narrow host it runs in.

controller-runtime's shape: a generic loop (read → decide → commit → act → publish, with
conflict retry) and one :class:`Adapter` per custom-resource kind that knows how to observe and
decide. The loop owns the ORDER of writes, which is what makes a stale replica harmless:

1. **read** the newest known copy of the resource (the cache, or our own last write);
2. **decide** (the adapter: its observations + a pure decide function);
3. **commit** before any CREATE: PUT ``.status`` through the status subresource WITH the
   resourceVersion decided from — a real write when the status changed, a no-op write (which
   the API server still checks against the resourceVersion) when it did not. A replica that
   decided from a stale copy gets 409 Conflict here, before it created anything; it reads again
   and decides again. Deletes go the other way round (delete, then write the status), so a
   released state is only ever written once it is true; a stale replica's deletes are harmless
   (attempt-specific names, pods behind the observed uid);
4. **act**: create after the commit (deterministic names: a repeated create answers
   AlreadyExists). Objects the API refuses for good
   (:class:`~sparkplane.operator.runtime.actions.CreateRejected`) are decided again with
   ``create_error`` and that status is committed over the first;
5. **publish** the transitions (Events, metrics) and run what must follow the status
   (deleting the resource itself for ``ttlAfterStopMillis``).

Every write goes through the fenced gateway, so a replica that lost its lease stops at the next
request. A crash between commit and act is repaired by the next reconcile (the adapters treat
"requested but absent" as "create again") and by the sweeper.

Adding a kind: write an :class:`~sparkplane.operator.kinds.adapter.Adapter` (``kind``,
``api_version``, ``watches()`` for the secondary objects it observes, ``decide(cr,
create_error=None)``, ``resync()``), and register it in
:class:`~sparkplane.operator.runtime.runner.Operator`. The loop sees the process running it only
through :class:`Host`: the fenced gateway, a request pool, the pod policy's allowances, the
newest-copy cache (``current``/``remember``) and ``publish``. Called by the runner's workers.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Executor
from typing import Any, Protocol

from sparkplane.errors import ConflictError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.operator.core.decision import (
    Action,
    CreateResources,
    Decision,
    DeleteCustomResource,
    Notice,
    Transition,
)
from sparkplane.operator.kinds.adapter import Adapter, Key, Watch
from sparkplane.operator.runtime import actions
from sparkplane.settings import Settings

Obj = dict[str, Any]
CONFLICT_RETRIES = 5
__all__ = ["Adapter", "Host", "Key", "Watch", "commit", "reconcile"]


class Host(Protocol):
    """What one reconcile needs from the process running it (the runner's ``Operator``).

    ``kube`` is the fenced gateway (fresh reads after a conflict, the status writes, the
    actions); ``requests`` runs an action's independent requests in parallel;
    ``pod_policy_allow`` names the pod policy checks not applied before a create.
    """

    @property
    def kube(self) -> Kube: ...

    @property
    def requests(self) -> Executor: ...

    @property
    def pod_policy_allow(self) -> tuple[str, ...]: ...

    @property
    def process_settings(self) -> Settings: ...

    def current(self, key: Key) -> Obj | None:
        """The newest known copy of the resource (None: gone)."""
        ...

    def remember(self, key: Key, written: Obj) -> None:
        """Keep ``written`` (a status write's answer) as the newest copy of ``key``."""
        ...

    def publish(
        self,
        written: Obj,
        transitions: Iterable[Transition],
        notices: Iterable[Notice] = (),
    ) -> None:
        """Record the committed transitions (Events, metrics) and the decision's notices
        (Events only)."""
        ...


def reconcile(host: Host, adapter: Adapter, key: Key) -> float | None:
    """Reconcile one resource now; returns the requeue delay (None: wait for a change)."""
    _, namespace, name = key
    cr = host.current(key)
    if cr is None or (cr.get("metadata") or {}).get("deletionTimestamp"):
        return None
    for _ in range(CONFLICT_RETRIES):
        decision = adapter.decide(cr)
        try:
            return _carry_out(host, adapter, key, cr, decision)
        except ConflictError:
            fresh = host.kube.get_or_none(adapter.api_version, adapter.kind, name, namespace)
            if fresh is None:
                return None
            cr = fresh
        except NotFoundError:  # the resource itself is gone
            return None
    raise ConflictError(f"{adapter.kind} {namespace}/{name}: status kept changing")


def commit(host: Host, adapter: Adapter, cr: Obj, status: Obj | None) -> Obj:
    """PUT ``.status`` with ``cr``'s resourceVersion (a no-op write if ``status`` is None)."""
    body = {**cr, "status": status if status is not None else cr.get("status")}
    written = host.kube.replace(body, subresource="status")
    written.setdefault("apiVersion", cr.get("apiVersion"))
    written.setdefault("kind", adapter.kind)
    return written


def _carry_out(host: Host, adapter: Adapter, key: Key, cr: Obj, decision: Decision) -> float | None:
    def act(todo: tuple[Action, ...]) -> None:
        actions.run(
            host.kube,
            todo,
            host.requests,
            allow=host.pod_policy_allow,
            settings=host.process_settings,
        )

    acting = tuple(a for a in decision.actions if not isinstance(a, DeleteCustomResource))
    creating = any(isinstance(a, CreateResources) for a in acting)
    written = cr
    if not creating:  # deletes first: a released state is only written once it is true
        act(acting)
        acting = ()
    if decision.status is not None or creating:
        written = commit(host, adapter, cr, decision.status)
        host.remember(key, written)
    try:
        act(acting)
    except actions.CreateRejected as exc:
        decision = adapter.decide(cr, create_error=str(exc))
        act(
            tuple(
                a
                for a in decision.actions
                if not isinstance(a, (CreateResources, DeleteCustomResource))
            )
        )
        if decision.status is not None:
            written = commit(host, adapter, written, decision.status)
            host.remember(key, written)
    host.publish(written, decision.transitions, decision.notices)
    actions.run(
        host.kube,
        tuple(a for a in decision.actions if isinstance(a, DeleteCustomResource)),
        settings=host.process_settings,
    )
    return decision.requeue_after
