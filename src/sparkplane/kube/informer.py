"""A shared watch cache: one list + watch per kind (and selector), however many apps are tracked.

Tracking 500 applications must not open 500 watches or poll 500 times. An ``Informer`` keeps an
in-memory copy of every object of one kind that matches its selector, resumes its watch from the
last resourceVersion (bookmarks keep that fresh), relists after 410 Gone, and calls its handlers
with each change. Readers (``get``/``list``/``by_index``) never touch the API.

Indexes (client-go's ``Indexers``): :meth:`Informer.add_index` names a function giving each
object its index values (e.g. its owners' uids); :meth:`Informer.by_index` then answers "the
objects with this value" without scanning the cache, so a reader that looks up one app's pods
per change costs O(that app's pods), not O(every pod cached). Kept here rather than taken from a
client library: sparkplane's gateway is its own (``kube/``), and the index is a few lines over
the store it already keeps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from sparkplane.errors import GoneError, KubeError, NotFoundError
from sparkplane.kube.client import Kube

log = logging.getLogger(__name__)

Handler = Callable[[str, dict[str, Any]], None]  # (ADDED|MODIFIED|DELETED, object)
IndexFunc = Callable[[dict[str, Any]], Iterable[str]]  # an object -> its index values
Key = tuple[str, str]  # (namespace, name)


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata", {})
    return (str(meta.get("namespace", "")), str(meta["name"]))


class Informer:
    """List once, then watch; a background thread keeps ``store`` current."""

    def __init__(
        self,
        kube: Kube,
        api_version: str,
        kind: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        watch_timeout: int = 240,
    ) -> None:
        self.kube = kube
        self.api_version, self.kind = api_version, kind
        self.namespace, self.label_selector = namespace, label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self._store: dict[Key, dict[str, Any]] = {}
        self._index_funcs: dict[str, IndexFunc] = {}
        self._indexes: dict[str, dict[str, set[Key]]] = {}
        self._lock = threading.RLock()
        self._handlers: list[Handler] = []
        self._synced = threading.Event()
        self._stopping = threading.Event()
        self._unserved = False  # its API was found not served (said once in the log)
        self._thread: threading.Thread | None = None
        self._response: Any = None
        self.resource_version = ""
        self.relists = 0  # how often the cache had to be rebuilt (410 Gone, errors)

    # -- readers --------------------------------------------------------------------------
    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._store.get((namespace, name))

    def add_index(self, name: str, values: IndexFunc) -> None:
        """Index the cache by ``values(obj)`` (call before :meth:`start`)."""
        with self._lock:
            self._index_funcs[name] = values
            self._indexes[name] = {}
            for key, obj in self._store.items():
                self._index_add(key, obj, only=name)

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        """The cached objects whose index ``name`` holds ``value``."""
        with self._lock:
            keys = self._indexes[name].get(value, ())
            return [self._store[k] for k in sorted(keys) if k in self._store]

    def list(
        self, namespace: str | None = None, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        with self._lock:
            objs = list(self._store.values())
        return [
            o
            for o in objs
            if (namespace is None or o["metadata"].get("namespace") == namespace)
            and (where is None or where(o))
        ]

    def _index_add(self, key: Key, obj: dict[str, Any], only: str | None = None) -> None:
        for name, values in self._index_funcs.items():
            if only is None or name == only:
                for value in values(obj):
                    self._indexes[name].setdefault(value, set()).add(key)

    def _index_drop(self, key: Key, obj: dict[str, Any] | None) -> None:
        if obj is None:
            return
        for name, values in self._index_funcs.items():
            index = self._indexes[name]
            for value in values(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def _put(self, key: Key, obj: dict[str, Any] | None) -> None:
        """Store ``obj`` under ``key`` (None: remove it), keeping the indexes (lock held)."""
        self._index_drop(key, self._store.get(key))
        if obj is None:
            self._store.pop(key, None)
        else:
            self._store[key] = obj
            self._index_add(key, obj)

    def _replace_all(self, fresh: dict[Key, dict[str, Any]]) -> dict[Key, dict[str, Any]]:
        """Swap the whole store (lock held); returns the old one."""
        old, self._store = self._store, fresh
        self._indexes = {name: {} for name in self._index_funcs}
        for key, obj in fresh.items():
            self._index_add(key, obj)
        return old

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(type, obj)`` for every change (from the informer's thread)."""
        self._handlers.append(handler)

    def remove_handler(self, handler: Handler) -> None:
        if handler in self._handlers:
            self._handlers.remove(handler)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> Informer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"informer-{self.kind}", daemon=True
            )
            self._thread.start()
        return self

    def wait_synced(self, timeout: float = 30.0) -> None:
        if not self._synced.wait(timeout):
            raise KubeError(f"the {self.kind} cache did not sync within {timeout}s")

    def stop(self) -> None:
        self._stopping.set()
        resp = self._response
        if resp is not None:
            try:
                resp.shutdown()
            except Exception:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- the loop -------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = 0.5
        need_list = True
        while not self._stopping.is_set():
            try:
                if need_list:
                    self._relist()
                    need_list = False
                self._watch_once()
                backoff = 0.5
                self._unserved = False
            except GoneError:
                log.info("%s watch expired (410 Gone): relisting", self.kind)
                need_list = True
            except KubeError as exc:
                if not isinstance(exc, NotFoundError) and exc.code != 404:
                    self._failed(exc, backoff)
                    backoff = min(backoff * 2, 10.0)
                    need_list = exc.code >= 500 or exc.code == 0
                    continue
                # the API is not served (discovery's 404 for an unknown kind, or the list's: its
                # CRD is not installed yet, or was deleted): there is nothing of this kind, which
                # is a synced, empty cache; look again later
                if self._stopping.is_set():
                    return
                if not self._unserved:  # said once; it looks again quietly
                    log.info("%s is not served (%s): empty until it is", self.kind, exc)
                self._unserved = True
                self._forget_all()
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 10.0)
                need_list = True
            except Exception as exc:
                self._failed(exc, backoff)
                backoff = min(backoff * 2, 10.0)
                need_list = True

    def _failed(self, exc: Exception, backoff: float) -> None:
        """Log a failed list/watch and wait ``backoff`` seconds (unless stopping)."""
        if self._stopping.is_set():
            return
        log.warning("%s watch failed (%s); retrying in %.1fs", self.kind, exc, backoff)
        self._stopping.wait(backoff)

    def _forget_all(self) -> None:
        with self._lock:
            old = self._replace_all({})
        for obj in old.values():
            self._emit("DELETED", obj)
        self.resource_version = ""
        self._synced.set()

    def _relist(self) -> None:
        page = self.kube.list_page(
            self.api_version,
            self.kind,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        fresh: dict[Key, dict[str, Any]] = {}
        for item in page.get("items", []):
            item.setdefault("apiVersion", self.api_version)
            item.setdefault("kind", self.kind)
            fresh[key_of(item)] = item
        with self._lock:
            old = self._replace_all(fresh)
        if self.resource_version:
            self.relists += 1
        self.resource_version = str(page["metadata"].get("resourceVersion", ""))
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self._emit("ADDED", obj)
            elif prev["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._emit("MODIFIED", obj)
        for key, obj in old.items():
            if key not in fresh:
                self._emit("DELETED", obj)
        self._synced.set()

    def _watch_once(self) -> None:
        stream = self.kube.watch(
            self.api_version,
            self.kind,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=self.watch_timeout,
            on_open=self._remember,
        )
        for event in stream:
            if self._stopping.is_set():
                return
            obj = event.object
            rv = obj.get("metadata", {}).get("resourceVersion")
            if rv:
                self.resource_version = str(rv)
            if event.type == "BOOKMARK":
                continue
            with self._lock:
                self._put(key_of(obj), None if event.type == "DELETED" else obj)
            self._emit(event.type, obj)

    def _remember(self, response: Any) -> None:
        self._response = response

    def _emit(self, kind: str, obj: dict[str, Any]) -> None:
        for handler in list(self._handlers):
            try:
                handler(kind, obj)
            except Exception:  # a faulty handler must not kill the cache
                log.exception("informer handler failed for %s", self.kind)
