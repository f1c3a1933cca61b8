"""``SparkPlane``: the Python API — one object for submitting and operating Spark applications.

Plain synchronous calls (usable from any script, notebook or service, as in the seed article);
whatever runs underneath (threads for concurrent creates, shared watch caches for tracking) stays
underneath. Every method works for native apps and for SparkApplication resources alike::

    from sparkplane import SparkPlane
    sp = SparkPlane.connect(namespace="spark-jobs")
    app = sp.submit("examples/spark-pi.yaml")
    sp.wait(app, timeout=600)
    for line in sp.logs(app): print(line)
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from sparkplane.errors import AppNotFoundError, TimeoutExpired
from sparkplane.kube import Kube, connect
from sparkplane.lifecycle import events as _events
from sparkplane.lifecycle import gc as _gc
from sparkplane.lifecycle import kill as _kill
from sparkplane.lifecycle import logs as _logs
from sparkplane.lifecycle import query, ui
from sparkplane.lifecycle.apps import App, Mode
from sparkplane.lifecycle.archive_logs import live_or_archived
from sparkplane.lifecycle.model import AppPhase, AppState, is_finished
from sparkplane.lifecycle.submit import SubmitOptions, Submitted, submit_native, submit_operator
from sparkplane.lifecycle.tracker import Tracker
from sparkplane.lifecycle.ttl import TtlDecision
from sparkplane.spec import SparkApp, load_manifest

AppLike = App | str
Until = str | AppPhase | Callable[[AppState], bool]


def _condition(until: Until) -> Callable[[AppState], bool]:
    if callable(until):
        return until
    if until in ("finished", "done"):
        return is_finished
    phase = until if isinstance(until, AppPhase) else AppPhase(str(until).capitalize())
    order = [AppPhase.PENDING, AppPhase.RUNNING]
    if phase in order:  # "running" is reached also by an app that already finished
        return lambda s: (
            s.phase == phase
            or is_finished(s)
            or (phase is AppPhase.PENDING and s.phase is AppPhase.RUNNING)
        )
    return lambda s: s.phase == phase


class SparkPlane:
    """A connection to one cluster and a default namespace."""

    def __init__(self, kube: Kube, namespace: str = "default") -> None:
        self.kube = kube
        self.namespace = namespace
        self._trackers: dict[str | None, Tracker] = {}
        self._lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        namespace: str = "default",
        in_cluster: bool = False,
        server: str | None = None,
        token: str | None = None,
        ca_cert: str | None = None,
    ) -> SparkPlane:
        """Connect with a kubeconfig (+context), in-cluster, or an explicit server/token/CA."""
        api = connect(
            kubeconfig=kubeconfig,
            context=context,
            in_cluster=in_cluster,
            server=server,
            token=token,
            ca_cert=ca_cert,
        )
        return cls(Kube(api), namespace)

    def close(self) -> None:
        for tracker in self._trackers.values():
            tracker.stop()
        self.kube.close()

    def __enter__(self) -> SparkPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- submission -----------------------------------------------------------------------
    def load(self, source: SparkApp | str | os.PathLike[str] | dict[str, Any]) -> SparkApp:
        """A spec from a SparkApplication manifest (path or dict), defaulting the namespace."""
        if isinstance(source, SparkApp):
            app = source
        else:
            doc = source if isinstance(source, dict) else yaml.safe_load(Path(source).read_text())
            app = load_manifest(doc)
        if not app.metadata.namespace:
            app = app.model_copy(
                update={"metadata": app.metadata.model_copy(update={"namespace": self.namespace})}
            )
        return app

    def submit(
        self,
        source: SparkApp | str | os.PathLike[str] | dict[str, Any],
        *,
        mode: Mode | str = Mode.NATIVE,
        submission_id: str | None = None,
        ttl: timedelta | None = None,
        staging_server: str | None = None,
        staging_base_dir: str | os.PathLike[str] | None = None,
    ) -> Submitted:
        """Submit natively (driver pod + owned dependents) or as a SparkApplication resource.

        Local files the spec names are uploaded to ``staging_server`` and fetched by
        init-containers (relative paths resolve against ``staging_base_dir``, default: the
        current directory, as with spark-submit).
        """
        app = self.load(source)
        opts = SubmitOptions(
            submission_id=submission_id,
            ttl_seconds=int(ttl.total_seconds()) if ttl is not None else None,
            staging_server=staging_server,
            staging_base_dir=Path(staging_base_dir) if staging_base_dir else None,
        )
        if Mode(mode) is Mode.NATIVE:
            return submit_native(self.kube, app, opts)
        return submit_operator(self.kube, app, opts)

    # -- queries --------------------------------------------------------------------------
    def get(self, app: AppLike, namespace: str | None = None) -> App:
        """The current state of one application (native or operator)."""
        name, ns = self._ref(app, namespace)
        return query.get_app(self.kube, name, ns)

    def list(self, namespace: str | None = None, *, all_namespaces: bool = False) -> list[App]:
        """Applications of a namespace (default: this client's) or of all namespaces."""
        return query.list_apps(self.kube, None if all_namespaces else namespace or self.namespace)

    def tracker(self, namespace: str | None = None) -> Tracker:
        """The shared, started tracker for a namespace (None: all namespaces)."""
        with self._lock:
            if namespace not in self._trackers:
                self._trackers[namespace] = Tracker(self.kube, namespace).start()
            return self._trackers[namespace]

    def wait(
        self,
        app: AppLike | Submitted,
        until: Until = "finished",
        *,
        timeout: float | None = None,
        on_change: Callable[[App], None] | None = None,
    ) -> App:
        """Block until the app's state satisfies ``until`` (default: finished)."""
        name, ns = self._ref(app, None)
        tracker = self.tracker(ns)
        wanted = _condition(until)
        changed = threading.Condition()

        def notify(a: App) -> None:
            if a.namespace == ns and a.name == name:
                if on_change:
                    on_change(a)
                with changed:
                    changed.notify_all()

        unsubscribe = tracker.subscribe(notify)
        try:
            current = tracker.get(ns, name) or self.get(name, ns)
            if on_change:
                on_change(current)
            with changed:
                ok = changed.wait_for(
                    lambda: (c := tracker.get(ns, name)) is not None and wanted(c.state),
                    timeout=timeout,
                )
            last = tracker.get(ns, name) or current
            if not ok:
                raise TimeoutExpired(
                    f"{name} did not reach {until} within {timeout:.0f}s (now {last.state})"
                    if timeout is not None
                    else f"{name} did not reach {until}"
                )
            return last
        finally:
            unsubscribe()

    def watch(self, namespace: str | None = None, *, timeout: float | None = None) -> Iterator[App]:
        """Yield an app every time its state changes (until ``timeout`` seconds pass)."""
        import queue
        import time

        tracker = self.tracker(namespace)
        changes: queue.Queue[App] = queue.Queue()
        unsubscribe = tracker.subscribe(changes.put)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            yield from tracker.apps(namespace)
            while deadline is None or time.monotonic() < deadline:
                try:
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    yield changes.get(timeout=min(left, 1.0) if left is not None else 1.0)
                except queue.Empty:
                    continue
        finally:
            unsubscribe()

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
        name, ns = self._ref(app, namespace)
        missing: AppNotFoundError | None = None
        try:
            resolved = app if isinstance(app, App) else self.get(name, ns)
        except AppNotFoundError as exc:  # gone: the archive may have its logs
            missing = exc

        def live() -> Iterator[str]:
            return _logs.stream_logs(
                self.kube,
                resolved,
                executor=executor,
                follow=follow,
                since_seconds=int(since.total_seconds()) if since else None,
                tail_lines=tail,
            )

        return live_or_archived(
            None if missing else live, ns, name, executor, tail=tail, notice=notice, missing=missing
        )

    def events(self, app: AppLike, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        """Every event of the app's objects, oldest first."""
        resolved = app if isinstance(app, App) else self.get(app, namespace)
        return _events.app_events(self.kube, resolved)

    def ui(self, app: AppLike, *, wait: float = 0.0, namespace: str | None = None) -> ui.UiAddress:
        """The Spark UI address (Ingress, once its load balancer address is known)."""
        resolved = app if isinstance(app, App) else self.get(app, namespace)
        return ui.ui_address(self.kube, resolved, wait=wait)

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
        resolved = app if isinstance(app, App) else self.get(app, namespace)
        _kill.kill(self.kube, resolved, wait=wait, timeout=timeout, progress=progress)

    def gc(
        self,
        *,
        older_than: timedelta | None,
        dry_run: bool = False,
        namespace: str | None = None,
        all_namespaces: bool = False,
    ) -> builtins.list[TtlDecision]:
        """Delete finished native drivers past their TTL (per app, else ``older_than``)."""
        ns = None if all_namespaces else namespace or self.namespace
        return _gc.collect_garbage(self.kube, ns, default_ttl=older_than, dry_run=dry_run)

    def _ref(self, app: AppLike | Submitted, namespace: str | None) -> tuple[str, str]:
        if isinstance(app, App | Submitted):
            return app.name, app.namespace
        if not app:
            raise AppNotFoundError("no application name given")
        return app, namespace or self.namespace
