"""When a staged bundle is deleted: never-downloaded expiry and owner-gone clean-up.

Rules (the seed's ``StagedResourcesCleaner``): a bundle nobody downloaded is deleted once it is
older than ``unused_expiry``; a downloaded bundle is deleted once no Kubernetes object matches its
owner description, checked after a grace period following the first download. :func:`decide`
is pure (clock and owner lookup are parameters); :func:`run_cleanup` applies its verdicts to the
store and the metadata. The Kubernetes lookup is injected as an :data:`OwnerChecker`; this module
never talks to the API server itself, and a failing lookup keeps the bundle (retried next round).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from sparkplane.staging.metadata import Metadata, ResourceRecord
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.store import Store

log = logging.getLogger(__name__)

OwnerChecker = Callable[[str, dict[str, str]], bool]
"""``(namespace, labels) -> bool``: does any owner-type object in ``namespace`` carry all
``labels``? Wired by the caller to the Kubernetes gateway (a pod list with a label selector).
Any exception means "cannot tell": the bundle is kept, up to ``max_age``."""


class OwnerUnknown(Exception):
    """The owner cannot be checked at all (the server has no cluster credentials)."""


def no_owner_check(namespace: str, labels: dict[str, str]) -> bool:
    """The checker of a server without cluster credentials: owners are never known."""
    raise OwnerUnknown("no cluster credentials")


class Verdict(StrEnum):
    """What to do with one bundle this round, before asking Kubernetes."""

    KEEP = "keep"
    """Unused but young, or downloaded too recently to judge its owner."""
    EXPIRED = "expired"
    """Never downloaded and older than the unused expiry: delete."""
    CHECK_OWNER = "check-owner"
    """Downloaded: delete only if no object matches its owner description."""


class Reason(StrEnum):
    """Why a bundle was deleted."""

    UNUSED_EXPIRED = "unused-expired"
    OWNER_GONE = "owner-gone"
    MAX_AGE = "owner-unverifiable-max-age"


@dataclass(frozen=True)
class CleanupPolicy:
    """Clean-up timing, in seconds."""

    unused_expiry: float = 30 * 60
    """How long a never-downloaded bundle is kept."""
    owner_grace: float = 60.0
    """After the first download, how long before the owner check may delete the bundle."""
    max_age: float = 7 * 24 * 3600.0
    """A bundle whose owner cannot be checked (Forbidden, no credentials) is deleted once
    this old; 0 keeps it until its owner can be checked."""


@dataclass(frozen=True)
class Deletion:
    """One bundle to delete and why."""

    resource_id: str
    reason: Reason


def classify(record: ResourceRecord, now: float, policy: CleanupPolicy) -> Verdict:
    """The verdict for one bundle at time ``now``."""
    if record.first_downloaded_at is None:
        expired = now - record.created_at >= policy.unused_expiry
        return Verdict.EXPIRED if expired else Verdict.KEEP
    if now - record.first_downloaded_at < policy.owner_grace:
        return Verdict.KEEP
    return Verdict.CHECK_OWNER


def _owner_key(owner: ResourceOwner) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    return owner.namespace, owner.owner_type.value, tuple(sorted(owner.labels.items()))


def decide(
    records: Iterable[ResourceRecord],
    now: float,
    policy: CleanupPolicy,
    owner_exists: OwnerChecker,
) -> list[Deletion]:
    """The bundles to delete this round. Asks ``owner_exists`` once per distinct owner; an
    exception from it keeps that owner's bundles until they reach ``policy.max_age``. Failed
    checks are reported in one warning line per round (no traceback)."""
    answers: dict[tuple[str, str, tuple[tuple[str, str], ...]], bool | None] = {}
    failures: dict[str, str] = {}
    deletions: list[Deletion] = []
    for record in records:
        verdict = classify(record, now, policy)
        if verdict is Verdict.EXPIRED:
            deletions.append(Deletion(record.resource_id, Reason.UNUSED_EXPIRED))
        elif verdict is Verdict.CHECK_OWNER:
            key = _owner_key(record.owner)
            if key not in answers:
                try:
                    answers[key] = owner_exists(record.owner.namespace, dict(record.owner.labels))
                except Exception as exc:  # any failure means "cannot tell"
                    answers[key] = None
                    if not isinstance(exc, OwnerUnknown):
                        failures[record.owner.namespace] = f"{type(exc).__name__}: {exc}"
            answer = answers[key]
            if answer is False:
                deletions.append(Deletion(record.resource_id, Reason.OWNER_GONE))
            elif answer is None and policy.max_age and now - record.created_at >= policy.max_age:
                deletions.append(Deletion(record.resource_id, Reason.MAX_AGE))
    if failures:
        first_ns, first_error = next(iter(failures.items()))
        log.warning(
            "owner check failed in %d namespace(s) (e.g. %s: %s); their bundles are kept until "
            "they are %gs old (--max-age)",
            len(failures),
            first_ns,
            first_error.splitlines()[0][:300],
            policy.max_age,
        )
    return deletions


def run_cleanup(
    db: Metadata,
    store: Store,
    owner_exists: OwnerChecker,
    now: float,
    policy: CleanupPolicy,
) -> list[Deletion]:
    """One clean-up round: decide, then delete bytes first and the row second (so a crash in
    between leaves a row whose download answers 410, and the next round removes it)."""
    deletions = decide(db.all(), now, policy, owner_exists)
    for deletion in deletions:
        store.delete(deletion.resource_id)
        db.delete(deletion.resource_id)
        log.info("deleted staged bundle %s (%s)", deletion.resource_id, deletion.reason.value)
    return deletions


def sweep_orphans(db: Metadata, store: Store) -> int:
    """Delete stored bundles without a metadata row (a crash between commit and insert)."""
    known = {record.resource_id for record in db.all()}
    orphans = [rid for rid in store.list_ids() if rid not in known]
    for rid in orphans:
        store.delete(rid)
    return len(orphans)
