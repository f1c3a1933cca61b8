"""The lifecycle half of the Python API: wait and watch, logs, UI, events, kill, gc.

:class:`AppOperations` is a base of :class:`sparkplane.SparkPlane` (the module split keeps
each file readable); it holds no state of its own beyond the shared trackers and calls the
lifecycle functions, one per method, exactly as the CLI's commands do through it.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Union

from sparkplane.errors import AppNotFoundError, TimeoutExpired
from sparkplane.model.apps import App

if TYPE_CHECKING:
    from sparkplane.kube import Kube
    from sparkplane.model.phase import Event
    from sparkplane.model.ttl import TtlDecision
    from sparkplane.usecases.create import Submitted
    from sparkplane.usecases.tracker import Tracker
    from sparkplane.usecases.ui import UiAddress
    from sparkplane.usecases.waiting import Until

AppLike = Union[App, "Submitted", str]
Obj = dict[str, Any]


class AppOperations:
    """Operations on submitted applications (a base of SparkPlane)."""

    namespace: str
    _trackers: dict[str | None, Tracker]
    _lock: threading.Lock

    @property
    def kube(self) -> Kube:  # pragma: no cover - SparkPlane provides it
        raise NotImplementedError

    def get(self, app: AppLike, namespace: str | None = None) -> App:
        """The current state of one application (native or operator)."""
        from sparkplane.usecases import query

        name, ns = self._ref(app, namespace)
        return query.get_app(self.kube, name, ns)

    def tracker(self, namespace: str | None = None) -> Tracker:
        """The shared, started tracker for a namespace (None: all namespaces)."""
        from sparkplane.usecases.tracker import Tracker

        with self._lock:
            if namespace not in self._trackers:
                self._trackers[namespace] = Tracker(self.kube, namespace).start()
            return self._trackers[namespace]

    def wait(
        self,
        app: AppLike,
        until: Until = "finished",
        *,
        timeout: float | None = None,
        on_change: Callable[[App], None] | None = None,
        namespace: str | None = None,
    ) -> App:
        """Block until the app's state satisfies ``until`` (default: finished)."""
        from sparkplane.usecases import waiting

        name, ns = self._ref(app, namespace)
        waiting.condition(until)  # an unknown condition fails before anything is watched
        tracker = self.tracker(ns)
        unsubscribe = (
            tracker.subscribe(
                lambda a: on_change(a) if (a.namespace, a.name) == (ns, name) else None
            )
            if on_change
            else lambda: None
        )
        try:
            if on_change:
                on_change(tracker.get(ns, name) or self.get(name, ns))
            for done in waiting.as_completed(
                tracker, [(ns, name)], until, timeout=timeout, fetch=self.get
            ):
                return done
        except TimeoutExpired as exc:
            now = tracker.get(ns, name)
            state = f" (now {now.state})" if now else ""
            raise TimeoutExpired(
                f"{name} did not reach {until} within {timeout or 0:.0f}s{state}"
            ) from exc
        finally:
            unsubscribe()
        raise TimeoutExpired(f"{name} did not reach {until}")  # pragma: no cover

    def as_completed(
        self,
        apps: Iterable[AppLike],
        until: Until = "finished",
        *,
        timeout: float | None = None,
    ) -> Iterator[App]:
        """Yield each app as it reaches ``until``, in the order they do (one shared watch)."""
        from sparkplane.usecases import waiting

        refs = [(ns, name) for name, ns in (self._ref(a, None) for a in apps)]
        namespaces = {ns for ns, _ in refs}
        tracker = self.tracker(namespaces.pop() if len(namespaces) == 1 else None)
        return waiting.as_completed(tracker, refs, until, timeout=timeout, fetch=self.get)

    def wait_all(
        self,
        apps: Iterable[AppLike],
        until: Until = "finished",
        *,
        timeout: float | None = None,
        on_done: Callable[[App], None] | None = None,
    ) -> builtins.list[App]:
        """Wait for every app; ``on_done`` is called for each as it finishes."""
        done = []
        for app in self.as_completed(apps, until, timeout=timeout):
            if on_done:
                on_done(app)
            done.append(app)
        return done

    def watch(self, namespace: str | None = None, *, timeout: float | None = None) -> Iterator[App]:
        """Yield every app, then an app every time its state changes (until ``timeout``)."""
        from sparkplane.usecases.waiting import watch

        return watch(self.tracker(namespace), namespace, timeout=timeout)

    # -- operations -----------------------------------------------------------------------
    def logs(
        self,
        app: AppLike,
        *,
        executor: int | None = None,
        follow: bool = False,
        since: timedelta | None = None,
        tail: int | None = None,
        namespace: str | None = None,
        notice: Callable[[str], None] = lambda _: None,
    ) -> Iterator[str]:
        """Log lines of the driver (or executor N); ``follow`` streams until the pod ends.

        Once the pod is gone, the lines come from the log archive and ``notice`` says so."""
        from sparkplane.history.logs import live_or_archived
        from sparkplane.usecases.logs import stream_logs

        name, ns = self._ref(app, namespace)
        missing: AppNotFoundError | None = None
        try:
            resolved = self._app(app, namespace)
        except AppNotFoundError as exc:  # gone: the archive may have its logs
            missing = exc

        def live() -> Iterator[str]:
            return stream_logs(
                self.kube,
                resolved,
                executor=executor,
                follow=follow,
                since_seconds=int(since.total_seconds()) if since else None,
                tail_lines=tail,
            )

        return live_or_archived(
            None if missing else live,
            ns,
            name,
            executor,
            tail=tail,
            notice=notice,
            missing=missing,
            kube=self.kube,
        )

    def events(self, app: AppLike, namespace: str | None = None) -> builtins.list[Event]:
        """Every event of the app's objects, oldest first (``Event.raw``: the API's object)."""
        from sparkplane.usecases.events import app_events

        return app_events(self.kube, self._app(app, namespace))

    def ui(self, app: AppLike, *, wait: float = 0.0, namespace: str | None = None) -> UiAddress:
        """The Spark UI address (Ingress, once its load balancer address is known)."""
        from sparkplane.usecases.ui import ui_address

        return ui_address(self.kube, self._app(app, namespace), wait=wait)

    def forward_ui(
        self,
        address: UiAddress,
        *,
        local_port: int = 4040,
        on_ready: Callable[[str], None] = lambda _: None,
        namespace: str | None = None,
    ) -> None:
        """Port-forward a local port to the driver's UI (``ui`` without an Ingress address);
        ``on_ready`` gets the local URL; blocks until the forward ends (Ctrl-C)."""
        from sparkplane.usecases.ui import forward_ui

        ns = namespace or self.namespace
        forward_ui(self.kube, address, ns, local_port=local_port, on_ready=on_ready)

    def kill(
        self,
        app: AppLike,
        *,
        wait: bool = False,
        timeout: float = 120.0,
        namespace: str | None = None,
        progress: Callable[[str], None] = lambda _: None,
    ) -> None:
        """Delete the app's owner (Background); ``wait`` until the GC removed all it owned."""
        resolved = self._app(app, namespace)
        from sparkplane.usecases.kill import kill

        kill(self.kube, resolved, wait=wait, timeout=timeout, progress=progress)

    def gc(
        self,
        *,
        older_than: timedelta | None,
        dry_run: bool = False,
        namespace: str | None = None,
        all_namespaces: bool = False,
        grace: timedelta | None = None,
    ) -> builtins.list[TtlDecision]:
        """Delete finished native drivers past their TTL (per app, else ``older_than``), and
        half-made ones older than ``grace`` (default 5 minutes; ``lifecycle.halfmade``)."""
        ns = None if all_namespaces else namespace or self.namespace
        from sparkplane.model.halfmade import DEFAULT_GRACE
        from sparkplane.usecases.gc import collect_garbage

        return collect_garbage(
            self.kube,
            ns,
            default_ttl=older_than,
            dry_run=dry_run,
            grace=DEFAULT_GRACE if grace is None else grace,
        )

    def _app(self, app: AppLike, namespace: str | None) -> App:
        return app if isinstance(app, App) else self.get(app, namespace)

    def _ref(self, app: AppLike, namespace: str | None) -> tuple[str, str]:
        if not isinstance(app, str):  # an App or a Submitted
            return app.name, app.namespace
        if not app:
            raise AppNotFoundError("no application name given")
        return app, namespace or self.namespace
