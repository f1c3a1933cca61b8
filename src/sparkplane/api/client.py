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
import threading
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from sparkplane.api.client_ops import AppLike, AppOperations
from sparkplane.errors import ConfigError
from sparkplane.model.apps import App, Description, Mode
from sparkplane.usecases import connection

if TYPE_CHECKING:  # the rest loads on first use: `sparkplane get apps` needs none of it
    from sparkplane.kube import Kube
    from sparkplane.spec import SparkApp
    from sparkplane.usecases.create import SubmitOptions, Submitted
    from sparkplane.usecases.sources import PathLike, Source
    from sparkplane.usecases.tracker import Tracker

SpecSource = Union["SparkApp", "PathLike", Mapping[str, Any]]
Obj = dict[str, Any]


class SparkPlane(AppOperations):
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
        from sparkplane.usecases import submit as submission
        from sparkplane.usecases.sources import Source

        src = source if isinstance(source, Source) else self.source(source)
        opts = _options(options)
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


def _options(options: Mapping[str, Any]) -> SubmitOptions:
    from sparkplane.usecases.create import SubmitOptions

    return SubmitOptions(**{k: v for k, v in options.items() if v is not None})
