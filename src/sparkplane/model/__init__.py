"""One state model for every Spark application, however it was submitted.

The public face of the lifecycle state logic. Import from here:

* the model: :class:`AppPhase`, :class:`Reason`, :class:`AppState`, :func:`is_finished`
  (``lifecycle.model``);
* :func:`classify_native` for apps submitted natively (``lifecycle.native``);
* :func:`classify_apache_cr` / :func:`classify_kubeflow_cr` for SparkApplications of
  ``spark.apache.org`` and ``sparkoperator.k8s.io`` (``lifecycle.crstate``);
* :func:`find_preemption` (``lifecycle.preemption``).

Called by the lifecycle shell (get/list/wait/watch) and the CLI. Nothing here does I/O.
"""

from __future__ import annotations

from sparkplane.model.crstate import classify_apache_cr, classify_kubeflow_cr
from sparkplane.model.native import classify_driver_pod, classify_native
from sparkplane.model.phase import (
    EXECUTOR_KEYS,
    STUCK_REASONS,
    AppPhase,
    AppState,
    Reason,
    count_executors,
    is_finished,
)
from sparkplane.model.preemption import Preemption, find_preemption, resolve_preemptor

__all__ = [
    "EXECUTOR_KEYS",
    "STUCK_REASONS",
    "AppPhase",
    "AppState",
    "Preemption",
    "Reason",
    "classify_apache_cr",
    "classify_driver_pod",
    "classify_kubeflow_cr",
    "classify_native",
    "count_executors",
    "find_preemption",
    "is_finished",
    "resolve_preemptor",
]
