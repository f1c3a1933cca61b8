"""``SparkPlaneHook``: a Connection of type ``sparkplane``, opened as a sparkplane client."""

from __future__ import annotations

import json
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from sparkplane import SparkPlane
from sparkplane_airflow import connection

Fields = tuple[str | None, str | None, dict[str, Any]]


class SparkPlaneHook(BaseHook):
    """Opens :class:`~sparkplane.SparkPlane` for ``sparkplane_conn_id`` (the trigger reads
    :meth:`aconnect_kwargs` and opens the async one).

    With no such connection defined, ``sparkplane_default`` falls back to sparkplane's own
    defaults (the kubeconfig of the worker), as the CLI does.
    """

    conn_name_attr = "sparkplane_conn_id"
    default_conn_name = "sparkplane_default"
    conn_type = "sparkplane"
    hook_name = "sparkplane (Spark on Kubernetes)"

    def __init__(self, sparkplane_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.sparkplane_conn_id = sparkplane_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """The connection form: host is the API server, password its token."""
        return {
            "hidden_fields": ["schema", "login", "port"],
            "relabeling": {"host": "API server (https://host:port)", "password": "Bearer token"},
            "placeholders": {
                "extra": json.dumps(
                    {
                        "kubeconfig": "/path/to/kubeconfig",
                        "context": "my-context",
                        "namespace": "spark-jobs",
                        "in_cluster": False,
                        "ca_cert": "/path/to/ca.crt",
                        "staging_server": "https://staging:8443",
                        "ui_url": "https://history.example.com/history/{app_id}",
                    }
                )
            },
        }

    def fields(self) -> Fields:
        """host, password, extra of the connection; empty when the default one is not defined."""
        try:
            conn = self.get_connection(self.sparkplane_conn_id)
        except AirflowNotFoundException:
            return self._undefined()
        return conn.host, conn.password, dict(conn.extra_dejson)

    async def afields(self) -> Fields:
        """As :meth:`fields`, from an event loop (a trigger)."""
        try:
            conn = await self.aget_connection(self.sparkplane_conn_id)
        except AirflowNotFoundException:
            return self._undefined()
        return conn.host, conn.password, dict(conn.extra_dejson)

    def _undefined(self) -> Fields:
        if self.sparkplane_conn_id != self.default_conn_name:
            raise AirflowNotFoundException(
                f"connection {self.sparkplane_conn_id!r} is not defined: add it "
                "(type sparkplane) or leave sparkplane_conn_id to use the worker's kubeconfig"
            )
        return None, None, {}

    def connect_kwargs(self) -> dict[str, Any]:
        host, password, extra = self.fields()
        return connection.connect_kwargs(host, password, extra)

    async def aconnect_kwargs(self) -> dict[str, Any]:
        host, password, extra = await self.afields()
        return connection.connect_kwargs(host, password, extra)

    def submit_kwargs(self) -> dict[str, Any]:
        return connection.submit_kwargs(self.fields()[2])

    def client(self, namespace: str | None = None) -> SparkPlane:
        kwargs = self.connect_kwargs()
        if namespace:
            kwargs["namespace"] = namespace
        return SparkPlane.connect(**kwargs)

    def test_connection(self) -> tuple[bool, str]:
        """The connection form's Test button: list the namespace's apps."""
        try:
            with self.client() as sp:
                count = len(sp.list())
        except Exception as exc:
            return False, str(exc)
        return True, f"connected: {count} app(s) in namespace {sp.namespace}"
