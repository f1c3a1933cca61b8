"""The fence: a gateway whose every write first asks "do I still hold the lease?".

Owns :class:`FencedKube`, a :class:`~sparkplane.kube.Kube` that checks ``may_write`` (the leader
elector's :meth:`~sparkplane.operator.leader.LeaderElector.holds`, which has a margin) right before
each create, replace, patch, apply and delete, and raises :class:`LostLease` instead of sending it.
Reads go through unchanged. The runner hands it to everything that writes (status commits,
actions, Events, the sweeper), so no code path can write without passing the check.

A check right before the request narrows the window of a paused replica to the microseconds
between the check and the socket send; the API's own guarantees close the rest: the runner
commits ``.status`` with the resourceVersion it decided from BEFORE creating or deleting
anything (a stale replica gets 409 Conflict first), names are deterministic per attempt (a
second create answers 409 AlreadyExists), and deletes of pods carry a uid precondition.
Called by the runner. No policy of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkplane.errors import SparkplaneError
from sparkplane.kube import Kube
from sparkplane.kube.client import FIELD_MANAGER, PatchType, Propagation


class LostLease(SparkplaneError):
    """This replica no longer holds (or cannot prove it holds) the lease: it must not write."""


class FencedKube(Kube):
    """``kube``'s connection and discovery, with every write guarded by ``may_write``."""

    def __init__(self, kube: Kube, may_write: Callable[[], bool]) -> None:
        super().__init__(kube.api, timeout=kube.timeout)
        self.discovery = kube.discovery
        self.may_write = may_write
        self.refused = 0  # writes not sent because the lease was not held

    def _check(self, verb: str, what: str) -> None:
        if not self.may_write():
            self.refused += 1
            raise LostLease(f"not the leader: refusing to {verb} {what}")

    def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        self._check("create", f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}")
        return super().create(obj, namespace)

    def replace(
        self, obj: dict[str, Any], *, subresource: str = "", namespace: str | None = None
    ) -> dict[str, Any]:
        self._check("replace", f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}")
        return super().replace(obj, subresource=subresource, namespace=namespace)

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> dict[str, Any]:
        self._check("patch", f"{kind} {name}")
        return super().patch(
            api_version,
            kind,
            name,
            patch,
            namespace,
            patch_type=patch_type,
            subresource=subresource,
        )

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str = FIELD_MANAGER,
        force: bool = True,
        subresource: str = "",
    ) -> dict[str, Any]:
        self._check("apply", f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}")
        return super().apply(obj, field_manager=field_manager, force=force, subresource=subresource)

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation: Propagation = "Background",
        grace_period_seconds: int | None = None,
        uid: str | None = None,
    ) -> dict[str, Any]:
        self._check("delete", f"{kind} {name}")
        return super().delete(
            api_version,
            kind,
            name,
            namespace,
            propagation=propagation,
            grace_period_seconds=grace_period_seconds,
            uid=uid,
        )
