"""``SparkPlane``: the Python API — the use-cases of sparkplane, one method each.

The CLI is a thin shell over this class (it parses and prints; every command calls one method
here), so everything the CLI does the API does, under the same names: ``submit`` from a spec,
spark-submit arguments or a template directory (with or without staging), ``render``, ``get``,
``list``, ``describe``, ``wait``, ``as_completed``/``wait_all``, ``watch``, ``logs``, ``ui``,
``events``, ``kill``, ``gc``. Calls are synchronous and never run ``asyncio.run``, so they work
in scripts, threads and inside a running event loop (a notebook cell); async programs use
:class:`sparkplane.AsyncSparkPlane`, the same methods awaited on the same core::

    from sparkplane import SparkPlane
    with SparkPlane.connect() as sp:          # namespace: the kubeconfig context's
        app = sp.submit("examples/spark-pi.yaml")
        sp.wait(app, timeout=600)
"""

from __future__ import annotations

import builtins
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from sparkplane.errors import AppNotFoundError, ConfigError, TimeoutExpired
from sparkplane.lifecycle.apps import App, Mode
from sparkplane.usecases import connection

if TYPE_CHECKING:  # the rest loads on first use: `sparkplane get apps` needs none of it
    from sparkplane.kube import Kube
    from sparkplane.lifecycle.submit import SubmitOptions, Submitted
    from sparkplane.lifecycle.tracker import Tracker
    from sparkplane.lifecycle.ttl import TtlDecision
    from sparkplane.lifecycle.ui import UiAddress
    from sparkplane.spec import SparkApp
    from sparkplane.usecases.sources import PathLike, Source
    from sparkplane.usecases.waiting import Until

AppLike = Union[App, "Submitted", str]
SpecSource = Union["SparkApp", "PathLike", Mapping[str, Any]]
Obj = dict[str, Any]


