"""Half-made applications: a driver pod whose dependents never came (a submitter crash).

Owns the annotation :data:`DEPENDENTS_KEY` that :func:`sparkplane.kube.ownership.create_owned`
puts on every driver pod (``[[apiVersion, kind, name], ...]`` of what it should own) and the
pure decisions built on it: which dependents are missing (:func:`missing_dependents`), whether
an owner past the grace period is half-made (:func:`half_made`, for ``sparkplane gc`` and, with
its own refs, the operator's attempts), and which kinds a checker can see without reading
Secrets (:data:`CHECKED_KINDS`). Called by ``lifecycle.gc`` and ``kube.ownership``. Pure: the
caller lists pods and looks the dependents up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sparkplane.lifecycle.pods import meta, parse_time

Obj = dict[str, Any]
Ref = tuple[str, str, str]  # (apiVersion, kind, name)

DEPENDENTS_KEY = "sparkplane.io/dependents"
#: How long a submission may take between creating the owner and its last dependent.
DEFAULT_GRACE = timedelta(minutes=5)
#: Kinds whose presence is checked; others (Secrets: no identity may read them) count as present.
CHECKED_KINDS = frozenset({"ConfigMap", "Service", "Ingress", "PersistentVolumeClaim"})


def dependents_of(owner: Mapping[str, Any]) -> list[Ref] | None:
    """The refs ``owner`` announced, or None when it has none (or they cannot be read)."""
    raw = (meta(dict(owner)).get("annotations") or {}).get(DEPENDENTS_KEY)
    if not raw:
        return None
    try:
        refs = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(refs, list) or not all(
        isinstance(r, list) and len(r) == 3 and all(isinstance(p, str) for p in r) for r in refs
    ):
        return None
    return [(r[0], r[1], r[2]) for r in refs]


def owned_by(obj: Mapping[str, Any] | None, uid: str) -> bool:
    """True when ``obj`` exists and carries an ownerReference to ``uid``."""
    if obj is None:
        return False
    refs = meta(dict(obj)).get("ownerReferences") or []
    return any(r.get("uid") == uid for r in refs)


def missing_dependents(expected: Iterable[Ref], present: Iterable[Ref]) -> list[Ref]:
    """The checked refs of ``expected`` not in ``present``, in order."""
    have = {(k, n) for _, k, n in present}
    return [r for r in expected if r[1] in CHECKED_KINDS and (r[1], r[2]) not in have]


def past_grace(owner: Mapping[str, Any], now: datetime, grace: timedelta = DEFAULT_GRACE) -> bool:
    """True once ``owner`` is older than ``grace`` (never for an unreadable timestamp)."""
    created = parse_time(meta(dict(owner)).get("creationTimestamp"))
    return created is not None and now - created >= grace


@dataclass(frozen=True)
class HalfMade:
    """One owner past its grace period with dependents missing."""

    namespace: str
    name: str
    missing: tuple[Ref, ...]

    @property
    def reason(self) -> str:
        shown = ", ".join(f"{k}/{n}" for _, k, n in self.missing)
        return f"half-made: its {shown} never came (submitter crashed?)"


def half_made(
    owner: Mapping[str, Any],
    present: Sequence[Ref],
    now: datetime,
    *,
    expected: Sequence[Ref] | None = None,
    grace: timedelta = DEFAULT_GRACE,
) -> HalfMade | None:
    """``owner`` as :class:`HalfMade` when it is past ``grace`` and a checked dependent of
    ``expected`` (default: its :data:`DEPENDENTS_KEY` annotation) is not in ``present``.

    The operator calls this with its attempt's refs (``AttemptResources.refs()``) as
    ``expected``; ``sparkplane gc`` with the annotation. Deleted owners are never half-made.
    """
    m = meta(dict(owner))
    if m.get("deletionTimestamp") or not past_grace(owner, now, grace):
        return None
    refs = list(expected) if expected is not None else dependents_of(owner)
    if not refs:
        return None
    missing = missing_dependents(refs, present)
    if not missing:
        return None
    return HalfMade(str(m.get("namespace") or ""), str(m.get("name") or ""), tuple(missing))
