"""Splitting a template's objects into the driver pod and its dependents.

Owns the rule that makes a template an application: exactly one ``v1`` Pod is labelled
``spark-role: driver``; every other object, whatever its kind (ConfigMap, Service, Ingress,
a Volcano PodGroup or any other custom resource), is a dependent that the submitter creates
after the driver with an ownerReference to it. Also checks what would make that impossible:
ownerReferences to the driver already written in the template (its uid only exists once it is
created), namespaces that disagree (ownerReferences cannot cross namespaces), and the same
object twice. Called by :mod:`sparkplane.templates.load` and the submitter. Pure: it never
resolves kinds against the cluster (that is API discovery's job, at submission).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkplane.errors import Problem, ValidationError
from sparkplane.vocab import ROLE_LABEL

DRIVER_ROLE = "driver"
_OWNER_HINT = (
    "remove it: the submitter adds the ownerReference once the driver exists and its uid is known"
)
_NAMESPACE_HINT = "an application lives in one namespace (ownerReferences cannot cross namespaces)"


@dataclass(frozen=True)
class TemplateApp:
    """A template split for submission: the driver pod, then everything it will own."""

    driver: dict[str, Any]
    dependents: list[dict[str, Any]]
    namespace: str | None

    @property
    def name(self) -> str:
        """The driver pod's name."""
        return str(self.driver["metadata"]["name"])

    @property
    def objects(self) -> list[dict[str, Any]]:
        """Every object in creation order: the driver first."""
        return [self.driver, *self.dependents]


def is_driver_pod(obj: Mapping[str, Any]) -> bool:
    """True for a core ``v1`` Pod labelled ``spark-role: driver``."""
    if obj.get("apiVersion") != "v1" or obj.get("kind") != "Pod":
        return False
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, Mapping) and labels.get(ROLE_LABEL) == DRIVER_ROLE


def _describe(obj: Mapping[str, Any], origin: str) -> str:
    return f"{obj.get('kind')} {obj.get('metadata', {}).get('name')} ({origin})"


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return group, str(obj.get("kind")), str(obj["metadata"].get("name"))


def _owner_problems(obj: Mapping[str, Any], origin: str, driver_name: str) -> list[Problem]:
    refs = obj["metadata"].get("ownerReferences") or []
    if not isinstance(refs, list):
        return [Problem(f"{origin}.metadata.ownerReferences", "must be a list")]
    return [
        Problem(
            f"{origin}.metadata.ownerReferences[{index}]",
            f"already points at the driver pod {driver_name!r}",
            _OWNER_HINT,
        )
        for index, ref in enumerate(refs)
        if isinstance(ref, Mapping) and ref.get("kind") == "Pod" and ref.get("name") == driver_name
    ]


def _namespace(
    objects: Sequence[Mapping[str, Any]], origins: Sequence[str], driver: int | None
) -> tuple[str | None, list[Problem]]:
    """The one namespace the objects name (the driver's wins), and a problem per dissenter."""
    named = [(i, o["metadata"].get("namespace")) for i, o in enumerate(objects)]
    named = [(i, ns) for i, ns in named if ns is not None]
    problems = [
        Problem(f"{origins[i]}.metadata.namespace", "must be a non-empty string")
        for i, ns in named
        if not isinstance(ns, str) or not ns
    ]
    named = [(i, ns) for i, ns in named if isinstance(ns, str) and ns]
    if not named:
        return None, problems
    by_driver = [ns for i, ns in named if i == driver]
    chosen: str = by_driver[0] if by_driver else named[0][1]
    whose = "the driver's" if by_driver else f"{origins[named[0][0]]}'s"
    problems += [
        Problem(
            f"{origins[i]}.metadata.namespace",
            f"namespace {ns!r} differs from {whose} {chosen!r}",
            _NAMESPACE_HINT,
        )
        for i, ns in named
        if ns != chosen
    ]
    return chosen, problems


def split(
    objects: Sequence[Mapping[str, Any]], *, origins: Sequence[str] | None = None
) -> TemplateApp:
    """Split loaded objects into a :class:`TemplateApp`, or raise one ValidationError.

    ``objects`` are Kubernetes objects with at least ``metadata.name`` (as
    :mod:`~sparkplane.templates.load` guarantees); ``origins`` name them in messages
    (``file#N``), defaulting to ``objects[i]``. The result holds deep copies.
    """
    where = list(origins) if origins is not None else [f"objects[{i}]" for i in range(len(objects))]
    if len(where) != len(objects):
        raise ValueError("origins must name every object")
    problems: list[Problem] = []
    drivers = [i for i, o in enumerate(objects) if is_driver_pod(o)]
    if not drivers:
        pods = [_describe(o, where[i]) for i, o in enumerate(objects) if o.get("kind") == "Pod"]
        hint = f"label the driver pod {ROLE_LABEL}: {DRIVER_ROLE}"
        if pods:
            hint += "; Pods found: " + ", ".join(pods)
        problems.append(Problem("", f"no Pod is labelled {ROLE_LABEL}: {DRIVER_ROLE}", hint))
    elif len(drivers) > 1:
        listed = ", ".join(_describe(objects[i], where[i]) for i in drivers)
        problems.append(
            Problem(
                where[drivers[1]],
                f"{len(drivers)} Pods are labelled {ROLE_LABEL}: {DRIVER_ROLE}: {listed}",
                "exactly one Pod is the driver; Spark creates the executors itself",
            )
        )
    driver = drivers[0] if len(drivers) == 1 else None
    if driver is not None:
        driver_name = str(objects[driver]["metadata"]["name"])
        for i, obj in enumerate(objects):
            problems += _owner_problems(obj, where[i], driver_name)
    namespace, namespace_problems = _namespace(objects, where, driver)
    problems += namespace_problems
    first_seen: dict[tuple[str, str, str], str] = {}
    for i, obj in enumerate(objects):
        key = _identity(obj)
        if key in first_seen:
            problems.append(
                Problem(
                    where[i], f"{key[1]} {key[2]!r} is defined twice (first at {first_seen[key]})"
                )
            )
        first_seen.setdefault(key, where[i])
    if problems or driver is None:
        raise ValidationError(problems, subject="template")
    dependents = [copy.deepcopy(dict(o)) for i, o in enumerate(objects) if i != driver]
    return TemplateApp(copy.deepcopy(dict(objects[driver])), dependents, namespace)
