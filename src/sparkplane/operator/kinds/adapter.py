"""The small interface a custom-resource kind plugs into the reconcile loop with.

Owns :class:`Adapter` (``kind``, ``api_version``, ``watches()``, ``decide()``, ``resync()``),
:class:`Watch` (a secondary kind an adapter observes, with its event handler) and :data:`Key`
(``(kind, namespace, name)``, what the work queue holds). The kinds of this package implement
it; the generic loop (:mod:`sparkplane.operator.runtime.loop`) and the runner use it. Pure types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sparkplane.operator.core.decision import Decision
from sparkplane.vocab import KUBEFLOW_GROUP

Key = tuple[str, str, str]  # (kind, namespace, name)
Obj = dict[str, Any]
#: API groups whose kinds are queued under ``Kind.group``: their kind names are Apache's too.
QUALIFIED_GROUPS = frozenset({KUBEFLOW_GROUP})


def queue_kind(api_version: str, kind: str) -> str:
    """The kind a resource is queued (and registered) under: ``kind``, or ``kind.group`` for
    a group whose kind names clash with Apache's (Kubeflow's ``SparkApplication``)."""
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    return f"{kind}.{group}" if group in QUALIFIED_GROUPS else kind


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
