"""The typed result of a reconcile: status to write, actions to take, when to come back.

Owns :class:`Decision`, the actions (:class:`CreateResources`, :class:`DeleteResources`,
:class:`DeleteCustomResource`, :class:`HoldExecutors`) and :class:`Transition` (one state
change, which the runner turns into a Kubernetes Event and a metric). The pure reconcilers
return these; the runner executes the actions first, then writes the status, then records the
transitions. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from sparkplane.operator.core.priority import ClassRef

Obj = dict[str, Any]


@dataclass(frozen=True)
class Transition:
    """``src`` → ``dst`` at ``at``; ``seconds`` spent in ``src`` (None for the first state)."""

    src: str | None
    dst: str
    message: str
    at: datetime
    seconds: float | None = None
    warning: bool = False
    #: The Event's reason when it is not ``dst`` (e.g. ``Resumed``).
    reason: str = ""


Notice = tuple[str, str, bool]
"""An Event that is no state change: (reason, message, warning)."""


@dataclass(frozen=True)
class CreateResources:
    """Create ``objects`` in order; AlreadyExists is success (the names are deterministic).

    ``app_id`` identifies the attempt: an existing driver pod with another ``spark-app-selector``
    is a leftover of something else, and creation must wait for it to go. ``owner_uid`` (the
    custom resource's): an existing object of a name it asked for counts as done only when its
    controller is that uid; anything else is not adopted and the attempt fails.
    """

    namespace: str
    objects: tuple[Obj, ...]
    app_id: str
    owner_uid: str = ""


@dataclass(frozen=True)
class DeleteResources:
    """Delete ``refs`` (apiVersion, kind, name) in ``namespace``; NotFound is success.

    ``grace_period_seconds`` 0 forces the deletion (after forceTerminationGracePeriodMillis).
    ``uids``: (name, uid) of objects as observed; their deletes carry a uid precondition, so a
    replica deciding from a stale cache can never delete a newer object of the same name.
    ``owner_uid`` (the custom resource's): every other ref is read first and deleted only when
    its controller is that uid, behind a precondition on the uid read (never an object of that
    name made by someone else).
    """

    namespace: str
    refs: tuple[tuple[str, str, str], ...]
    grace_period_seconds: int | None = None
    uids: tuple[tuple[str, str], ...] = ()
    owner_uid: str = ""


@dataclass(frozen=True)
class DeleteCustomResource:
    """Delete the custom resource itself (``ttlAfterStopMillis``); its uid guards the delete."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


class Release(NamedTuple):
    """A gated executor to let run: its gate is at ``gate_index`` of its ``schedulingGates``;
    ``resource_version`` is set when the pod has no annotations yet (the release mark then
    creates the map, so the pod must not have changed since it was observed)."""

    name: str
    uid: str
    gate_index: int
    resource_version: str | None = None


@dataclass(frozen=True)
class HoldExecutors:
    """Keep a queued app's executors within its Kueue admission (:func:`~sparkplane.operator.
    core.workload.executor_quota`): remove the quota gate from ``release`` and mark them
    released (annotation ``QUOTA_RELEASED_ANNOTATION``), delete ``remove`` (name, uid).
    Both guarded by the uid observed; NotFound and a changed pod are success (decided again)."""

    namespace: str
    release: tuple[Release, ...] = ()
    remove: tuple[tuple[str, str], ...] = ()


Action = CreateResources | DeleteResources | DeleteCustomResource | HoldExecutors


@dataclass(frozen=True)
class Decision:
    """What one reconcile decided.

    ``status`` is the whole new ``.status`` (None: leave it as it is). ``check_driver`` names a
    driver pod the cache does not hold: the runner reads it live and decides again (so a cache
    lag never fails a live app). ``read_priority``: the priority class a queued app's Workload
    needs (:mod:`.priority`) and the runner has not read: it reads it and decides again.
    ``requeue_after`` in seconds (None: wait for a change).
    """

    status: Obj | None = None
    actions: tuple[Action, ...] = ()
    transitions: tuple[Transition, ...] = field(default_factory=tuple)
    requeue_after: float | None = None
    check_driver: str | None = None
    read_priority: ClassRef | None = None
    #: Events that are no state change (e.g. executors held to a quota), posted after the
    #: status write, deduplicated like the others.
    notices: tuple[Notice, ...] = ()

    @property
    def creates(self) -> bool:
        return any(isinstance(a, CreateResources) for a in self.actions)
