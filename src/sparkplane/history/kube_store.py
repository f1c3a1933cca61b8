"""The log archive inside the cluster: one ConfigMap per archived app, in the app's namespace.

Implements :class:`~sparkplane.history.archive.ArchiveStore` over the API (through the
:class:`~sparkplane.kube.Kube` gateway), so an in-cluster operator or gc CronJob archives where
a user's ``sparkplane logs`` on a laptop reads it, and the namespace's RBAC decides who may:
writers need ``configmaps create/update/delete`` (and ``list`` to prune), readers ``get``.
Keys keep the archive's layout (``<namespace>/<app>/<file>``), taken from the object itself: its
namespace, and an app whose ConfigMap name is ``sparkplane-logs-<app>`` (an object under another
name is not an archive, whatever its labels say). Deletes carry the listed object's uid as a
precondition. The ConfigMap body (gzip, size budget, labels) is
:mod:`sparkplane.history.pack`'s. Selected by
``SPARKPLANE_LOG_ARCHIVE=kube`` (:func:`sparkplane.history.stores.open_store`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkplane.errors import AlreadyExistsError, ConflictError, NotFoundError
from sparkplane.history import archive as layout
from sparkplane.history import pack
from sparkplane.kube import Kube

Obj = dict[str, Any]


def _split(key: str) -> tuple[str, str | None, str | None]:
    parts = [p for p in key.split("/") if p]
    if not parts or len(parts) > 3 or any(p in (".", "..") for p in parts):
        raise ValueError(f"bad archive key {key!r}")
    return parts[0], parts[1] if len(parts) > 1 else None, parts[2] if len(parts) > 2 else None


class KubeStore:
    """Archived apps as ConfigMaps; ``namespaces`` bounds listing (None: every namespace)."""

    def __init__(
        self, kube: Kube, namespaces: Sequence[str] | None = None, *, budget: int = pack.BUDGET
    ) -> None:
        self.kube = kube
        self.namespaces = tuple(namespaces) if namespaces else None
        self.budget = budget
        #: the last listing's objects, so that pruning reads each meta.json without a GET
        self._listed: dict[tuple[str, str], Obj] = {}

    def __repr__(self) -> str:
        return f"KubeStore(namespaces={self.namespaces!r})"

    def _object(self, namespace: str, app: str) -> Obj | None:
        found = self.kube.get_or_none("v1", "ConfigMap", pack.configmap_name(app), namespace)
        if found is None or not _is_archive(found):
            return None
        return found if _app(found) == app and _named_for_its_app(found) else None

    def _archives(self, namespace: str | None) -> list[Obj]:
        scopes = [namespace] if namespace else list(self.namespaces or [None])
        selector = f"{pack.LABEL}=true"
        found = [
            obj
            for ns in scopes
            for obj in self.kube.list("v1", "ConfigMap", ns, label_selector=selector)
            if _named_for_its_app(obj)
        ]
        self._listed = {(o["metadata"]["namespace"], _app(o)): o for o in found}
        return found

    def replace(self, prefix: str, files: dict[str, bytes]) -> None:
        namespace, app, _ = _split(prefix)
        if app is None:
            raise ValueError(f"bad archive prefix {prefix!r}")
        body = pack.configmap(namespace, app, files, self.budget)
        self._listed.pop((namespace, app), None)
        for _ in range(5):
            current = self.kube.get_or_none("v1", "ConfigMap", body["metadata"]["name"], namespace)
            if current is not None and not _is_archive(current):
                raise ConflictError(f"ConfigMap {namespace}/{body['metadata']['name']} exists")
            try:
                if current is None:
                    self.kube.create(body)
                else:
                    version = current["metadata"]["resourceVersion"]
                    meta = {**body["metadata"], "resourceVersion": version}
                    self.kube.replace({**body, "metadata": meta})
                return
            except (ConflictError, AlreadyExistsError):  # raced: read it again
                continue
        raise ConflictError(f"ConfigMap {namespace}/{body['metadata']['name']} keeps changing")

    def put(self, key: str, data: bytes) -> None:
        namespace, app, name = _split(key)
        if app is None or name is None:
            raise ValueError(f"bad archive key {key!r}")
        found = self._object(namespace, app)
        files = pack.unpack(found) if found else {}
        self.replace(f"{namespace}/{app}/", {**files, name: data})

    def get(self, key: str) -> bytes | None:
        namespace, app, name = _split(key)
        if app and name == layout.META and (namespace, app) in self._listed:
            return pack.file_of(self._listed[(namespace, app)], name)
        found = self._object(namespace, app) if app and name else None
        return pack.file_of(found, name or "") if found else None

    def keys(self, prefix: str) -> list[str]:
        if not prefix.strip("/"):
            objects, namespace = self._archives(None), None
        else:
            namespace, app, _ = _split(prefix)
            if app is not None:
                found = self._object(namespace, app)
                return [f"{namespace}/{app}/{n}" for n in pack.files_of(found)] if found else []
            objects = self._archives(namespace)
        return sorted(
            f"{obj['metadata']['namespace']}/{_app(obj)}/{n}"
            for obj in objects
            if _app(obj)
            for n in pack.files_of(obj)
        )

    def delete_prefix(self, prefix: str) -> int:
        namespace, app, _ = _split(prefix)
        targets = [self._object(namespace, app)] if app else self._archives(namespace)
        count = 0
        for obj in targets:
            if obj is None:
                continue
            meta = obj["metadata"]
            self._listed.pop((meta["namespace"], _app(obj)), None)
            try:
                uid = meta.get("uid")
                self.kube.delete("v1", "ConfigMap", meta["name"], meta["namespace"], uid=uid)
            except (NotFoundError, ConflictError):  # gone, or replaced since it was read
                continue
            count += len(pack.files_of(obj))
        return count


def _is_archive(obj: Obj) -> bool:
    return (obj.get("metadata", {}).get("labels") or {}).get(pack.LABEL) == "true"


def _named_for_its_app(obj: Obj) -> bool:
    """Its name is the archive name of the app it claims (the identity pruning trusts)."""
    app = _app(obj)
    return bool(app) and obj["metadata"].get("name") == pack.configmap_name(app)


def _app(obj: Obj) -> str:
    return str((obj["metadata"].get("annotations") or {}).get(pack.APP_ANNOTATION, ""))
