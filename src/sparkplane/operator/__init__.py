"""The spark.apache.org operator: SparkApplication and SparkCluster, reconciled level-based.

Layers (pure core, thin I/O shell):

- pure: :mod:`~sparkplane.operator.states` (the state table and status history),
  :mod:`~sparkplane.operator.reconciler` (:func:`decide`), :mod:`~sparkplane.operator.observe`,
  :mod:`~sparkplane.operator.driver` (driver resources via the native render steps),
  :mod:`~sparkplane.operator.cluster` (SparkCluster objects and ``decide_cluster``),
  :mod:`~sparkplane.operator.crd` and :mod:`~sparkplane.operator.deploy` (manifests);
- I/O: :mod:`~sparkplane.operator.runner` (:class:`Operator`: informers, work queue, workers),
  :mod:`~sparkplane.operator.actions`, :mod:`~sparkplane.operator.leader`,
  :mod:`~sparkplane.operator.metrics`, :mod:`~sparkplane.operator.install`.
"""

from sparkplane.operator.decision import (
    CreateResources,
    Decision,
    DeleteCustomResource,
    DeleteResources,
    Transition,
)
from sparkplane.operator.observe import Observed
from sparkplane.operator.reconciler import decide
from sparkplane.operator.settings import OperatorSettings, ReconcileSettings

__all__ = [
    "CreateResources",
    "Decision",
    "DeleteCustomResource",
    "DeleteResources",
    "Observed",
    "OperatorSettings",
    "ReconcileSettings",
    "Transition",
    "decide",
]
