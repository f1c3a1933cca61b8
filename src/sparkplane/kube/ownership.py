"""Create an owner and its dependents as one unit: all of it, or (after a rollback) none of it.

Order, as spark-submit does it: pre-resources (e.g. a Volcano PodGroup the scheduler needs before
the pod), then the owner (the driver pod), then every dependent concurrently, each with an
ownerReference to the owner's uid, which exists only now. Pre-resources are then adopted by a
merge patch. If any step fails, everything created so far is deleted (the owner with Background
propagation, so the garbage collector also sweeps whatever got its reference) and
:class:`~sparkplane.errors.SubmissionError` says what failed and whether anything is left.

A pre-resource carries the owner's name (annotation :data:`PENDING_OWNER_KEY`) until it is
adopted; an object of that name found without it (someone else's) is never adopted: the
submission fails on AlreadyExists. A process killed between the steps cannot roll back, so the
owner carries the list of its dependents (annotation :data:`DEPENDENTS_KEY`) from the moment it
exists, and once the last of them exists a merge patch records it (:data:`DEPENDENTS_CREATED_KEY`,
:func:`mark_complete`): a retry with the same names (:func:`resume_owned`) completes or removes
the half-made unit, and ``sparkplane gc`` finds owners whose dependents never came, never
mistaking the Services Spark deletes when it stops for ones that never came
(:mod:`sparkplane.model.halfmade`). Sizes the API
server would refuse are refused before the first create (:mod:`sparkplane.spec.limits`).
The crash-safety tests kill a submitter between these steps from the outside (``tests/
crashing_cli.py`` wraps the gateway's ``create``); nothing here knows about them.
"""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sparkplane.errors import (
    AlreadyExistsError,
    KubeError,
    NotFoundError,
    SubmissionError,
    ValidationError,
)
from sparkplane.kube.client import Kube
from sparkplane.model.halfmade import (
    dependents_of,
    marked_complete,
    owned_by,
)
from sparkplane.spec.limits import object_size_problems
from sparkplane.vocab import (
    DEPENDENTS_CREATED_KEY,
    DEPENDENTS_KEY,
    PENDING_OWNER_KEY,
    POD_ENDED,
    describe,
    now_text,
    owner_reference,
)

Obj = dict[str, Any]
_POOL = ThreadPoolExecutor(max_workers=32, thread_name_prefix="sparkplane-create")


@dataclass
class Created:
    """What a successful :func:`create_owned` made: the owner as created, then its dependents."""

    owner: Obj
    dependents: list[Obj] = field(default_factory=list)
    pre_resources: list[Obj] = field(default_factory=list)

    @property
    def objects(self) -> list[Obj]:
        return [*self.pre_resources, self.owner, *self.dependents]


def with_owner(obj: Obj, owner: Obj) -> Obj:
    """A copy of ``obj`` whose ownerReferences point at ``owner`` (Spark replaces the list)."""
    out = copy.deepcopy(obj)
    out.setdefault("metadata", {})["ownerReferences"] = [owner_reference(owner)]
    return out


def create_owned(
    kube: Kube,
    owner: Obj,
    dependents: list[Obj],
    *,
    pre_resources: list[Obj] | None = None,
    namespace: str | None = None,
) -> Created:
    """Create ``owner`` and ``dependents`` (owned by it) atomically from the user's view."""
    problems = object_size_problems([*(pre_resources or []), owner, *dependents])
    if problems:
        raise ValidationError(problems, subject="application objects")
    owner = announce_dependents(owner, dependents)
    made: list[Obj] = []
    step = "creating"
    current = ""
    try:
        pre = []
        for obj in _pending(pre_resources or [], owner):
            current = describe(obj)
            try:
                pre.append(kube.create(obj, namespace))
                made.append(pre[-1])
            except AlreadyExistsError:
                left = _leftover(kube, obj, namespace, owner)
                if left is None:
                    raise
                pre.append(left)  # an interrupted submission's, with the same names
        current = describe(owner)
        created_owner = kube.create(owner, namespace)
        made.append(created_owner)
        owned = [with_owner(d, created_owner) for d in dependents]
        created, failure = _create_all(kube, owned, namespace, made)
        if failure:
            current = failure[0]
            raise failure[1]
        step = "adopting"
        current = ", ".join(describe(o) for o in pre)
        adopt(kube, pre, created_owner, namespace)
        if created:
            created_owner = mark_complete(kube, created_owner, namespace)
        return Created(owner=created_owner, dependents=created, pre_resources=pre)
    except BaseException as exc:
        leaked = rollback(kube, made)
        what = f"{step} {current}" if current else step
        reason = str(exc) if isinstance(exc, KubeError) else f"{type(exc).__name__}: {exc}"
        if leaked:
            tail = "; could NOT delete: " + ", ".join(leaked)
        elif made:
            tail = f"; rolled back the {len(made)} object(s) already created, nothing was left"
        else:
            tail = "; nothing was created"
        raise SubmissionError(
            f"{what} failed: {reason}{tail}",
            rolled_back=[describe(o) for o in made],
            leaked=leaked,
        ) from exc


