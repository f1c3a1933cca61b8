"""Settings of the operator, every one documented with its default, merged in one place.

Owns :class:`Limits` (the bounds no resource may exceed), :class:`ReconcileSettings` (what the
pure reconcilers read), :class:`OperatorSettings` (what the runner reads: namespaces, workers,
leader election, metrics; it holds the other two) and :func:`merge`, the one place they are
put together: the defaults, then the process environment (:data:`ENVIRONMENT`), then the flags
of ``sparkplane operator run``. The result is passed down; no module of the operator reads the
environment itself. Tests build the settings directly with short periods. Pure: the environment
comes in as a mapping.

:func:`apply_dynamic` lays Apache's dynamic configuration (a ConfigMap's data, keys of
:data:`DYNAMIC_KEYS`) over the merged settings: all of it or, with any bad value, none of it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkplane.operator.core.capacity import CapacitySettings
from sparkplane.operator.core.naming import DEFAULT_OPERATOR_NAME
from sparkplane.security.rules import OPERATOR_DYNAMIC_CONFIG
from sparkplane.settings import Settings
from sparkplane.vocab import is_dns1123_label


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


#: Limits field -> (``sparkplane operator run`` flag, Helm value): the words of every bound's
#: message (:func:`sparkplane.operator.core.bounds.setting`) and the Deployment's flags.
LIMIT_SETTINGS = {
    "min_schedule_seconds": ("--min-schedule-seconds", "limits.minScheduleSeconds"),
    "min_restart_backoff_millis": (
        "--min-restart-backoff-millis",
        "limits.minRestartBackoffMillis",
    ),
    "max_restart_attempts": ("--max-restart-attempts", "limits.maxRestartAttempts"),
    "max_workers": ("--max-workers", "limits.maxWorkers"),
    "max_executors": ("--max-executors", "limits.maxExecutors"),
}


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
    ``dynamic_config``: watch the ConfigMap ``dynamic_config_name`` (default
    :data:`DYNAMIC_CONFIG_NAME`, Apache's) in ``lease_namespace`` (its own) and apply its
    :data:`DYNAMIC_KEYS` without a restart (Apache's
    ``spark.kubernetes.operator.dynamicConfig.enabled``; default False).
    ``capacity``: the backpressure on driver creation (:class:`CapacitySettings`, an adaptive
    in-flight limit on drivers not yet running; on by default). ``status_first``: resources
    whose pods changed go in the work queue's urgent lane, before new ones (default True).
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
    dynamic_config: bool = False
    dynamic_config_name: str = OPERATOR_DYNAMIC_CONFIG
    #: where the logs of the drivers it deletes are archived and which event-log root its
    #: pruning may touch (:class:`sparkplane.settings.Settings`: ``SPARKPLANE_LOG_ARCHIVE`` and
    #: friends); :func:`merge` reads them with the rest, and settings built directly (tests,
    #: embedding) take this process's environment, as a client does
    process: Settings = field(default_factory=Settings.load)
    capacity: CapacitySettings = field(default_factory=CapacitySettings)
    status_first: bool = True


#: What the operator takes from its environment (the Deployment sets ``POD_NAME`` from the
#: downward API): variable -> :class:`OperatorSettings` field. Flags win over the environment.
ENVIRONMENT = {"POD_NAME": "identity"}
_LIMITS = frozenset(f.name for f in dataclasses.fields(Limits))
_RECONCILE = frozenset(f.name for f in dataclasses.fields(ReconcileSettings)) - {"limits"}
#: flat keys of :func:`merge` for :class:`CapacitySettings` (``capacity_maximum`` -> ``maximum``)
CAPACITY_PREFIX = "capacity_"


def merge(flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> OperatorSettings:
    """The operator's settings: the defaults, then ``environ`` (:data:`ENVIRONMENT`), then
    ``flags`` (the last wins). ``flags`` are keyed by field name, flat: an
    :class:`OperatorSettings` field, a :class:`ReconcileSettings` one (``operator_name``...) or
    a :class:`Limits` one (``max_executors``...) or a :class:`CapacitySettings` one prefixed
    ``capacity_`` (``capacity_enabled``, ``capacity_maximum``...). Without ``renew_seconds``, a
    ``lease_seconds`` flag also sets it (a quarter of the lease, at most the default), so a
    short lease is renewed in time. An unknown key is a TypeError (a caller's bug)."""
    values: dict[str, Any] = {
        name: (environ or {})[var] for var, name in ENVIRONMENT.items() if (environ or {}).get(var)
    }
    values.update(flags)
    limits = Limits(**{k: values.pop(k) for k in _LIMITS & values.keys()})
    reconcile = ReconcileSettings(
        **{k: values.pop(k) for k in _RECONCILE & values.keys()}, limits=limits
    )
    capacity = CapacitySettings(
        **{
            k.removeprefix(CAPACITY_PREFIX): values.pop(k)
            for k in [k for k in values if k.startswith(CAPACITY_PREFIX)]
        }
    )
    values.setdefault("process", Settings.load(environ or {}))
    if "lease_seconds" in values and "renew_seconds" not in values:
        values["renew_seconds"] = min(OperatorSettings.renew_seconds, values["lease_seconds"] / 4)
    return OperatorSettings(**values, reconcile=reconcile, capacity=capacity)


#: The ConfigMap of the dynamic configuration (Apache's chart's name), in the operator's
#: own namespace; its shipped Role may read this one and no other.
DYNAMIC_CONFIG_NAME = OPERATOR_DYNAMIC_CONFIG
#: The keys the dynamic configuration applies (Apache's names) -> :class:`OperatorSettings`
#: field. Others are reported and ignored (Apache honours only its dynamic ones, too).
DYNAMIC_KEYS = {
    "spark.kubernetes.operator.watchedNamespaces": "namespaces",
    "spark.kubernetes.operator.reconciler.intervalSeconds": "resync_seconds",
    "spark.kubernetes.operator.reconciler.labelSelector": "label_selector",
}


def _namespaces(value: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    bad = [n for n in names if not is_dns1123_label(n)]
    if bad or not names:
        what = f"{', '.join(bad)} is not a namespace name" if bad else "it is empty"
        raise ValueError(f"{what}; give a comma-separated list of namespaces")
    return names


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ValueError(f"{value!r} is not a positive number of seconds")
    return seconds


def _selector(value: str) -> str:
    """A label selector of ``key=value`` / ``key!=value`` / ``key`` terms (what ``--selector``
    takes), checked enough that a typo is refused here rather than by every list call."""
    terms = [t.strip() for t in value.split(",")] if value.strip() else []
    for term in terms:
        key = term.split("!=")[0].split("=")[0].strip().lstrip("!")
        if not re.fullmatch(r"([a-z0-9.-]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", key):
            raise ValueError(f"{term!r} is not a label selector term (key=value, key!=value, key)")
    return ",".join(terms)


_PARSE = {"namespaces": _namespaces, "resync_seconds": _seconds, "label_selector": _selector}


@dataclass(frozen=True)
class Dynamic:
    """What :func:`apply_dynamic` made of a ConfigMap: the settings to run with, the problems
    (each naming its key; any problem keeps the previous settings) and the keys ignored."""

    settings: OperatorSettings
    problems: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def apply_dynamic(base: OperatorSettings, data: Mapping[str, str]) -> Dynamic:
    """``base`` (the settings the process started with) with the dynamic configuration
    ``data`` laid over it: a key the ConfigMap no longer has is back at ``base``'s value.
    Keys outside :data:`DYNAMIC_KEYS` are ignored (listed). With any bad value ``problems``
    is not empty and the caller keeps what it runs with: a bad ConfigMap never half-applies.
    Watched namespaces change only for an operator started with a list of them (its RBAC is
    per namespace); one watching all namespaces keeps them all, as Apache's does."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    ignored = tuple(sorted(k for k in data if k not in DYNAMIC_KEYS))
    for key, raw in sorted(data.items()):
        if key in DYNAMIC_KEYS:
            try:
                values[DYNAMIC_KEYS[key]] = _PARSE[DYNAMIC_KEYS[key]](str(raw))
            except ValueError as exc:
                problems.append(f"{key}: {exc}")
    if "namespaces" in values and not base.namespaces:
        problems.append(
            "spark.kubernetes.operator.watchedNamespaces: this operator watches all namespaces; "
            "start it with --namespace to change its namespaces at run time"
        )
    if problems:
        return Dynamic(base, tuple(problems), ignored)
    return Dynamic(dataclasses.replace(base, **values), (), ignored)
