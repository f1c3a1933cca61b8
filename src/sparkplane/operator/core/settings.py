"""Settings of the operator, every one documented with its default.

Owns :class:`ReconcileSettings` (what the pure reconcilers read) and :class:`OperatorSettings`
(what the runner reads: namespaces, workers, leader election, metrics). The CLI builds them from
flags; tests build them directly with short periods. Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparkplane.operator.core.naming import DEFAULT_OPERATOR_NAME


@dataclass(frozen=True)
class Limits:
    """The bounds no custom resource may exceed (docs/operator.md, "Bounds").

    Each is an operator setting (``sparkplane operator run`` flag, Helm value ``limits.*``).
    Refused (the resource fails with a status and a Warning Event naming the field, the limit
    and the setting): ``min_schedule_seconds`` (default 60: a ScheduledSparkApplication whose
    runs come closer than this), ``max_workers`` (default 100: a SparkCluster's
    ``initWorkers``/``minWorkers``/``maxWorkers``), ``max_executors`` (default 500: a
    SparkApplication's ``spark.executor.instances``, ``spark.dynamicAllocation.{initial,min,
    max}Executors``). Clamped (the transition message says so): ``min_restart_backoff_millis``
    (default 1000: a smaller ``restartBackoffMillis*`` waits this long),
    ``max_restart_attempts`` (default 20: a larger ``maxRestartAttempts``/``maxRestartOn*``
    stops here). With dynamic allocation on and no ``spark.dynamicAllocation.maxExecutors``
    (Spark's default: unbounded), the operator sets it to ``max_executors``.
    """

    min_schedule_seconds: int = 60
    min_restart_backoff_millis: int = 1000
    max_restart_attempts: int = 20
    max_workers: int = 100
    max_executors: int = 500


@dataclass(frozen=True)
class ReconcileSettings:
    """Inputs of ``decide`` besides the observed objects.

    ``operator_name``: value of the ``spark.operator/name`` label (default
    ``spark-kubernetes-operator``, like Apache's). ``trim_history``: at a restart move the old
    attempt's history into ``previousAttemptSummary`` (Apache's default, true).
    ``missing_driver_grace_seconds``: after requesting a driver, how long a pod absent from the
    cache is assumed to be on its way before a live read is asked for (default 5).
    ``limits``: the bounds of :class:`Limits`.
    """

    operator_name: str = DEFAULT_OPERATOR_NAME
    trim_history: bool = True
    missing_driver_grace_seconds: float = 5.0
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True)
class OperatorSettings:
    """How the operator process runs.

    ``namespaces``: watched namespaces; empty = all namespaces (default).
    ``workers``: reconcile threads (default 8). ``event_workers``: threads posting Kubernetes
    Events (default 2). ``leader_election``: hold a coordination.k8s.io Lease before reconciling
    (default True); ``lease_name``/``lease_namespace`` name it (default
    ``sparkplane-operator-lock`` in ``default``); ``lease_seconds`` (15), ``renew_seconds`` (2).
    ``identity``: this replica's holder identity (default: hostname + random suffix).
    ``metrics_port``: Prometheus endpoint port (None = no endpoint; default None).
    ``base_retry_seconds``/``max_retry_seconds``: per-key exponential requeue after errors
    (0.05 → 60). ``resync_seconds``: every resource is reconciled again at least this often
    (default 300). ``reconcile_clusters``: also reconcile SparkClusters (default True).
    ``reconcile_schedules``: also run ScheduledSparkApplications (default True).
    ``pod_template_dir``: the only directory ``spark.kubernetes.*.podTemplateFile`` may name
    (None = the operator reads no template files; default None, see operator.podtemplates).
    ``pod_policy_allow``: checks of the pod policy (``security.podpolicy.CHECK_NAMES``)
    this operator does not apply before creating pods (default none; docs/security.md).
    ``label_selector``: only custom resources matching it (a shard; default: all).
    ``sweep_seconds``: how often the leader deletes leftovers of finished attempts (default 60;
    also when it takes the lease); ``sweep_min_age_seconds``: younger objects are left (10).
    ``archive_prune_seconds``: how often the leader deletes expired log archives (default 600).
    ``lease_seconds`` must exceed the renew deadline (2/3 of it), itself above ``renew_seconds``.
    """

    namespaces: tuple[str, ...] = ()
    workers: int = 8
    event_workers: int = 2
    leader_election: bool = True
    lease_name: str = "sparkplane-operator-lock"
    lease_namespace: str = "default"
    lease_seconds: float = 15.0
    renew_seconds: float = 2.0
    identity: str = ""
    metrics_port: int | None = None
    base_retry_seconds: float = 0.05
    max_retry_seconds: float = 60.0
    resync_seconds: float = 300.0
    reconcile_clusters: bool = True
    reconcile_schedules: bool = True
    pod_template_dir: str | None = None
    label_selector: str = ""
    sweep_seconds: float = 60.0
    sweep_min_age_seconds: float = 10.0
    archive_prune_seconds: float = 600.0
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    pod_policy_allow: tuple[str, ...] = ()
