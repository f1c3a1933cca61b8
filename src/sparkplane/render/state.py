"""The driver state that render steps fold over, and copy-on-write helpers to extend it.

:class:`DriverState` mirrors Spark's ``KubernetesDriverSpec``: the pod and the Spark container
kept apart until the end, resources created before the pod (``pre_resources``) and after it
(``resources``), and the system properties that become ``spark.properties``. Steps never mutate
a state: every helper here returns new dicts, so a step's input stays valid. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class DriverState:
    """One snapshot of the driver under construction (treat every dict as read-only)."""

    pod: Obj
    container: Obj
    pre_resources: tuple[Obj, ...] = ()
    resources: tuple[Obj, ...] = ()
    system_properties: Mapping[str, str] = field(default_factory=dict)

    def evolve(
        self,
        *,
        pod: Obj | None = None,
        container: Obj | None = None,
        pre_resources: Iterable[Obj] = (),
        resources: Iterable[Obj] = (),
        properties: Mapping[str, str] | None = None,
    ) -> DriverState:
        """A new state with the given pod/container and appended resources and properties."""
        props = dict(self.system_properties)
        props.update(properties or {})
        return replace(
            self,
            pod=self.pod if pod is None else pod,
            container=self.container if container is None else container,
            pre_resources=self.pre_resources + tuple(pre_resources),
            resources=self.resources + tuple(resources),
            system_properties=props,
        )


def clone(obj: Obj) -> Obj:
    """A deep copy, so a step can edit freely without touching its input."""
    return copy.deepcopy(obj)


def section(obj: Obj, *keys: str) -> Obj:
    """``obj[k1][k2]...``, creating empty dicts on the way (call on a clone only)."""
    cur = obj
    for key in keys:
        cur = cur.setdefault(key, {})
    return cur


def append(obj: Obj, key: str, items: Iterable[Any]) -> None:
    """Append to the list ``obj[key]`` (created if absent); call on a clone only."""
    values = list(items)
    if values:
        obj.setdefault(key, []).extend(copy.deepcopy(values))


def with_env(container: Obj, env: Iterable[Obj]) -> Obj:
    """A copy of ``container`` with ``env`` entries appended."""
    out = clone(container)
    append(out, "env", env)
    return out


def with_volumes(
    pod: Obj, container: Obj, volumes: Iterable[Obj], mounts: Iterable[Obj]
) -> tuple[Obj, Obj]:
    """Copies of pod and container with volumes added to the pod and mounts to the container."""
    new_pod = clone(pod)
    append(section(new_pod, "spec"), "volumes", volumes)
    new_container = clone(container)
    append(new_container, "volumeMounts", mounts)
    return new_pod, new_container


def env_var(name: str, value: str) -> Obj:
    """A plain ``{name, value}`` env entry."""
    return {"name": name, "value": value}
