"""Create an owner and its dependents as one unit: all of it, or (after a rollback) none of it.

Order, as spark-submit does it: pre-resources (e.g. a Volcano PodGroup the scheduler needs before
the pod), then the owner (the driver pod), then every dependent concurrently, each with an
ownerReference to the owner's uid, which exists only now. Pre-resources are then adopted by a
merge patch. If any step fails, everything created so far is deleted (the owner with Background
propagation, so the garbage collector also sweeps whatever got its reference) and
:class:`~sparkplane.errors.SubmissionError` says what failed and whether anything is left.
"""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sparkplane.errors import KubeError, NotFoundError, SubmissionError
from sparkplane.kube.client import Kube
from sparkplane.kube.refs import describe, owner_reference

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
    made: list[Obj] = []
    step = "creating"
    current = ""
    try:
        pre = []
        for obj in pre_resources or []:
            current = describe(obj)
            pre.append(kube.create(obj, namespace))
            made.append(pre[-1])
        current = describe(owner)
        created_owner = kube.create(owner, namespace)
        made.append(created_owner)
        owned = [with_owner(d, created_owner) for d in dependents]
        futures = [(describe(d), _POOL.submit(kube.create, d, namespace)) for d in owned]
        created: list[Obj] = []
        failure: tuple[str, BaseException] | None = None
        for text, fut in futures:
            try:
                created.append(fut.result())
                made.append(created[-1])
            except BaseException as error:  # collect every outcome before rolling back
                failure = failure or (text, error)
        if failure:
            current = failure[0]
            raise failure[1]
        step = "adopting"
        for obj in pre:
            current = describe(obj)
            meta = obj["metadata"]
            kube.patch(
                obj["apiVersion"],
                obj["kind"],
                meta["name"],
                {"metadata": {"ownerReferences": [owner_reference(created_owner)]}},
                meta.get("namespace"),
            )
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
