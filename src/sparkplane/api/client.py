"""``SparkPlane``: the Python API — the use-cases of sparkplane, one method each.

The CLI is a thin shell over this class (it parses and prints; every command calls one method
here), so everything the CLI does the API does, under the same names: ``submit`` from a spec,
spark-submit arguments or a template directory (with or without staging), ``render``, ``get``,
``list``, ``describe``, ``wait``, ``as_completed``/``wait_all``, ``watch``, ``logs``, ``ui``,
``events``, ``suspend``/``resume``, ``kill``, ``gc``. Calls are synchronous and never run
``asyncio.run``, so they work in scripts, threads and inside a running event loop (a notebook
cell); async programs use :class:`sparkplane.AsyncSparkPlane`, the same methods awaited on
the same core::

    from sparkplane import SparkPlane
    with SparkPlane.connect() as sp:          # namespace: the kubeconfig context's
        app = sp.submit("examples/spark-pi.yaml")
        sp.wait(app, timeout=600)
"""

from __future__ import annotations

import builtins
import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from sparkplane.errors import AppNotFoundError, ConfigError, TimeoutExpired
from sparkplane.model.apps import App, Description, Mode
from sparkplane.settings import Settings
from sparkplane.usecases import connection

if TYPE_CHECKING:  # the rest loads on first use: `sparkplane get apps` needs none of it
    from sparkplane.kube import Kube
    from sparkplane.model.phase import Event
    from sparkplane.model.progress import SparkProgress
    from sparkplane.model.session import SessionLimit
    from sparkplane.model.ttl import TtlDecision
    from sparkplane.security.rbac import RbacObject
    from sparkplane.security.rules import Identity
    from sparkplane.spec import SparkApp
    from sparkplane.usecases.create import SubmitOptions, Submitted
    from sparkplane.usecases.history import HistoryDeployed
    from sparkplane.usecases.kubeconfig import Minted
    from sparkplane.usecases.session import Attached, SessionInfo
    from sparkplane.usecases.sources import PathLike, Source
    from sparkplane.usecases.suspend import Suspension
    from sparkplane.usecases.tracker import Tracker
    from sparkplane.usecases.ui import UiAddress
    from sparkplane.usecases.waiting import Until

SpecSource = Union["SparkApp", "PathLike", Mapping[str, Any]]
#: An application: as found (:class:`App`), as submitted, or by name.
AppLike = Union[App, "Submitted", str]
Obj = dict[str, Any]


