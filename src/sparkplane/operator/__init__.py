"""The spark.apache.org operator: SparkApplication, SparkCluster and ScheduledSparkApplication.

Four sub-packages, one per layer (an import-linter ``layers`` contract keeps the order: each
imports only from the ones below it):

- :mod:`~sparkplane.operator.runtime` (the process: ``Operator`` with its informers, work queue
  and workers; the loop and its write order; actions, leader election, the fence, the sweeper,
  metrics) and, beside it, :mod:`~sparkplane.operator.deploy` (CRDs, RBAC and Deployment
  manifests, and applying them);
- :mod:`~sparkplane.operator.kinds`: one adapter per custom-resource kind (what it observes,
  which pure decide it calls) and the ``Adapter`` interface the loop drives;
- :mod:`~sparkplane.operator.core`: pure, no I/O: the state table as data, the decide
  functions, the builders of what an attempt or a cluster creates, the settings.
"""

from sparkplane.operator.core.decision import (
    CreateResources,
    Decision,
    DeleteCustomResource,
    DeleteResources,
    Transition,
)
from sparkplane.operator.core.observe import Observed
from sparkplane.operator.core.reconciler import decide
from sparkplane.operator.core.settings import OperatorSettings, ReconcileSettings

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
