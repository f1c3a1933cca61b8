"""The submission id of a task instance: the same DAG run, task and map index, the same id.

sparkplane's ``submission_id`` makes a submission idempotent (the same id renders the same names
and finds the earlier app instead of starting a second one). The id leaves the try number out on
purpose: every try of one task instance shares it, so a try that starts while an earlier try's app
still runs (the worker died before it deferred, the task was retried) re-attaches to that app. A
try that finds the earlier app finished (a retry after a failure, a cleared task run again) removes
it (its driver log is archived first) and submits anew under the same id: one app per task
instance at a time. docs/airflow.md states this policy.
"""

from __future__ import annotations

import hashlib

PREFIX = "airflow"


def submission_id(
    dag_id: str, run_id: str, task_id: str, map_index: int = -1, clear_number: int = 0
) -> str:
    """``airflow-<24 hex>``: a valid label value, whatever the run id's characters or length
    (a long readable id would be cut to 63 characters, and two tasks could then share it)."""
    key = "\0".join([dag_id, run_id, task_id, str(map_index), str(clear_number)])
    return f"{PREFIX}-{hashlib.sha256(key.encode()).hexdigest()[:24]}"
