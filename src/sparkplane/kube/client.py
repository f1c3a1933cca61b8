"""``Kube``: create, read, change, delete and watch any kind, as plain dicts.

Requests are built with the official client's serialisation and auth (so kubeconfig tokens,
exec plugins and client certificates all work) but bodies stay JSON dicts: no model classes,
no per-kind API objects. Every call is thread-safe; one ``Kube`` is shared by many threads.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import urllib3
from kubernetes.client.exceptions import ApiException

from sparkplane.errors import KubeError
from sparkplane.kube.discovery import Discovery, Resource
from sparkplane.kube.errors import error_for, transport_error
from sparkplane.kube.transport import Transport

Propagation = Literal["Background", "Foreground", "Orphan"]
PatchType = Literal["merge", "strategic", "json"]
_PATCH_CONTENT = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}
FIELD_MANAGER = "sparkplane"


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK."""

    type: str
    object: dict[str, Any]


class Kube:
    """The gateway. Construct with a :class:`Transport` from :func:`sparkplane.kube.connect`."""

    def __init__(self, api: Transport, *, timeout: float = 30.0) -> None:
        self.api = api
        self.timeout = timeout
        self.discovery = Discovery(lambda path: self.raw("GET", path))
        #: Called with (method, path) right before a write leaves (the operator's lease fence);
        #: it raises to stop the request. As late as the gateway can check.
        self.before_write: Callable[[str, str], None] | None = None

    # -- low level ------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        stream: bool = False,
        timeout: float | tuple[float, float | None] | None = None,
    ) -> Any:
        """Send one request; return the urllib3 response (``stream``) or the decoded JSON."""
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        if self.before_write is not None and method != "GET":
            self.before_write(method, path)
        try:
            resp = self.api.request(
                method,
                path,
                query=query,
                headers=headers,
                body=body,
                timeout=timeout or self.timeout,
            )
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as exc:
            # no HTTP answer (the client turns SSL errors into ApiException status 0)
            if isinstance(exc, ApiException) and exc.status:
                raise
            size = len(body) if isinstance(body, bytes | str) else len(json.dumps(body or ""))
            raise transport_error(exc, method=method, url=path, body_bytes=size) from exc
        if resp.status >= 400:
            raw = resp.read()
            resp.response.release_conn()
            raise error_for(
                resp.status, raw, verb=_verb(method, query), plural=path, namespace=None, obj=path
            )
        if stream:
            return resp.response
        raw = resp.read()
        return json.loads(raw) if raw else {}

    def raw(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """A JSON request without object-level error context (discovery, /version...)."""
        result: dict[str, Any] = self.request(method, path, **kwargs)
        return result

    def _call(
        self,
        method: str,
        res: Resource,
        *,
        namespace: str | None,
        name: str | None = None,
        sub: str = "",
        obj_text: str,
        **kwargs: Any,
    ) -> Any:
        try:
            return self.request(method, res.path(namespace, name, sub), **kwargs)
        except KubeError as exc:
            if exc.obj and exc.obj.startswith("/"):  # re-label with the object and verb
                raise error_for(
                    exc.code,
                    json.dumps(exc.status).encode(),
                    verb=_verb(method, kwargs.get("query")),
                    plural=res.plural,
                    namespace=namespace if res.namespaced else None,
                    obj=obj_text,
                ) from None
            raise

    def resource(self, api_version: str, kind: str) -> Resource:
        """Resolve ``apiVersion``/``kind`` through discovery."""
        return self.discovery.resolve(api_version, kind)

    def serves(self, api_version: str, kind: str) -> bool:
        """Whether the API server serves ``apiVersion``/``kind`` (False: discovery answers 404,
        e.g. its CRD is not installed); any other error is raised."""
        try:
            self.resource(api_version, kind)
        except KubeError as exc:
            if exc.code != 404:
                raise
            return False
        return True

    # -- objects --------------------------------------------------------------------------
    def create(
        self, obj: dict[str, Any], namespace: str | None = None, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Create ``obj`` (namespace from the argument, else from its metadata); ``dry_run``:
        the API server validates and admits it (admission policies too) but stores nothing."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = namespace or obj.get("metadata", {}).get("namespace")
        created: dict[str, Any] = self._call(
            "POST",
            res,
            namespace=ns,
            body=obj,
            obj_text=_text(res, ns, _name(obj)),
            query={"dryRun": "All"} if dry_run else None,
        )
        return created

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any]:
        """Read one object; raises NotFoundError if it does not exist."""
        res = self.resource(api_version, kind)
        got: dict[str, Any] = self._call(
            "GET", res, namespace=namespace, name=name, obj_text=_text(res, namespace, name)
        )
        return got

    def get_or_none(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        """Read one object, or None if it does not exist."""
        from sparkplane.errors import NotFoundError

        try:
            return self.get(api_version, kind, name, namespace)
        except NotFoundError:
            return None

    def list_page(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """List objects (all namespaces when ``namespace`` is None); returns the List body,
        whose ``metadata.resourceVersion`` is where a watch resumes."""
        res = self.resource(api_version, kind)
        query = {"labelSelector": label_selector, "fieldSelector": field_selector, "limit": limit}
        listed: dict[str, Any] = self._call(
            "GET", res, namespace=namespace, query=query, obj_text=_text(res, namespace, "*")
        )
        return listed

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """The objects of a list, with ``apiVersion``/``kind`` filled in on each."""
        body = self.list_page(
            api_version,
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        out = body.get("items", [])
        for item in out:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return list(out)

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
        """Patch one object (or its ``status`` subresource)."""
        res = self.resource(api_version, kind)
        patched: dict[str, Any] = self._call(
            "PATCH",
            res,
            namespace=namespace,
            name=name,
            sub=subresource,
            body=patch,
            content_type=_PATCH_CONTENT[patch_type],
            obj_text=_text(res, namespace, name),
        )
        return patched

    def replace(
        self, obj: dict[str, Any], *, subresource: str = "", namespace: str | None = None
    ) -> dict[str, Any]:
        """PUT ``obj`` (with its resourceVersion, so a lost race raises ConflictError)."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = namespace or obj.get("metadata", {}).get("namespace")
        replaced: dict[str, Any] = self._call(
            "PUT",
            res,
            namespace=ns,
            name=_name(obj),
            sub=subresource,
            body=obj,
            obj_text=_text(res, ns, _name(obj)),
        )
        return replaced

    def apply(
        self,
        obj: dict[str, Any],
        *,
        field_manager: str = FIELD_MANAGER,
        force: bool = True,
        subresource: str = "",
    ) -> dict[str, Any]:
        """Server-side apply ``obj`` (works for CRDs too large for client-side apply)."""
        res = self.resource(obj["apiVersion"], obj["kind"])
        ns = obj.get("metadata", {}).get("namespace")
        applied: dict[str, Any] = self._call(
            "PATCH",
            res,
            namespace=ns,
            name=_name(obj),
            sub=subresource,
            body=obj,
            query={"fieldManager": field_manager, "force": "true" if force else None},
            content_type="application/apply-patch+yaml",
            obj_text=_text(res, ns, _name(obj)),
        )
        return applied

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
        """Delete one object with an explicit propagation policy (and optional uid guard)."""
        res = self.resource(api_version, kind)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation,
        }
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if uid:
            body["preconditions"] = {"uid": uid}
        deleted: dict[str, Any] = self._call(
            "DELETE",
            res,
            namespace=namespace,
            name=name,
            body=body,
            obj_text=_text(res, namespace, name),
        )
        return deleted

    # -- streams --------------------------------------------------------------------------
    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[WatchEvent]:
        """Stream events after ``resource_version``; raises GoneError when it is too old.

        The stream ends when the server closes it (``timeout_seconds``); callers resume from
        the last seen resourceVersion (see ``sparkplane.kube.informer``). ``on_open`` receives
        the open response, so another thread can close it to stop the watch at once.
        """
        res = self.resource(api_version, kind)
        query = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
            "timeoutSeconds": timeout_seconds,
        }
        resp = self._call(
            "GET",
            res,
            namespace=namespace,
            query=query,
            stream=True,
            timeout=timeout_seconds + 30,
            obj_text=_text(res, namespace, "*"),
        )
        if on_open is not None:
            on_open(resp)
        try:
            for line in resp:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object", {})
                if event.get("type") == "ERROR":
                    code = int(obj.get("code", 500))
                    raise error_for(
                        code,
                        json.dumps(obj).encode(),
                        verb="watch",
                        plural=res.plural,
                        namespace=namespace,
                        obj=_text(res, namespace, "*"),
                    )
                obj.setdefault("apiVersion", api_version)
                obj.setdefault("kind", kind)
                yield WatchEvent(event["type"], obj)
        finally:
            resp.release_conn()

    def logs(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        follow: bool = False,
        since_seconds: int | None = None,
        tail_lines: int | None = None,
        timestamps: bool = False,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[str]:
        """Yield the log lines of a pod's container (following if asked: no read timeout).

        ``on_open`` receives the open response so another thread can end a follow early.
        """
        res = self.resource("v1", "Pod")
        query = {
            "container": container,
            "follow": "true" if follow else None,
            "sinceSeconds": since_seconds,
            "tailLines": tail_lines,
            "timestamps": "true" if timestamps else None,
        }
        resp = self._call(
            "GET",
            res,
            namespace=namespace,
            name=name,
            sub="log",
            query=query,
            stream=True,
            timeout=(10.0, None) if follow else self.timeout,
            obj_text=f"Pod {namespace}/{name}",
        )
        if on_open is not None:
            on_open(resp)
        try:
            for line in resp:
                yield line.decode(errors="replace").rstrip("\n")
        finally:
            resp.release_conn()

    def close(self) -> None:
        """Close pooled connections."""
        self.api.close()


def _name(obj: dict[str, Any]) -> str:
    name = obj.get("metadata", {}).get("name")
    return str(name) if name else ""


def _text(res: Resource, namespace: str | None, name: str | None) -> str:
    if res.namespaced and namespace:
        return f"{res.kind} {namespace}/{name or ''}".rstrip("/")
    return f"{res.kind} {name or ''}".rstrip()


def _verb(method: str, query: Mapping[str, Any] | None) -> str:
    if method == "GET":
        if query and query.get("watch"):
            return "watch"
        return "get" if not query or "labelSelector" not in query else "list"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )
