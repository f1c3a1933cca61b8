"""Kill an application: delete its owner with Background propagation and, if asked, wait for the
garbage collector to remove every object it owned (pods, ConfigMaps, Services, Ingresses...)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sparkplane.errors import ForbiddenError, NotFoundError, TimeoutExpired
from sparkplane.history.logs import archive_app
from sparkplane.kube import Kube
from sparkplane.model.apps import App, Mode
from sparkplane.settings import Settings
from sparkplane.usecases.record import KILLED, record

Obj = dict[str, Any]
OWNED_KINDS = (
    ("v1", "Pod"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("v1", "Secret"),
    ("v1", "PersistentVolumeClaim"),
    ("networking.k8s.io/v1", "Ingress"),
)


def _listable(kube: Kube, api: str, kind: str, namespace: str) -> list[Obj]:
    """The objects of a kind, or none if this identity may not list it (the least-privilege
    client may create Secrets but never read them; the garbage collector removes those)."""
    try:
        return kube.list(api, kind, namespace)
    except ForbiddenError:
        return []


def remaining_objects(kube: Kube, namespace: str, uids: set[str]) -> list[str]:
    """Objects still owned (directly or through an owned object) by any of ``uids``, among
    the kinds this identity may list."""
    objs = [o for api, kind in OWNED_KINDS for o in _listable(kube, api, kind, namespace)]
    owners = set(uids)
    grew = True
    while grew:  # follow ownership chains: CR -> driver pod -> executor pods / ConfigMaps
        grew = False
        for obj in objs:
            meta = obj["metadata"]
            refs = {r.get("uid") for r in meta.get("ownerReferences") or []}
            if refs & owners and meta["uid"] not in owners:
                owners.add(meta["uid"])
                grew = True
    return [
        f"{o['kind']}/{o['metadata']['name']}"
        for o in objs
        if o["metadata"]["uid"] in owners and o["metadata"]["uid"] not in uids
    ]


KILL_MESSAGE = "Killed by sparkplane kill (its driver log archived first)"


def kill(
    kube: Kube,
    app: App,
    *,
    wait: bool = False,
    timeout: float = 120.0,
    grace_period_seconds: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
    settings: Settings,
) -> list[str]:
    """Delete ``app``'s owner (driver pod or custom resource); returns objects left (``[]``)."""
    owner = app.owner
    meta = owner.get("metadata", {})
    uid = meta.get("uid", "")
    kind = app.owner_kind
    archive_app(kube, app, "killed", settings=settings)  # keep its logs first (best effort)
    if app.mode is Mode.NATIVE and meta.get("uid"):
        record(kube, {"apiVersion": "v1", "kind": "Pod", **owner}, KILLED, KILL_MESSAGE)
    try:
        kube.delete(
            kind.api_version,
            kind.kind,
            meta.get("name", app.driver_pod or app.name),
            app.namespace,
            propagation="Background",
            grace_period_seconds=grace_period_seconds,
        )
    except NotFoundError:
        pass
    if not wait:
        return []
    deadline = time.monotonic() + timeout
    while True:
        gone = kube.get_or_none(kind.api_version, kind.kind, meta.get("name", ""), app.namespace)
        left = remaining_objects(kube, app.namespace, {uid}) if uid else []
        if (gone is None or gone["metadata"].get("uid") != uid) and not left:
            return []
        if time.monotonic() > deadline:
            raise TimeoutExpired(
                f"{app.name} was deleted but after {timeout:.0f}s these objects remain: "
                f"{', '.join(left) or kind.kind}"
            )
        progress(f"waiting for the garbage collector: {len(left)} owned object(s) left")
        time.sleep(0.5)
