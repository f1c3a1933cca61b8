"""A queued app's Workload priority, as Kueue's own job integrations set it.

Kueue v0.17.0 (``pkg/controller/jobframework`` ``ExtractPriority``, ``pkg/util/priority``)
gives a job's Workload its priority from the first of:

1. the job's label ``kueue.x-k8s.io/priority-class``, naming a ``WorkloadPriorityClass``
   (``kueue.x-k8s.io``, cluster-scoped): ``spec.priorityClassRef`` is that class
   (group ``kueue.x-k8s.io``, kind ``WorkloadPriorityClass``) and ``spec.priority`` its value;
2. the first pod set whose pod template names a ``priorityClassName`` (for a Spark app: the
   driver's, its first pod set): a ``PriorityClass`` (``scheduling.k8s.io``), the ref of kind
   ``PriorityClass`` and its value;
3. else the cluster's ``globalDefault`` PriorityClass (several: the lowest value, as Kueue
   picks), the ref to it and its value;
4. else no ref and ``spec.priority`` 0.

A class named (1 or 2) that does not exist: Kueue creates no Workload and retries; so does the
operator (:class:`PriorityClassMissing`, the reconciler says why and looks again).

The operator reads the one class the app names (:func:`wanted`), or lists the PriorityClasses
only when nothing is named (:data:`DEFAULT`); :func:`priority_fields` turns what was read into
the Workload's fields. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkplane.vocab import (
    KUEUE_GROUP,
    PRIORITY_CLASS,
    PRIORITY_CLASS_LABEL,
    SCHEDULING_GROUP,
    WORKLOAD_PRIORITY_CLASS,
)

Obj = dict[str, Any]
DEFAULT_PRIORITY = 0  # Kueue's constants.DefaultPriority


@dataclass(frozen=True)
class ClassRef:
    """A priority class to look up: a WorkloadPriorityClass or a PriorityClass by name, or
    (``name`` empty, :data:`DEFAULT`) the cluster's globalDefault PriorityClass."""

    group: str
    kind: str
    name: str

    @property
    def is_default(self) -> bool:
        return not self.name

    def body(self) -> dict[str, str]:
        """The Workload's ``spec.priorityClassRef``."""
        return {"group": self.group, "kind": self.kind, "name": self.name}


DEFAULT = ClassRef(SCHEDULING_GROUP, PRIORITY_CLASS, "")


def workload_class(name: str) -> ClassRef:
    return ClassRef(KUEUE_GROUP, WORKLOAD_PRIORITY_CLASS, name)


def pod_class(name: str) -> ClassRef:
    return ClassRef(SCHEDULING_GROUP, PRIORITY_CLASS, name)


def wanted(labels: Mapping[str, Any], pod_sets: Sequence[Mapping[str, Any]]) -> ClassRef:
    """The class the Workload's priority comes from: the app's ``labels`` first, then the
    first of ``pod_sets`` (the Workload's, in order) naming a ``priorityClassName``, else
    :data:`DEFAULT`."""
    if name := str(labels.get(PRIORITY_CLASS_LABEL) or ""):
        return workload_class(name)
    for pod_set in pod_sets:
        spec = (pod_set.get("template") or {}).get("spec") or {}
        if name := str(spec.get("priorityClassName") or ""):
            return pod_class(name)
    return DEFAULT


def global_default(classes: Sequence[Mapping[str, Any]]) -> Obj | None:
    """The globalDefault PriorityClass among ``classes`` (several: the lowest value, as
    Kueue picks), None if there is none."""
    found = [c for c in classes if c.get("globalDefault") is True]
    if not found:
        return None
    lowest: Mapping[str, Any] = min(found, key=lambda c: int(c.get("value") or 0))
    return dict(lowest)


class PriorityClassMissing(LookupError):
    """The class an app names does not exist: its Workload is not created (Kueue's own
    integrations create none either) until it does."""

    def __init__(self, ref: ClassRef) -> None:
        self.ref = ref
        super().__init__(missing_message(ref))


def source(ref: ClassRef) -> str:
    """Where ``ref`` was named, in the words a user would look for."""
    if ref.kind == WORKLOAD_PRIORITY_CLASS:
        return f"label {PRIORITY_CLASS_LABEL}"
    return "the driver's priorityClassName"


def missing_message(ref: ClassRef) -> str:
    what = f"{ref.kind} {ref.name!r} ({ref.group})"
    fix = (
        f"create the {ref.kind}, or change or remove the {source(ref)}"
        if ref.kind == WORKLOAD_PRIORITY_CLASS
        else f"create the {ref.kind}, or change or remove spec.driver.priorityClassName "
        "(or the driver pod template's)"
    )
    return f"the app's {source(ref)} names {what}, which does not exist: {fix}"


def priority_fields(ref: ClassRef, found: Mapping[str, Any] | None) -> Obj:
    """The Workload's ``spec.priorityClassRef`` and ``spec.priority`` from ``ref``
    (:func:`wanted`) and ``found``: the class read (for :data:`DEFAULT`: the globalDefault
    PriorityClass, :func:`global_default`; None: there is none). A named class not found
    raises :class:`PriorityClassMissing`."""
    if found is None:
        if ref.is_default:
            return {"priority": DEFAULT_PRIORITY}
        raise PriorityClassMissing(ref)
    name = str((found.get("metadata") or {}).get("name") or ref.name)
    actual = ClassRef(ref.group, ref.kind, name)
    return {"priorityClassRef": actual.body(), "priority": int(found.get("value") or 0)}
