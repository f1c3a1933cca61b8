"""``SparkPlaneSubmitOperator``: submit a Spark app, wait for it without a worker slot, report it.

The task submits under a submission id derived from its DAG run and task
(:mod:`sparkplane_airflow.ids`: every try shares it), then defers to
:class:`~sparkplane_airflow.triggers.SparkPlaneAppTrigger`. When the trigger fires, the task
resumes in :meth:`execute_complete`: the driver log goes into the task log, the app's outcome into
XCom, and the task succeeds or fails (retried or not, :mod:`sparkplane_airflow.settle`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from sparkplane_airflow import connection, ids, outcome
from sparkplane_airflow.hooks import SparkPlaneHook
from sparkplane_airflow.links import SparkUiLink
from sparkplane_airflow.settle import XCOM_KEY, driver_log, settle
from sparkplane_airflow.triggers import SparkPlaneAppTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context

    from sparkplane import App, SparkPlane

#: the trigger's own deadline comes this long before Airflow's (``execution_timeout``), so the
#: app is killed and its log archived before Airflow gives up on the trigger
MARGIN = 30.0


class SparkPlaneSubmitOperator(BaseOperator):
    """Run one Spark application on Kubernetes through sparkplane.

    :param spec: a SparkApplication manifest: a path (relative: to the DAG file's folder) or a
        dict (either API's field names, as ``sparkplane submit``)
    :param argv: instead, spark-submit arguments (``["--class", "X", "--conf", ...]``)
    :param template: instead, a template directory, with ``values`` (a file) and ``set``
    :param mode: ``native`` (driver pod, no operator), ``operator`` (a ``spark.apache.org``
        SparkApplication) or ``kubeflow`` (a ``sparkoperator.k8s.io`` one)
    :param namespace: default: the connection's (or the kubeconfig context's)
    :param sparkplane_conn_id: an Airflow connection of type ``sparkplane``
    :param deferrable: wait in the triggerer (default) or in the worker
    :param timeout: kill the app this long after the task started it (also: ``execution_timeout``)
    :param ttl: sparkplane's clean-up TTL of the finished app (``sparkplane gc``)
    :param driver_log_lines: the driver's last lines copied into the task log (0: none; None: all)
    :param no_retry_reasons: reasons that fail the task without retries
    """

    template_fields: Sequence[str] = ("spec", "argv", "template", "values", "set", "namespace")
    template_fields_renderers = {"spec": "json"}
    ui_color = "#f4a460"
    operator_extra_links = (SparkUiLink(),)

    def __init__(
        self,
        *,
        spec: str | Mapping[str, Any] | None = None,
        argv: Sequence[str] | None = None,
        template: str | None = None,
        values: str | None = None,
        set: Mapping[str, str] | Sequence[str] | None = None,
        namespace: str | None = None,
        mode: str = "native",
        sparkplane_conn_id: str = SparkPlaneHook.default_conn_name,
        deferrable: bool = True,
        timeout: timedelta | None = None,
        ttl: timedelta | None = None,
        driver_log_lines: int | None = 2000,
        live_log: bool = True,
        no_retry_reasons: Collection[str] = outcome.NO_RETRY_REASONS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.argv = argv
        self.template = template
        self.values = values
        self.set = set
        self.namespace = namespace
        self.mode = mode
        self.sparkplane_conn_id = sparkplane_conn_id
        self.deferrable = deferrable
        self.timeout = timeout
        self.ttl = ttl
        self.driver_log_lines = driver_log_lines
        self.live_log = live_log
        self.no_retry_reasons = frozenset(no_retry_reasons)
        self._running: tuple[str, str] | None = None

    # -- the task -------------------------------------------------------------------------
    def execute(self, context: Context) -> Any:
        from sparkplane.errors import ValidationError

        sid = self.submission_id(context)
        hook = SparkPlaneHook(self.sparkplane_conn_id)
        deadline = self._deadline(context)
        try:
            hook.connect_kwargs()
            extra = hook.submit_kwargs()
        except connection.ConnectionFieldError as exc:  # no retry fixes a wrong connection
            raise AirflowFailException(str(exc)) from None
        with hook.client(self.namespace) as sp:
            try:
                app = self._start(sp, sid, extra)
            except ValidationError as exc:  # the spec is wrong: nothing was created
                raise AirflowFailException(str(exc)) from None
            self._running = (app.name, app.namespace)
            self._push_link(context, sp, app, hook.fields()[2])
            if self.deferrable:
                self.defer(
                    trigger=SparkPlaneAppTrigger(
                        app.name,
                        app.namespace,
                        self.sparkplane_conn_id,
                        sid,
                        deadline,
                        live_log=self.live_log,
                    ),
                    method_name="execute_complete",
                )
            return self._finish(context, sp, self._wait_here(sp, app, sid, deadline))

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        """Resumed from the trigger: report the app."""
        hook = SparkPlaneHook(self.sparkplane_conn_id)
        with hook.client(event["namespace"]) as sp:
            return self._finish(context, sp, event)

    def on_kill(self) -> None:
        """The task was killed while it ran in the worker: kill the app (the trigger's
        ``on_kill`` does it while the task is deferred)."""
        if self._running is None:
            return
        name, namespace = self._running
        self.log.info("killing %s/%s", namespace, name)
        with SparkPlaneHook(self.sparkplane_conn_id).client(namespace) as sp:
            sp.kill(name, namespace=namespace, wait=True)

    # -- its steps ----------------------------------------------------------------------------
    @staticmethod
    def submission_id(context: Context) -> str:
        ti = context["ti"]
        index = ti.map_index if ti.map_index is not None else -1
        cleared = getattr(context.get("dag_run"), "clear_number", None) or 0
        return ids.submission_id(ti.dag_id, ti.run_id, ti.task_id, index, cleared)

    def _local(self, path: str | None) -> str | None:
        """A relative path, against the DAG file's folder (the worker's cwd is anyone's)."""
        if path is None or Path(path).is_absolute():
            return path
        fileloc = getattr(self.dag, "fileloc", None) if self.has_dag() else None
        return str(Path(fileloc).parent / path) if fileloc else path

    def _submit(self, sp: SparkPlane, sid: str, extra: Mapping[str, Any]) -> App:
        spec = self._local(self.spec) if isinstance(self.spec, str) else self.spec
        dag_dir = self._local(".")
        submitted = sp.submit(
            spec,
            argv=self.argv,
            template=self._local(self.template),
            values=self._local(self.values),
            set=self.set or (),
            namespace=self.namespace,
            mode=self.mode,
            submission_id=sid,
            ttl=self.ttl,
            **{"staging_base_dir": dag_dir, **extra},
        )
        app = sp.get(submitted)
        verb = "found the earlier try's" if submitted.existing else "submitted"
        self.log.info("%s app %s/%s (submission id %s)", verb, app.namespace, app.name, sid)
        return app

    def _start(self, sp: SparkPlane, sid: str, extra: Mapping[str, Any]) -> App:
        """This task instance's app: an earlier try's that still runs (re-attached), else a
        new one (an earlier try's finished or dying app is removed first: one app per id)."""
        from sparkplane.errors import AppNotFoundError, NotFoundError

        app = self._submit(sp, sid, extra)
        deleting = bool(app.owner.get("metadata", {}).get("deletionTimestamp"))
        if not app.state.finished and not deleting:
            return app
        why = "is being deleted" if deleting else f"ended {app.state.phase}"
        self.log.info("the earlier try's app %s: removing it to run anew", why)
        with contextlib.suppress(AppNotFoundError, NotFoundError):  # gone meanwhile: as well
            sp.kill(app, wait=True)
        return self._submit(sp, sid, extra)

    def _deadline(self, context: Context) -> float | None:
        ends = []
        if self.timeout is not None:
            ends.append(time.time() + self.timeout.total_seconds())
        start = getattr(context["ti"], "start_date", None)
        if self.execution_timeout is not None and start is not None:
            ends.append(start.timestamp() + self.execution_timeout.total_seconds() - MARGIN)
        return min(ends) if ends else None

    def _push_link(
        self, context: Context, sp: SparkPlane, app: App, extra: Mapping[str, Any]
    ) -> None:
        url = connection.ui_link(extra, app.name, app.namespace, app.app_id)
        if url is None:
            try:
                url = sp.ui(app, history=False).url
            except Exception:  # no Ingress (yet): no link, never a failed task
                url = None
        if url:
            context["ti"].xcom_push(key=SparkUiLink().xcom_key, value=url)

    def _wait_here(
        self, sp: SparkPlane, app: App, sid: str, deadline: float | None
    ) -> dict[str, Any]:
        """``deferrable=False``: the same wait, in the worker."""
        from sparkplane.errors import AppNotFoundError, TimeoutExpired

        left = None if deadline is None else max(1.0, deadline - time.time())
        base = {"name": app.name, "namespace": app.namespace, "submission_id": sid}
        try:
            done = sp.wait(
                app,
                timeout=left,
                on_change=lambda a: self.log.info("%s: %s", a.name, a.state.phase),
            )
        except TimeoutExpired:
            sp.kill(app, wait=True)
            return {**base, "status": "timeout", "state": "", "reason": "", "message": ""}
        except AppNotFoundError:
            return {**base, "status": "gone", "state": "", "reason": "", "message": ""}
        return {**outcome.result(done, sid), "status": "finished"}

    def _finish(self, context: Context, sp: SparkPlane, event: dict[str, Any]) -> Any:
        self._running = None
        self.log.info("app %s", outcome.summary(event))
        if event.get("live_log"):
            self.log.info("the driver's log went by live, in the trigger's part of this log")
        else:
            driver_log(sp, event, self.driver_log_lines, self.log.info)
        result = {k: v for k, v in event.items() if k not in ("status", "live_log")}
        context["ti"].xcom_push(key=XCOM_KEY, value=result)
        return settle(event, self.no_retry_reasons)