def _pending(objects: list[Obj], owner: Obj) -> list[Obj]:
    """Copies of ``objects`` annotated with the name of the owner they wait for."""
    out = []
    for obj in objects:
        marked = copy.deepcopy(obj)
        notes = marked.setdefault("metadata", {}).setdefault("annotations", {})
        notes[PENDING_OWNER_KEY] = str(owner.get("metadata", {}).get("name", ""))
        out.append(marked)
    return out


def _leftover(kube: Kube, obj: Obj, namespace: str | None, owner: Obj) -> Obj | None:
    """``obj`` as it exists with no owner, marked as waiting for ``owner`` (by name): a
    pre-resource a killed submission created under the same (submission-derived) names before
    its owner existed. Anything owned, or not so marked (someone else's), is not ours."""
    meta = obj["metadata"]
    found = kube.get_or_none(obj["apiVersion"], obj["kind"], meta["name"], namespace)
    found_meta = (found or {}).get("metadata") or {}
    wanted = str(owner.get("metadata", {}).get("name", ""))
    if found is None or found_meta.get("ownerReferences"):
        return None
    return found if (found_meta.get("annotations") or {}).get(PENDING_OWNER_KEY) == wanted else None


def adopt(kube: Kube, objects: list[Obj], owner: Obj, namespace: str | None) -> None:
    """Give ``objects`` an ownerReference to ``owner`` (a merge patch each)."""
    for obj in objects:
        meta = obj["metadata"]
        kube.patch(
            obj["apiVersion"],
            obj["kind"],
            meta["name"],
            {"metadata": {"ownerReferences": [owner_reference(owner)]}},
            meta.get("namespace") or namespace,
        )


def mark_complete(kube: Kube, owner: Obj, namespace: str | None) -> Obj:
    """Record on ``owner`` that every dependent it announced exists
    (:data:`~sparkplane.vocab.DEPENDENTS_CREATED_KEY`, the
    time); returns the patched owner. Best effort: the unit is whole either way, so a refused
    patch (a client role without ``patch`` on pods) leaves ``owner`` unmarked, and gc then
    still never takes it once it has finished (:mod:`sparkplane.model.halfmade`)."""
    meta = owner.get("metadata") or {}
    stamp = now_text()
    try:
        return kube.patch(
            owner["apiVersion"],
            owner["kind"],
            meta["name"],
            {"metadata": {"annotations": {DEPENDENTS_CREATED_KEY: stamp}}},
            meta.get("namespace") or namespace,
        )
    except KubeError:
        return owner


def announce_dependents(owner: Obj, dependents: list[Obj]) -> Obj:
    """A copy of ``owner`` annotated with what it should own (read by retries and gc)."""
    out = copy.deepcopy(owner)
    refs = [[d["apiVersion"], d["kind"], d["metadata"]["name"]] for d in dependents]
    annotations = out.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[DEPENDENTS_KEY] = json.dumps(refs, separators=(",", ":"))
    return out


def _create_all(
    kube: Kube, owned: list[Obj], namespace: str | None, made: list[Obj]
) -> tuple[list[Obj], tuple[str, BaseException] | None]:
    """Create ``owned`` concurrently; append each success to ``made``; return the created
    objects and the first failure."""
    created: list[Obj] = []
    failure: tuple[str, BaseException] | None = None
    futures = [(describe(d), _POOL.submit(kube.create, d, namespace)) for d in owned]
    for text, fut in futures:
        try:
            created.append(fut.result())
            made.append(created[-1])
        except BaseException as error:  # collect every outcome before rolling back
            failure = failure or (text, error)
    return created, failure