class SparkPlane:
    """A connection to one cluster and a default namespace (the context's, as kubectl)."""

    def __init__(
        self,
        kube: Kube | None,
        namespace: str = "default",
        conn: connection.Connection | None = None,
    ) -> None:
        self._kube = kube
        self.namespace = namespace
        self.connection = conn
        self._trackers: dict[str | None, Tracker] = {}
        self._lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        *,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        namespace: str | None = None,
        in_cluster: bool = False,
        server: str | None = None,
        token: str | None = None,
        ca_cert: str | None = None,
    ) -> SparkPlane:
        """Connect with a kubeconfig (+context), in-cluster, an explicit server/token/CA, or
        ``APISERVER``/``TOKEN``/``CACERT``; ``namespace`` defaults to the context's."""
        conn = connection.resolve(
            kubeconfig=kubeconfig,
            context=context,
            server=server,
            token=token,
            ca_cert=ca_cert,
            in_cluster=in_cluster,
        )
        return cls(conn.open(), namespace or conn.default_namespace(), conn)

    @classmethod
    def offline(cls, namespace: str = "default") -> SparkPlane:
        """A client without a cluster: ``source`` and ``render`` work, the rest raise
        ConfigError (what ``sparkplane render`` uses when no kubeconfig is found)."""
        return cls(None, namespace)

    @property
    def kube(self) -> Kube:
        if self._kube is None:
            raise ConfigError("not connected to a cluster: use SparkPlane.connect()")
        return self._kube

    def close(self) -> None:
        for tracker in self._trackers.values():
            tracker.stop()
        if self._kube is not None:
            self._kube.close()

    def __enter__(self) -> SparkPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- submission -----------------------------------------------------------------------
    def source(
        self,
        spec: SpecSource | None = None,
        *,
        argv: Sequence[str] | None = None,
        template: PathLike | None = None,
        values: PathLike | None = None,
        set: Mapping[str, str] | Sequence[str] = (),
        namespace: str | None = None,
        submission_id: str | None = None,
    ) -> Source:
        """Resolve one input (spec, spark-submit ``argv`` or ``template`` dir) into a Source."""
        from sparkplane.usecases.sources import read_source

        return read_source(
            spec=spec,
            argv=argv,
            template=template,
            values=values,
            sets=set,
            namespace=namespace or self.namespace,
            explicit_namespace=namespace is not None,
            submission_id=submission_id,
        )

    def load(self, spec: SpecSource) -> SparkApp:
        """A spec from a SparkApplication manifest (path or dict), in this namespace if unset."""
        app = self.source(spec).app
        assert app is not None
        return app

    def render(
        self, source: Source | SpecSource, *, mode: Mode | str = Mode.NATIVE, **options: Any
    ) -> builtins.list[Obj]:
        """The exact manifests ``submit`` would create; nothing is created."""
        from sparkplane.usecases import submission
        from sparkplane.usecases.sources import Source

        src = source if isinstance(source, Source) else self.source(source)
        opts = _options(options)
        server = self._kube.api.configuration.host if self._kube is not None else None
        return submission.render_source(src, Mode(mode), opts, server)

    def submit(
        self,
        source: Source | SpecSource | None = None,
        *,
        argv: Sequence[str] | None = None,
        template: PathLike | None = None,
        values: PathLike | None = None,
        set: Mapping[str, str] | Sequence[str] = (),
        namespace: str | None = None,
        mode: Mode | str = Mode.NATIVE,
        submission_id: str | None = None,
        ttl: timedelta | None = None,
        staging_server: str | None = None,
        staging_internal_server: str | None = None,
        staging_ca_file: PathLike | None = None,
        staging_base_dir: PathLike | None = None,
    ) -> Submitted:
        """Submit natively (driver pod + owned dependents), as a SparkApplication
        (``mode="operator"``: spark.apache.org; ``"kubeflow"``: sparkoperator.k8s.io), from a
        spec, spark-submit ``argv`` or a ``template`` directory. Local files the spec names
        are uploaded to ``staging_server`` (relative paths resolve against
        ``staging_base_dir``, default: the current directory, as with spark-submit).
        """
        from sparkplane.usecases import submission
        from sparkplane.usecases.sources import Source

        src = (
            source
            if isinstance(source, Source)
            else self.source(
                source,
                argv=argv,
                template=template,
                values=values,
                set=set,
                namespace=namespace,
                submission_id=submission_id,
            )
        )
        opts = _options(
            {
                "submission_id": submission_id,
                "ttl_seconds": int(ttl.total_seconds()) if ttl is not None else None,
                "staging_server": staging_server,
                "staging_internal_server": staging_internal_server,
                "staging_ca_file": Path(staging_ca_file) if staging_ca_file else None,
                "staging_base_dir": Path(staging_base_dir) if staging_base_dir else None,
            }
        )
        kube = self._kube_for(src)
        try:
            return submission.submit_source(kube, src, Mode(mode), opts)
        finally:
            if kube is not self.kube:
                kube.close()

    def _kube_for(self, src: Source) -> Kube:
        """spark-submit's ``--master``: this connection, or the context for that server."""
        conn = self.connection or connection.Connection()
        other = connection.for_master(conn, self.kube.api.configuration.host, src.master)
        return other.open() if other is not None else self.kube

    # -- queries --------------------------------------------------------------------------
    def get(self, app: AppLike, namespace: str | None = None) -> App:
        """The current state of one application (native or operator)."""
        name, ns = self._ref(app, namespace)
        from sparkplane.lifecycle import query

        return query.get_app(self.kube, name, ns)

    def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        selector: str | None = None,
    ) -> builtins.list[App]:
        """Applications of a namespace (default: this client's) or of all namespaces;
        ``selector`` is a label selector (``-l``) on the driver pod or SparkApplication."""
        ns = None if all_namespaces else namespace or self.namespace
        from sparkplane.lifecycle import query

        return query.list_apps(self.kube, ns, selector=selector)

    def describe(self, app: AppLike, namespace: str | None = None) -> dict[str, Any]:
        """The app's summary, the objects it owns and its events (``sparkplane describe``)."""
        from sparkplane.lifecycle import events, kill

        resolved = app if isinstance(app, App) else self.get(app, namespace)
        return {
            "app": resolved.summary(),
            "objects": kill.remaining_objects(
                self.kube, resolved.namespace, {resolved.owner.get("metadata", {}).get("uid", "")}
            ),
            "events": events.app_events(self.kube, resolved),
        }

    def tracker(self, namespace: str | None = None) -> Tracker:
        """The shared, started tracker for a namespace (None: all namespaces)."""
        from sparkplane.lifecycle.tracker import Tracker

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
    ) -> App:
        """Block until the app's state satisfies ``until`` (default: finished)."""
        from sparkplane.usecases import waiting

        name, ns = self._ref(app, None)
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
        tracker = self.tracker(namespace)
        changes: queue.Queue[App] = queue.Queue()
        unsubscribe = tracker.subscribe(changes.put)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            yield from tracker.apps(namespace)
            while deadline is None or time.monotonic() < deadline:
                left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
                try:
                    yield changes.get(timeout=left)
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
    ) -> Iterator[str]:
        """Log lines of the driver (or executor N); ``follow`` streams until the pod ends."""
        from sparkplane.lifecycle.logs import stream_logs

        return stream_logs(
            self.kube,
            self._app(app, namespace),
            executor=executor,
            follow=follow,
            since_seconds=int(since.total_seconds()) if since else None,
            tail_lines=tail,
        )

    def events(self, app: AppLike, namespace: str | None = None) -> builtins.list[Obj]:
        """Every event of the app's objects, oldest first."""
        from sparkplane.lifecycle.events import app_events

        return app_events(self.kube, self._app(app, namespace))

    def ui(self, app: AppLike, *, wait: float = 0.0, namespace: str | None = None) -> UiAddress:
        """The Spark UI address (Ingress, once its load balancer address is known)."""
        from sparkplane.lifecycle.ui import ui_address

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
        from sparkplane.kube.portforward import forward

        if not address.pod:
            raise AppNotFoundError("no driver pod to port-forward to")
        ready, bound = threading.Event(), builtins.list[int]()
        thread = threading.Thread(
            target=forward,
            args=(self.kube, address.pod, namespace or self.namespace, address.port),
            kwargs={"local_port": local_port, "ready": ready, "bound": bound},
            daemon=True,
        )
        thread.start()
        ready.wait(10)
        on_ready(f"http://127.0.0.1:{bound[0] if bound else local_port}")
        while thread.is_alive():
            thread.join(1)

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
        from sparkplane.lifecycle.kill import kill

        kill(self.kube, resolved, wait=wait, timeout=timeout, progress=progress)

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
        from sparkplane.lifecycle.gc import collect_garbage

        return collect_garbage(self.kube, ns, default_ttl=older_than, dry_run=dry_run)

    def _app(self, app: AppLike, namespace: str | None) -> App:
        return app if isinstance(app, App) else self.get(app, namespace)

    def _ref(self, app: AppLike, namespace: str | None) -> tuple[str, str]:
        if not isinstance(app, str):  # an App or a Submitted
            return app.name, app.namespace
        if not app:
            raise AppNotFoundError("no application name given")
        return app, namespace or self.namespace


def _options(options: Mapping[str, Any]) -> SubmitOptions:
    from sparkplane.lifecycle.submit import SubmitOptions

    return SubmitOptions(**{k: v for k, v in options.items() if v is not None})
