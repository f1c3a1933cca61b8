"""``SparkUiLink``: the task's "Spark UI" button (the app's UI, or its History Server page).

The operator stores the address in XCom under :attr:`SparkUiLink.xcom_key` when it has one: the
connection's ``ui_url`` template filled in, else the app's Ingress URL (``sparkplane ui``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from airflow.sdk import BaseOperatorLink

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator
    from airflow.sdk.types import TaskInstanceKey


class SparkUiLink(BaseOperatorLink):
    """The Spark UI of the task's app."""

    name = "Spark UI"

    def get_link(self, operator: BaseOperator, *, ti_key: TaskInstanceKey) -> str:
        from airflow.sdk import BaseXCom

        value: Any = BaseXCom.get_value(ti_key=cast("Any", ti_key), key=self.xcom_key)
        return str(value) if value else ""
