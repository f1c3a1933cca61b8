"""The one reconcile loop every kind shares, and the small interface a kind plugs in with.

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
   (:class:`~sparkplane.operator.actions.CreateRejected`) are decided again with
   ``create_error`` and that status is committed over the first;
5. **publish** the transitions (Events, metrics) and run what must follow the status
   (deleting the resource itself for ``ttlAfterStopMillis``).

Every write goes through the fenced gateway, so a replica that lost its lease stops at the next
request. A crash between commit and act is repaired by the next reconcile (the adapters treat
"requested but absent" as "create again") and by the sweeper.

Adding a kind: write an :class:`Adapter` (``kind``, ``api_version``, ``watches()`` for the
secondary objects it observes, ``decide(cr, create_error=None)``, ``resync()``), and register
it in :class:`~sparkplane.operator.runner.Operator`. Called by the runner's workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sparkplane.errors import ConflictError, NotFoundError
from sparkplane.operator import actions
from sparkplane.operator.decision import CreateResources, Decision, DeleteCustomResource

if TYPE_CHECKING:
    from sparkplane.operator.runner import Operator

Key = tuple[str, str, str]  # (kind, namespace, name)
Obj = dict[str, Any]
CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class Watch:
    """A secondary kind an adapter observes: the runner runs one informer per watched
    namespace and passes each event to ``on_event``, which updates the adapter's index and
    returns the keys of the custom resources to reconcile."""

    api_version: str
    kind: str
    label_selector: str | None
    on_event: Callable[[str, Obj], Iterable[Key]]


class Adapter(Protocol):
    """One custom-resource kind. Keep it small: everything else is the loop's."""

    kind: str  #: e.g. "SparkApplication"
    api_version: str  #: e.g. "spark.apache.org/v1"

    def watches(self) -> Sequence[Watch]:
        """Secondary objects to observe (pods, StatefulSets...), with their event handlers."""
        ...

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Decision:
        """Observe (caches; live READS allowed) and decide; never write."""
        ...

    def resync(self) -> None:
        """Periodic housekeeping of the adapter's own indexes (may do nothing)."""
        ...


def reconcile(op: Operator, adapter: Adapter, key: Key) -> float | None:
    """Reconcile one resource now; returns the requeue delay (None: wait for a change)."""
    _, namespace, name = key
    cr = op.current(key)
    if cr is None or (cr.get("metadata") or {}).get("deletionTimestamp"):
        return None
    for _ in range(CONFLICT_RETRIES):
        decision = adapter.decide(cr)
        try:
            return _carry_out(op, adapter, key, cr, decision)
        except ConflictError:
            fresh = op.kube.get_or_none(adapter.api_version, adapter.kind, name, namespace)
            if fresh is None:
                return None
            cr = fresh
        except NotFoundError:  # the resource itself is gone
            return None
    raise ConflictError(f"{adapter.kind} {namespace}/{name}: status kept changing")


def commit(op: Operator, adapter: Adapter, cr: Obj, status: Obj | None) -> Obj:
    """PUT ``.status`` with ``cr``'s resourceVersion (a no-op write if ``status`` is None)."""
    body = {**cr, "status": status if status is not None else cr.get("status")}
    written = op.kube.replace(body, subresource="status")
    written.setdefault("apiVersion", cr.get("apiVersion"))
    written.setdefault("kind", adapter.kind)
    return written


def _carry_out(
    op: Operator, adapter: Adapter, key: Key, cr: Obj, decision: Decision
) -> float | None:
    acting = tuple(a for a in decision.actions if not isinstance(a, DeleteCustomResource))
    creating = any(isinstance(a, CreateResources) for a in acting)
    written = cr
    if not creating:  # deletes first: a released state is only written once it is true
        actions.run(op.kube, acting, op.requests, allow=op.settings.pod_policy_allow)
        acting = ()
    if decision.status is not None or creating:
        written = commit(op, adapter, cr, decision.status)
        op.remember(key, written)
    if op.after_commit is not None:
        op.after_commit(key, decision)
    try:
        actions.run(op.kube, acting, op.requests, allow=op.settings.pod_policy_allow)
    except actions.CreateRejected as exc:
        decision = adapter.decide(cr, create_error=str(exc))
        retry = tuple(
            a
            for a in decision.actions
            if not isinstance(a, (CreateResources, DeleteCustomResource))
        )
        actions.run(op.kube, retry, op.requests, allow=op.settings.pod_policy_allow)
        if decision.status is not None:
            written = commit(op, adapter, written, decision.status)
            op.remember(key, written)
    if op.after_actions is not None:
        op.after_actions(key, decision)
    op.publish(written, decision.transitions)
    actions.run(op.kube, tuple(a for a in decision.actions if isinstance(a, DeleteCustomResource)))
    return decision.requeue_after
