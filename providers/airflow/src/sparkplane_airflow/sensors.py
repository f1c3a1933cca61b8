"""``SparkPlaneAppSensor``: wait for an app that something else started (by name).

Deferrable by default, on the same trigger and shared watch as the operator, but it does not own
the app: its timeout and a user's clear leave the app running.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator

from sparkplane_airflow import outcome
from sparkplane_airflow.hooks import SparkPlaneHook
from sparkplane_airflow.settle import XCOM_KEY, settle
from sparkplane_airflow.triggers import SparkPlaneAppTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context


class SparkPlaneAppSensor(BaseSensorOperator):
    """Succeeds when the app ``application_name`` succeeded; fails as the operator would.

    :param application_name: the app's name (``sparkplane get apps``), templated
    :param namespace: default: the connection's
    """

    template_fields: Sequence[str] = ("application_name", "namespace")

    def __init__(
        self,
        *,
        application_name: str,
        namespace: str | None = None,
        sparkplane_conn_id: str = SparkPlaneHook.default_conn_name,
        deferrable: bool = True,
        no_retry_reasons: Collection[str] = outcome.NO_RETRY_REASONS,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.application_name = application_name
        self.namespace = namespace
        self.sparkplane_conn_id = sparkplane_conn_id
        self.deferrable = deferrable
        self.no_retry_reasons = frozenset(no_retry_reasons)

    def execute(self, context: Context) -> Any:
        if self.deferrable:
            self._defer()
        return super().execute(context)

    def _defer(self) -> None:
        with SparkPlaneHook(self.sparkplane_conn_id).client(self.namespace) as sp:
            namespace = self.namespace or sp.namespace
        deadline = time.time() + float(self.timeout) if self.timeout else None
        self.defer(
            trigger=SparkPlaneAppTrigger(
                self.application_name,
                namespace,
                self.sparkplane_conn_id,
                deadline=deadline,
                owns_app=False,
            ),
            method_name="execute_complete",
        )

    def poke(self, context: Context) -> bool:
        with SparkPlaneHook(self.sparkplane_conn_id).client(self.namespace) as sp:
            app = sp.get(self.application_name)
        if not app.state.finished:
            return False
        self._settle(context, {**outcome.result(app), "status": "finished"})
        return True

    def execute_complete(self, context: Context, event: dict[str, Any]) -> Any:
        return self._settle(context, event)

    def _settle(self, context: Context, event: dict[str, Any]) -> Any:
        self.log.info("app %s", outcome.summary(event))
        result = {k: v for k, v in event.items() if k not in ("status", "live_log")}
        context["ti"].xcom_push(key=XCOM_KEY, value=result)
        return settle(event, self.no_retry_reasons)
