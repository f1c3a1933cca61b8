"""``AsyncSparkPlane``: the Python API for asyncio programs, on the same core as SparkPlane.

Not a second implementation: every method awaits the matching :class:`~sparkplane.SparkPlane`
method in a worker thread (``asyncio.to_thread``), so the event loop is never blocked and the
behaviour is the CLI's and the sync API's exactly. Iterators (``watch``, ``logs``,
``as_completed``) are pulled item by item from their worker thread. Use it from FastAPI,
Airflow's deferrable operators, or ``asyncio.run``::

    async with AsyncSparkPlane.connect(namespace="spark-jobs") as sp:
        apps = [await sp.submit("examples/spark-pi.yaml") for _ in range(3)]
        async for app in sp.as_completed(apps, timeout=600):
            print(app.name, app.state.phase)
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

from sparkplane.api.client import AppLike, SparkPlane
from sparkplane.model.apps import App, Description
from sparkplane.model.phase import Event
from sparkplane.model.progress import SparkProgress
from sparkplane.model.session import SessionLimit
from sparkplane.model.ttl import TtlDecision
from sparkplane.security.rbac import RbacObject
from sparkplane.usecases.create import Submitted
from sparkplane.usecases.history import HistoryDeployed
from sparkplane.usecases.kubeconfig import Minted
from sparkplane.usecases.session import Attached, SessionInfo
from sparkplane.usecases.suspend import Suspension
from sparkplane.usecases.ui import UiAddress
from sparkplane.usecases.waiting import Until

_T = TypeVar("_T")
_DONE = object()


async def _iterate(make: Callable[[], Iterator[_T]]) -> AsyncIterator[_T]:
    """Pull a blocking iterator in a worker thread, one item per await."""
    it = await asyncio.to_thread(make)
    try:
        while True:
            item = await asyncio.to_thread(next, it, _DONE)
            if item is _DONE:
                return
            yield item  # type: ignore[misc]
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            await asyncio.to_thread(close)


class AsyncSparkPlane:
    """The async face of a :class:`~sparkplane.SparkPlane` (``self.sync``)."""

    def __init__(self, sync: SparkPlane) -> None:
        self.sync = sync

    @classmethod
    async def connect(cls, **kwargs: Any) -> AsyncSparkPlane:
        """As :meth:`SparkPlane.connect` (same keyword arguments)."""
        return cls(await asyncio.to_thread(partial(SparkPlane.connect, **kwargs)))

    @property
    def namespace(self) -> str:
        return self.sync.namespace

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncSparkPlane:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def submit(self, *args: Any, **kwargs: Any) -> Submitted:
        """As :meth:`SparkPlane.submit`."""
        return await asyncio.to_thread(partial(self.sync.submit, *args, **kwargs))

    async def render(self, *args: Any, **kwargs: Any) -> builtins.list[dict[str, Any]]:
        """As :meth:`SparkPlane.render`."""
        return await asyncio.to_thread(partial(self.sync.render, *args, **kwargs))

    async def get(self, app: AppLike, namespace: str | None = None) -> App:
        return await asyncio.to_thread(self.sync.get, app, namespace)

    async def list(self, *args: Any, **kwargs: Any) -> builtins.list[App]:
        return await asyncio.to_thread(partial(self.sync.list, *args, **kwargs))

    async def describe(self, app: AppLike, namespace: str | None = None) -> Description:
        return await asyncio.to_thread(self.sync.describe, app, namespace)

    async def wait(self, app: AppLike, until: Until = "finished", **kwargs: Any) -> App:
        """As :meth:`SparkPlane.wait` (``on_change`` runs in the worker thread)."""
        return await asyncio.to_thread(partial(self.sync.wait, app, until, **kwargs))

    def as_completed(
        self, apps: Iterable[AppLike], until: Until = "finished", *, timeout: float | None = None
    ) -> AsyncIterator[App]:
        """Each app as it reaches ``until`` (``async for``)."""
        refs = builtins.list(apps)
        return _iterate(lambda: self.sync.as_completed(refs, until, timeout=timeout))

    async def wait_all(
        self,
        apps: Iterable[AppLike],
        until: Until = "finished",
        *,
        timeout: float | None = None,
        on_done: Callable[[App], object] | None = None,
    ) -> builtins.list[App]:
        """Wait for every app; ``on_done`` (a function or a coroutine function) per app."""
        done = []
        async for app in self.as_completed(apps, until, timeout=timeout):
            if on_done is not None:
                result = on_done(app)
                if asyncio.iscoroutine(result):
                    await result
            done.append(app)
        return done

    def watch(
        self, namespace: str | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[App]:
        return _iterate(lambda: self.sync.watch(namespace, timeout=timeout))

    def logs(self, app: AppLike, **kwargs: Any) -> AsyncIterator[str]:
        return _iterate(lambda: self.sync.logs(app, **kwargs))

    async def events(self, app: AppLike, namespace: str | None = None) -> builtins.list[Event]:
        return await asyncio.to_thread(self.sync.events, app, namespace)

    async def ui(self, app: AppLike, **kwargs: Any) -> UiAddress:
        return await asyncio.to_thread(partial(self.sync.ui, app, **kwargs))

    async def kill(self, app: AppLike, **kwargs: Any) -> None:
        await asyncio.to_thread(partial(self.sync.kill, app, **kwargs))

    async def suspend(self, app: AppLike, **kwargs: Any) -> Suspension:
        return await asyncio.to_thread(partial(self.sync.suspend, app, **kwargs))

    async def resume(self, app: AppLike, **kwargs: Any) -> Suspension:
        return await asyncio.to_thread(partial(self.sync.resume, app, **kwargs))

    async def gc(self, **kwargs: Any) -> builtins.list[TtlDecision]:
        return await asyncio.to_thread(partial(self.sync.gc, **kwargs))

    async def forward_ui(self, address: UiAddress, **kwargs: Any) -> None:
        """As :meth:`SparkPlane.forward_ui` (runs until cancelled or the forward ends)."""
        await asyncio.to_thread(partial(self.sync.forward_ui, address, **kwargs))

    async def tenant_setup(self, *args: Any, **kwargs: Any) -> builtins.list[dict[str, Any]]:
        return await asyncio.to_thread(partial(self.sync.tenant_setup, *args, **kwargs))

    async def history_up(self, **kwargs: Any) -> HistoryDeployed:
        return await asyncio.to_thread(partial(self.sync.history_up, **kwargs))

    async def history_ensure(self, namespace: str | None = None) -> HistoryDeployed | None:
        return await asyncio.to_thread(self.sync.history_ensure, namespace)

    async def history_down(self, namespace: str | None = None) -> None:
        await asyncio.to_thread(self.sync.history_down, namespace)

    async def history_conf(self, namespace: str | None = None) -> dict[str, str]:
        return await asyncio.to_thread(self.sync.history_conf, namespace)

    async def history_address(self, app_id: str | None = None, **kwargs: Any) -> UiAddress:
        return await asyncio.to_thread(partial(self.sync.history_address, app_id, **kwargs))

    async def rbac(self, *args: Any, **kwargs: Any) -> builtins.list[RbacObject]:
        return await asyncio.to_thread(partial(self.sync.rbac, *args, **kwargs))

    async def kubeconfig(self, *args: Any, **kwargs: Any) -> Minted:
        return await asyncio.to_thread(partial(self.sync.kubeconfig, *args, **kwargs))

    async def install_operator(self, **kwargs: Any) -> builtins.list[str]:
        return await asyncio.to_thread(partial(self.sync.install_operator, **kwargs))

    # -- Spark Connect sessions -----------------------------------------------------------
    @asynccontextmanager
    async def session(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        keep: bool = False,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """As :meth:`SparkPlane.session`: ``async with sp.session() as spark``. Starting,
        waiting and deleting run in worker threads; the SparkSession's own calls block (it
        is pyspark's client): run them with ``asyncio.to_thread`` in a busy loop."""
        ns = namespace or self.namespace
        made = await self.session_create(
            name,
            namespace=ns,
            wait=False,
            **{k: v for k, v in kwargs.items() if k not in ("timeout", "on_progress")},
        )
        try:
            attached = await self.session_attach(
                made.name,
                namespace=ns,
                **{k: v for k, v in kwargs.items() if k in ("timeout", "on_progress")},
            )
            try:
                yield await asyncio.to_thread(attached.spark)
            finally:
                await asyncio.to_thread(attached.close)
        finally:
            if not keep:
                await self.session_delete(made.name, namespace=ns)

    async def session_create(self, *args: Any, **kwargs: Any) -> SessionInfo:
        return await asyncio.to_thread(partial(self.sync.session_create, *args, **kwargs))

    async def session_attach(self, name: str, **kwargs: Any) -> Attached:
        return await asyncio.to_thread(partial(self.sync.session_attach, name, **kwargs))

    async def session_get(self, name: str, **kwargs: Any) -> SessionInfo:
        return await asyncio.to_thread(partial(self.sync.session_get, name, **kwargs))

    async def session_list(self, *args: Any, **kwargs: Any) -> builtins.list[SessionInfo]:
        return await asyncio.to_thread(partial(self.sync.session_list, *args, **kwargs))

    async def session_limit(self, *args: Any, **kwargs: Any) -> SessionLimit | None:
        return await asyncio.to_thread(partial(self.sync.session_limit, *args, **kwargs))

    async def session_ui(self, name: str, **kwargs: Any) -> SparkProgress:
        return await asyncio.to_thread(partial(self.sync.session_ui, name, **kwargs))

    def session_logs(self, name: str, **kwargs: Any) -> AsyncIterator[str]:
        return _iterate(lambda: self.sync.session_logs(name, **kwargs))

    async def session_delete(self, name: str, **kwargs: Any) -> None:
        await asyncio.to_thread(partial(self.sync.session_delete, name, **kwargs))
