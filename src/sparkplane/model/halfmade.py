"""Half-made applications: a driver pod whose dependents never came (a submitter crash).

Owns the two annotations :func:`sparkplane.kube.ownership.create_owned` puts on every driver
pod: :data:`DEPENDENTS_KEY` (``[[apiVersion, kind, name], ...]`` of what it should own), written
with the pod, and :data:`DEPENDENTS_CREATED_KEY` (when the last of them was created), written
by a patch
once they all exist. On them rest the pure decisions: which dependents are missing
(:func:`missing_dependents`), whether an owner is half-made (:func:`half_made`, for
``sparkplane gc`` and, with its own refs, the operator's attempts), and which kinds a checker
can see without reading Secrets (:data:`CHECKED_KINDS`). Called by ``lifecycle.gc`` and
``kube.ownership``. Pure: the caller lists pods and looks the dependents up.

**The rule.** "Half-made" means the dependents *never existed*, not that they are gone: Spark
itself deletes the driver's Services (``spark.kubernetes.driver.service.deleteOnTermination``,
true by default) and its executors' ConfigMaps and PVCs when it stops cleanly, so a finished
app normally lacks some of what it announced. An owner is half-made only when all of these hold:

1. it is not being deleted and is older than the grace period (a submission in progress);
2. it does not carry :data:`DEPENDENTS_CREATED_KEY`: a submitter that got that far had created every
   dependent, so whatever is missing now was removed later (by Spark, or by hand);
3. it has not finished (pod phase ``Succeeded``/``Failed``): a finished driver holds no
   resources and is the TTL's to delete (``--ttl``, ``--older-than``). This covers owners that
   lack the mark although they were whole: submitted by a sparkplane before the mark existed,
   a submitter killed between its last dependent and the mark, or a mark refused (a client
   role without ``pods patch``);
4. a checked dependent (:data:`CHECKED_KINDS`) is missing.

So what gc removes as half-made is a pod that is Pending (its spark.properties ConfigMap volume
never came, it cannot start) or Running without its Service (executors cannot reach it), with
no record that its dependents were ever made. The one case left to chance: an unmarked owner
(case 3's exceptions) caught in the seconds between Spark deleting its Services and the
driver's exit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sparkplane.model.pods import meta
from sparkplane.vocab import (
    DEPENDENTS_CREATED_KEY,
    DEPENDENTS_KEY,
    POD_ENDED,
    owner_refs,
    parse_time,
)

Obj = dict[str, Any]
Ref = tuple[str, str, str]  # (apiVersion, kind, name)

#: Written on the owner once every dependent exists (an RFC 3339 time): never half-made after.
#: Owner phases of a finished driver: never half-made, only the TTL deletes it.
#: How long a submission may take between creating the owner and its last dependent.
DEFAULT_GRACE = timedelta(minutes=5)
#: Kinds whose presence is checked; others (Secrets: no identity may read them) count as present.
CHECKED_KINDS = frozenset(
    {"ConfigMap", "Service", "Ingress", "PersistentVolumeClaim", "NetworkPolicy"}
)


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
    return obj is not None and any(r.get("uid") == uid for r in owner_refs(obj))


def missing_dependents(expected: Iterable[Ref], present: Iterable[Ref]) -> list[Ref]:
    """The checked refs of ``expected`` not in ``present``, in order."""
    have = {(k, n) for _, k, n in present}
    return [r for r in expected if r[1] in CHECKED_KINDS and (r[1], r[2]) not in have]


def marked_complete(owner: Mapping[str, Any]) -> bool:
    """True when the submitter recorded that every dependent of ``owner`` was created."""
    return bool((meta(dict(owner)).get("annotations") or {}).get(DEPENDENTS_CREATED_KEY))


def finished(owner: Mapping[str, Any]) -> bool:
    """True for a driver pod that has ended (``Succeeded`` or ``Failed``)."""
    return str((owner.get("status") or {}).get("phase") or "") in POD_ENDED


def may_be_half_made(owner: Mapping[str, Any], now: datetime, grace: timedelta) -> bool:
    """Conditions 1-3 of the rule (module docstring): whether the dependents are worth
    looking up at all."""
    if meta(dict(owner)).get("deletionTimestamp") or not past_grace(owner, now, grace):
        return False
    return not marked_complete(owner) and not finished(owner)


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
    """``owner`` as :class:`HalfMade` when the rule of the module docstring holds: past
    ``grace``, not deleted, not marked complete, not finished, and a checked dependent of
    ``expected`` (default: its :data:`DEPENDENTS_KEY` annotation) not in ``present``.

    ``sparkplane gc`` calls this with the annotation; ``expected`` lets a caller name the refs
    itself (an operator attempt's).
    """
    m = meta(dict(owner))
    if not may_be_half_made(owner, now, grace):
        return None
    refs = list(expected) if expected is not None else dependents_of(owner)
    if not refs:
        return None
    missing = missing_dependents(refs, present)
    if not missing:
        return None
    return HalfMade(str(m.get("namespace") or ""), str(m.get("name") or ""), tuple(missing))