def rollback(kube: Kube, objects: list[Obj]) -> list[str]:
    """Delete ``objects`` (newest first); return the ones that could not be deleted."""
    leaked: list[str] = []
    for obj in reversed(objects):
        meta = obj.get("metadata", {})
        try:
            kube.delete(
                obj["apiVersion"],
                obj["kind"],
                meta["name"],
                meta.get("namespace"),
                propagation="Background",
                grace_period_seconds=0 if obj["kind"] == "Pod" else None,
            )
        except NotFoundError:
            pass
        except KubeError:
            leaked.append(describe(obj))
    return leaked


@dataclass
class Resumed:
    """What :func:`resume_owned` found and did: the owner, and the dependents it had to add."""

    owner: Obj
    added: list[str] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return bool(self.added)


def resume_owned(
    kube: Kube,
    existing: Obj,
    dependents: list[Obj],
    *,
    pre_resources: list[Obj] | None = None,
    namespace: str | None = None,
) -> Resumed:
    """A retry met ``existing`` (the owner an earlier attempt created under the same names):
    create the dependents it is missing, or remove the half-made unit and raise.

    Complete when the owner has not finished: dependents are created owned by it (the kubelet
    retries a missing ConfigMap volume, so a pending driver then starts). Roll back when it
    has already finished (it ran without them) or when completing fails; then
    :class:`SubmissionError` says so and that a new submit starts afresh. Never reports a
    half-made unit as submitted.
    """
    uid = meta_of(existing).get("uid", "")
    expected = dependents_of(existing)
    by_ref = {(d["apiVersion"], d["kind"], d["metadata"]["name"]): d for d in dependents}
    refs = expected if expected is not None else list(by_ref)
    missing: list[Obj] = []
    present: list[Obj] = []
    for ref in refs:
        api_version, kind, name = ref
        found = kube.get_or_none(api_version, kind, name, namespace)
        if owned_by(found, uid):
            present.append(found)  # type: ignore[arg-type]
        elif ref in by_ref:
            missing.append(by_ref[ref])
    orphans = [
        o for o in (_leftover(kube, p, namespace, existing) for p in pre_resources or []) if o
    ]
    if orphans:  # killed before the pre-resources were adopted
        adopt(kube, orphans, existing, namespace)
    if not missing:
        if refs and not marked_complete(existing):  # the first submitter died before the mark
            existing = mark_complete(kube, existing, namespace)
        return Resumed(existing, added=[f"owner of {describe(o)}" for o in orphans])
    what = describe(existing)
    absent = ", ".join(describe(d) for d in missing)
    phase = (existing.get("status") or {}).get("phase", "")
    if phase in POD_ENDED:
        leaked = rollback(kube, [*present, existing])
        raise SubmissionError(
            f"an earlier submission with this id left {what} without {absent} and it has "
            f"already finished ({phase}): removed it"
            + (f"; could NOT delete: {', '.join(leaked)}" if leaked else "")
            + ". Submit again to start afresh.",
            rolled_back=[what],
            leaked=leaked,
        )
    owned = [with_owner(d, existing) for d in missing]
    made: list[Obj] = []
    created, failure = _create_all(kube, owned, namespace, made)
    if failure is not None and isinstance(failure[1], AlreadyExistsError):
        taken = _not_owned(kube, missing, uid, namespace)  # a concurrent retry's are fine
        if taken is None:
            failure = None
        else:
            failure = (taken, AlreadyExistsError(f"{taken} exists and is not this app's"))
    if failure is not None:
        leaked = rollback(kube, [*present, *made, existing])
        raise SubmissionError(
            f"completing the half-made {what} failed at {failure[0]}: {failure[1]}; removed "
            "it" + (f", could NOT delete: {', '.join(leaked)}" if leaked else "") + ". Submit "
            "again to start afresh.",
            rolled_back=[describe(o) for o in [existing, *present, *made]],
            leaked=leaked,
        ) from failure[1]
    return Resumed(mark_complete(kube, existing, namespace), added=[describe(o) for o in created])


def _not_owned(kube: Kube, objects: list[Obj], uid: str, namespace: str | None) -> str | None:
    """The first of ``objects`` that exists without an ownerReference to ``uid`` (someone
    else's, never to be counted as this app's), or None."""
    for obj in objects:
        meta = obj["metadata"]
        found = kube.get_or_none(obj["apiVersion"], obj["kind"], meta["name"], namespace)
        if found is not None and not owned_by(found, uid):
            return describe(obj)
    return None


def meta_of(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta
