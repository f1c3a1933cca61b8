"""API discovery: which URL serves a given ``apiVersion`` + ``kind``.

Resolving through discovery (instead of a table of known kinds) is what lets template mode and
the operator create custom resources (a Volcano PodGroup, a SparkApplication) exactly like core
kinds; the official client's ``create_from_dict`` cannot. Results are cached per group-version and
refreshed once when a kind is unknown (a CRD may have been installed since).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkplane.errors import KubeError
from sparkplane.vocab import KUBEFLOW_API_VERSION


@dataclass(frozen=True)
class Resource:
    """One REST resource: where objects of a kind live and whether they are namespaced."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        """The URL path of the collection, or of one object (and optionally a subresource)."""
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if sub:
                base += f"/{sub}"
        return base


Fetch = Callable[[str], dict[str, Any]]


_NOT_SERVED_HINT = (
    "is the CRD installed (e.g. `sparkplane operator install`) and the apiVersion right?"
)
_NOT_SERVED_HINTS = {
    KUBEFLOW_API_VERSION: "no Spark operator serving Kubeflow's API is installed; "
    "`sparkplane operator install --operator` installs sparkplane's operator, which serves it "
    "(docs/migrating-from-kubeflow.md), or install Kubeflow's Spark operator",
}


class Discovery:
    """A thread-safe cache of group-version resource lists."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._by_gv: dict[str, dict[str, Resource]] = {}

    def resolve(self, api_version: str, kind: str) -> Resource:
        """The resource for ``kind`` in ``api_version``; raises KubeError naming both if unknown."""
        with self._lock:
            cached = api_version in self._by_gv
        # a cached list may predate a CRD: refresh once; a list fetched just now is current
        for refresh in (False, True) if cached else (False,):
            kinds = self._kinds(api_version, refresh=refresh)
            if kind in kinds:
                return kinds[kind]
        raise KubeError(
            f"the API server does not serve kind {kind!r} in {api_version!r}: "
            f"{_NOT_SERVED_HINTS.get(api_version, _NOT_SERVED_HINT)}",
            code=404,
            reason="NotFound",
        )

    def _kinds(self, api_version: str, *, refresh: bool) -> dict[str, Resource]:
        with self._lock:
            if not refresh and api_version in self._by_gv:
                return self._by_gv[api_version]
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            body = self._fetch(path)
        except KubeError as exc:
            if exc.code == 404:
                body = {"resources": []}
            else:
                raise
        kinds: dict[str, Resource] = {}
        for res in body.get("resources", []):
            if "/" in res["name"]:  # subresources such as pods/log
                continue
            kinds.setdefault(
                res["kind"], Resource(api_version, res["kind"], res["name"], res["namespaced"])
            )
        with self._lock:
            self._by_gv[api_version] = kinds
        return kinds