class SparkPlane:
    """A connection to one cluster and a default namespace (the context's, as kubectl)."""

    def __init__(
        self,
        kube: Kube | None,
        namespace: str = "default",
        conn: connection.Connection | None = None,
        settings: Settings | None = None,
    ) -> None:
        self._kube = kube
        self.namespace = namespace
        self.connection = conn
        #: this process's settings (log archive, event-log root, cache, upload token), merged
        #: once here from the environment unless given (:class:`sparkplane.settings.Settings`)
        self.settings = settings if settings is not None else Settings.load()
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
        settings: Settings | None = None,
    ) -> SparkPlane:
        """Connect with a kubeconfig (+context), in-cluster, an explicit server/token/CA, or
        ``APISERVER``/``TOKEN``/``CACERT``; ``namespace`` defaults to the context's; ``settings``
        default to :meth:`Settings.load` (the environment)."""
        conn = connection.resolve(
            kubeconfig=kubeconfig,
            context=context,
            server=server,
            token=token,
            ca_cert=ca_cert,
            in_cluster=in_cluster,
        )
        return cls(conn.open(), namespace or conn.default_namespace(), conn, settings)

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
        """Resolve one input (spec, spark-submit ``argv`` or ``template`` dir) into a Source,
        with the files of the settings' ``SPARK_CONF_DIR`` that spark-submit would ship and
        ``warnings`` for what spark-submit accepts and ignores."""
        from sparkplane.usecases.sources import read_source, with_conf_dir

        source = read_source(
            spec=spec,
            argv=argv,
            template=template,
            values=values,
            sets=set,
            namespace=namespace or self.namespace,
            explicit_namespace=namespace is not None,
            submission_id=submission_id,
        )
        return with_conf_dir(source, self.settings.spark_conf_dir)

    def load(self, spec: SpecSource) -> SparkApp:
        """A spec from a SparkApplication manifest (path or dict), in this namespace if unset."""
        app = self.source(spec).app
        assert app is not None
        return app

    def render(
        self, source: Source | SpecSource, *, mode: Mode | str = Mode.NATIVE, **options: Any
    ) -> builtins.list[Obj]:
        """The exact manifests ``submit`` would create; nothing is created."""
        from sparkplane.usecases import submit as submission
        from sparkplane.usecases.sources import Source

        src = source if isinstance(source, Source) else self.source(source)
        opts = _options({**self._python_options(), "conf_files": src.conf_files, **options})
        return submission.render_source(src, Mode(mode), opts, self._kube)

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
        queue: str | None = None,
        staging_server: str | None = None,
        staging_internal_server: str | None = None,
        staging_ca_file: PathLike | None = None,
        staging_base_dir: PathLike | None = None,
        staging_token: str | None = None,
    ) -> Submitted:
        """Submit natively (driver pod + owned dependents), as a SparkApplication
        (``mode="operator"``: spark.apache.org; ``"kubeflow"``: sparkoperator.k8s.io), from a
        spec, spark-submit ``argv`` or a ``template`` directory. Local files the spec names
        are uploaded to ``staging_server`` (relative paths resolve against
        ``staging_base_dir``, default: the current directory, as with spark-submit), with
        ``staging_token`` (default: the settings' ``SPARKPLANE_STAGING_TOKEN``, else the
        connection's bearer token). A Python driver falls back to the settings'
        ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` as spark-submit does. ``queue``: the
        Kueue LocalQueue the app waits in (label ``kueue.x-k8s.io/queue-name``; natively, the
        LocalQueue is checked first when this client may read it: docs/queues.md).
        """
        from sparkplane.usecases import submit as submission
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
                "queue": queue,
                "staging_server": staging_server,
                "staging_internal_server": staging_internal_server,
                "staging_ca_file": Path(staging_ca_file) if staging_ca_file else None,
                "staging_base_dir": Path(staging_base_dir) if staging_base_dir else None,
                "staging_token": staging_token or self.settings.staging_token or None,
                **self._python_options(),
                "conf_files": src.conf_files,
            }
        )
        kube = self._kube_for(src)
        try:
            return submission.submit_source(kube, src, Mode(mode), opts)
        finally:
            if kube is not self.kube:
                kube.close()

    def _python_options(self) -> dict[str, str | None]:
        """The submitter's ``PYSPARK_PYTHON``/``PYSPARK_DRIVER_PYTHON`` (from the settings), which
        a Python driver falls back to as with spark-submit."""
        return {
            "pyspark_python": self.settings.pyspark_python or None,
            "pyspark_driver_python": self.settings.pyspark_driver_python or None,
        }

    def _kube_for(self, src: Source) -> Kube:
        """spark-submit's ``--master``: this connection, or the context for that server."""
        conn = self.connection or connection.Connection()
        other = connection.for_master(conn, self.kube.api.configuration.host, src.master)
        return other.open() if other is not None else self.kube

    # -- queries --------------------------------------------------------------------------
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
        from sparkplane.usecases import query

        return query.list_apps(self.kube, ns, selector=selector)

    def describe(self, app: AppLike, namespace: str | None = None) -> Description:
        """The app, the objects it owns and its events (``sparkplane describe``)."""
        from sparkplane.usecases.events import describe

        return describe(self.kube, self._app(app, namespace))

    # -- administration -------------------------------------------------------------------
    def tenant_setup(
        self,
        namespace: str | None = None,
        *,
        driver_service_account: str | None = None,
        executor_service_accounts: Sequence[str] = (),
        allow: Sequence[str] = (),
        secrets: Sequence[str] = (),
        executor_volumes: Sequence[str] = (),
        quota: Mapping[str, str] | None = None,
        pod_security: str | None = None,
        apply: bool = True,
    ) -> builtins.list[Obj]:
        """Hold a namespace to the tenant pod policy (admission policies, labels, the client
        and driver roles, quotas; docs/security.md). ``apply=False`` only renders them."""
        from sparkplane.security.admission import DEFAULT_QUOTA, TenantSettings, tenant_objects

        settings = TenantSettings(
            namespace=namespace or self.namespace,
            executor_service_accounts=tuple(executor_service_accounts),
            allow=tuple(allow),
            secrets=tuple(secrets),
            executor_volumes=tuple(executor_volumes),
            quota=dict(DEFAULT_QUOTA if quota is None else quota),
            pod_security=pod_security,
            **(
                {"driver_service_account": driver_service_account} if driver_service_account else {}
            ),
        )
        if not apply:
            return tenant_objects(settings)
        from sparkplane.usecases import tenant

        return tenant.setup(self.kube, settings)

    # -- operations on submitted applications ----------------------------------------------

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
        from sparkplane.usecases.logs import app_logs

        name, ns = self._ref(app, namespace)
        return app_logs(
            self.kube,
            name,
            ns,
            settings=self.settings,
            app=app if isinstance(app, App) else None,
            executor=executor,
            follow=follow,
            since_seconds=int(since.total_seconds()) if since else None,
            tail=tail,
            notice=notice,
        )

    def events(self, app: AppLike, namespace: str | None = None) -> builtins.list[Event]:
        """Every event of the app's objects, oldest first (``Event.raw``: the API's object)."""
        from sparkplane.usecases.events import app_events

        return app_events(self.kube, self._app(app, namespace))

    def ui(
        self,
        app: AppLike,
        *,
        wait: float = 0.0,
        namespace: str | None = None,
        history: bool = True,
    ) -> UiAddress:
        """Where the app's Spark UI is: its Ingress (once the load balancer has an address),
        else its driver pod for :meth:`forward_ui`; a finished (or deleted) app's page in the
        namespace's History Server when there is one (``via="history"``; not with
        ``history=False``). ``sparkplane ui APP`` prints or forwards exactly this."""
        from sparkplane.usecases.history import page_of_finished
        from sparkplane.usecases.ui import ui_address

        name, ns = self._ref(app, namespace)
        if history and (page := page_of_finished(self.kube, ns, name, self.settings)) is not None:
            return page
        return ui_address(self.kube, self._app(app, namespace), wait=wait)

    def forward_ui(
        self,
        address: UiAddress,
        *,
        local_port: int = 4040,
        on_ready: Callable[[str], None] = lambda _: None,
        namespace: str | None = None,
    ) -> None:
        """Port-forward a local port to ``address`` (``ui`` without an Ingress address: the
        driver's UI or the History Server page);
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

        kill(
            self.kube,
            resolved,
            wait=wait,
            timeout=timeout,
            progress=progress,
            settings=self.settings,
        )

    def suspend(self, app: AppLike, *, namespace: str | None = None) -> Suspension:
        """Suspend an operator-mode app: set ``spec.suspend`` (the operator releases its driver
        and executors, logs archived, and holds it ``Suspended``). A native app is refused
        (:class:`~sparkplane.errors.NotSuspendableError`, exit 12)."""
        from sparkplane.usecases.suspend import set_suspend

        name, ns = self._ref(app, namespace)
        return set_suspend(self.kube, name, ns, True)

    def resume(self, app: AppLike, *, namespace: str | None = None) -> Suspension:
        """Resume a suspended operator-mode app: clear ``spec.suspend`` (a new attempt)."""
        from sparkplane.usecases.suspend import set_suspend

        name, ns = self._ref(app, namespace)
        return set_suspend(self.kube, name, ns, False)

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
            settings=self.settings,
        )

    # -- Spark Connect sessions ---------------------------------------------------------------
    @contextlib.contextmanager
    def session(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        keep: bool = False,
        timeout: float = 300.0,
        on_progress: Callable[[str], None] = lambda _: None,
        **options: Any,
    ) -> Iterator[Any]:
        """A ready Spark Connect ``SparkSession`` on a new session's server::

            with sp.session(executors=2, idle_timeout=600) as spark:
                spark.range(10).count()

        ``options``: :class:`~sparkplane.usecases.session.SessionOptions` (image, executors,
        driver_memory, executor_memory, driver_cores, executor_cores, conf, idle_timeout,
        max_lifetime, service_account; expose="ingress" with host, tls_secret, ingress_class,
        ingress_port: reached from outside through an Ingress with TLS, docs/sessions.md).
        Leaving the block closes the client and the
        port-forward and deletes the server (``keep=True``: the server stays, for
        :meth:`session_attach` by ``name``; its idle timeout still applies)."""
        from sparkplane.usecases import session as sessions

        ns = namespace or self.namespace
        made = self.session_create(name, namespace=ns, wait=False, **options)
        try:
            attached = sessions.attach(
                self.kube,
                made.name,
                ns,
                settings=self.settings,
                timeout=timeout,
                progress=on_progress,
            )
            try:
                yield attached.spark()
            finally:
                attached.close()
        finally:
            if not keep:
                sessions.delete(self.kube, made.name, ns, settings=self.settings, wait=False)

    def session_create(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        wait: bool = True,
        timeout: float = 300.0,
        on_progress: Callable[[str], None] = lambda _: None,
        **options: Any,
    ) -> SessionInfo:
        """Start a session's Spark Connect server (``options`` as :meth:`session`); with
        ``wait``, return once it serves gRPC. Its token is kept for this user on this machine
        (``session_attach`` by name from any process)."""
        from sparkplane.usecases import session as sessions

        ns = namespace or self.namespace
        made = sessions.create(
            self.kube, sessions.SessionOptions(name=name, **options), ns, settings=self.settings
        )
        if wait:
            self.session_attach(
                made.name, namespace=ns, timeout=timeout, on_progress=on_progress
            ).close()
            return self.session_get(made.name, namespace=ns)
        return made

    def session_attach(
        self,
        name: str,
        *,
        namespace: str | None = None,
        token: str | None = None,
        timeout: float = 300.0,
        on_progress: Callable[[str], None] = lambda _: None,
    ) -> Attached:
        """Reach a running session by name: a port-forward kept open until ``close()`` (or the
        ``with`` block ends), ``.spark()`` its SparkSession, ``.url()`` its ``sc://`` URL."""
        from sparkplane.usecases import session as sessions

        return sessions.attach(
            self.kube,
            name,
            namespace or self.namespace,
            settings=self.settings,
            token=token,
            timeout=timeout,
            progress=on_progress,
        )

    def session_get(self, name: str, *, namespace: str | None = None) -> SessionInfo:
        """A session: owner, age, idle time, limits, executors, how to open its UI."""
        from sparkplane.usecases import session as sessions

        return sessions.info(
            self.kube, sessions.driver(self.kube, name, namespace or self.namespace)
        )

    def session_list(
        self, namespace: str | None = None, *, all_namespaces: bool = False
    ) -> builtins.list[SessionInfo]:
        """Every live session of the namespace (or of all)."""
        from sparkplane.usecases import session as sessions

        return sessions.list_sessions(
            self.kube, None if all_namespaces else namespace or self.namespace
        )

    def session_limit(self, namespace: str | None = None) -> SessionLimit | None:
        """The namespace's cap on concurrent sessions (``sessions``, and the
        ResourceQuota ``quota`` declaring it; None without one, or when quotas are unreadable)."""
        from sparkplane.usecases import session as sessions

        return sessions.namespace_limit(self.kube, namespace or self.namespace)

    def session_ui(self, name: str, *, namespace: str | None = None) -> SparkProgress:
        """A running session's jobs and stages, from its driver's REST API (``url`` is None:
        :meth:`Attached.ui <sparkplane.usecases.session.Attached.ui>` also forwards the UI,
        ``sparkplane ui APP`` opens it)."""
        from sparkplane.usecases import session as sessions

        pod = sessions.driver(self.kube, name, namespace or self.namespace)
        return sessions.progress(self.kube, pod["metadata"]["name"], pod["metadata"]["namespace"])

    def session_logs(
        self,
        name: str,
        *,
        namespace: str | None = None,
        follow: bool = False,
        tail: int | None = None,
    ) -> Iterator[str]:
        """The session's driver log, as :meth:`logs`: live while it runs (``follow``: until
        it ends), then from the log archive (its newest archived run of that name)."""
        from sparkplane.usecases import session as sessions

        ns = namespace or self.namespace
        return self.logs(
            sessions.app_of(self.kube, name, ns, settings=self.settings),
            namespace=ns,
            follow=follow,
            tail=tail,
        )

    def session_delete(
        self, name: str, *, namespace: str | None = None, wait: bool = False
    ) -> None:
        """End a session: its server, executors and token Secret (logs archived first)."""
        from sparkplane.usecases import session as sessions

        sessions.delete(
            self.kube, name, namespace or self.namespace, settings=self.settings, wait=wait
        )

    def _app(self, app: AppLike, namespace: str | None) -> App:
        return app if isinstance(app, App) else self.get(app, namespace)

    def _ref(self, app: AppLike, namespace: str | None) -> tuple[str, str]:
        if not isinstance(app, str):  # an App or a Submitted
            return app.name, app.namespace
        if not app:
            raise AppNotFoundError("no application name given")
        return app, namespace or self.namespace

    # -- the History Server (what remains after the driver) ---------------------------------

    def history_up(
        self,
        *,
        host_path: str | None = None,
        claim: str | None = None,
        log_dir: str | None = None,
        default: bool = True,
        retention: timedelta = timedelta(days=7),
        image: str | None = None,
        wait: float = 0.0,
        namespace: str | None = None,
        s3_endpoint: str | None = None,
        s3_secret: str | None = None,
    ) -> HistoryDeployed:
        """Deploy (or update) the namespace's Spark History Server and its event-log store:
        a node path (default: the namespace's own directory), a ReadWriteMany ``claim`` or your
        own ``log_dir`` URI (``s3a://``: with ``s3_endpoint`` for a non-AWS store and
        ``s3_secret``, a Secret holding ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``);
        ``default``: event logs for every app of the namespace. With ``wait``, returns once a
        server pod is ready, named in ``.pod`` (``sparkplane history up``)."""
        from sparkplane.usecases import history
        from sparkplane.version import SPARK_IMAGE

        ns = namespace or self.namespace
        store = history.store_for(
            ns,
            host_path=host_path,
            claim=claim,
            log_dir=log_dir,
            default=default,
            retention=retention,
            s3_endpoint=s3_endpoint,
            s3_secret=s3_secret,
        )
        deployed = history.up(self.kube, ns, store, image or SPARK_IMAGE)
        if wait:
            return replace(deployed, pod=history.ready_pod(self.kube, ns, wait))
        return deployed

    def history_ensure(self, namespace: str | None = None) -> HistoryDeployed | None:
        """Deploy the History Server with the defaults if the namespace has none (bare
        ``sparkplane history``); None when it already had one."""
        from sparkplane.usecases import history

        return history.ensure(self.kube, namespace or self.namespace)

    def history_down(self, namespace: str | None = None) -> None:
        """Remove the History Server and the event-log settings (the event logs stay)."""
        from sparkplane.usecases import history

        history.down(self.kube, namespace or self.namespace)

    def history_conf(self, namespace: str | None = None) -> dict[str, str]:
        """The Spark conf that gives one app event logs (``sparkplane history conf``)."""
        from sparkplane.usecases import history

        return history.conf(self.kube, namespace or self.namespace)

    def history_address(
        self, app_id: str | None = None, *, wait: float = 0.0, namespace: str | None = None
    ) -> UiAddress:
        """The History Server's ready pod and port (``app_id``: that app's page), for
        :meth:`forward_ui` (``sparkplane history open``)."""
        from sparkplane.usecases import history

        return history.address(self.kube, namespace or self.namespace, app_id, wait=wait)

    # -- least-privilege access ---------------------------------------------------------------

    def rbac(
        self,
        identity: Identity | str,
        namespace: str | None = None,
        *,
        service_account: str | None = None,
        target_namespaces: Sequence[str] = (),
        cluster_wide: bool = False,
        apply: bool = False,
        progress: Callable[[str], None] = lambda _: None,
    ) -> builtins.list[RbacObject]:
        """The minimal RBAC of an identity (``client``, ``driver``, ``operator``, ``staging``,
        ``gc``...), every rule saying why it exists; ``apply``: server-side applied too
        (``sparkplane rbac``; ``progress`` hears each object applied). Returns the objects, each
        with its rules' reasons (:func:`sparkplane.security.rbac.to_yaml` prints them)."""
        from sparkplane.usecases import access

        return access.rbac(
            self._kube if apply else None,
            identity,
            namespace or self.namespace,
            service_account=service_account,
            target_namespaces=target_namespaces,
            cluster_wide=cluster_wide,
            progress=progress,
        )

    def kubeconfig(
        self,
        service_account: str,
        namespace: str | None = None,
        *,
        duration: timedelta = timedelta(hours=1),
        cluster_name: str = "sparkplane",
        force: bool = False,
    ) -> Minted:
        """A kubeconfig for a service account: a TokenRequest token (10 min to 7 days unless
        ``force``), the CA embedded (``sparkplane kubeconfig``); ``.text()`` is the file."""
        from sparkplane.usecases.kubeconfig import check_duration, mint_kubeconfig

        check_duration(duration, force=force)
        return mint_kubeconfig(
            self.kube,
            service_account,
            namespace or self.namespace,
            duration=duration,
            cluster_name=cluster_name,
            force=force,
        )

    # -- the operator -------------------------------------------------------------------------

    def install_operator(
        self,
        *,
        operator: bool = False,
        watch: Sequence[str] = (),
        operator_namespace: str | None = None,
        image: str | None = None,
    ) -> builtins.list[str]:
        """Server-side apply the SparkApplication and SparkCluster CRDs (and, with ``operator``,
        the operator: cluster-wide, or for the ``watch`` namespaces) (``sparkplane operator
        install``); ``Kind name`` of everything applied."""
        from sparkplane.operator.deploy import manifests as deploy
        from sparkplane.usecases.operator_install import install

        return install(
            self.kube,
            operator=operator,
            watch=watch,
            operator_namespace=operator_namespace or deploy.DEFAULT_NAMESPACE,
            image=image or deploy.DEFAULT_IMAGE,
        )


def _options(options: Mapping[str, Any]) -> SubmitOptions:
    from sparkplane.usecases.create import SubmitOptions

    return SubmitOptions(**{k: v for k, v in options.items() if v is not None})
