"""``ScheduledSparkApplication``: SparkApplications on a cron schedule, under two APIs.

Served as ``sparkplane.io/v1alpha1`` (runs are Apache ``spark.apache.org/v1``
SparkApplications) and as Kubeflow's ``sparkoperator.k8s.io/v1beta2`` (runs are v1beta2
SparkApplications, which the same operator serves): one model, one decider, two
:class:`ScheduleKind` rows saying which API a schedule is and what its runs are.

Owns the spec model, with Kubeflow's field names (its users know them): ``schedule`` (five-field
cron, ``@hourly``-style macros, or ``@every <duration>`` such as ``@every 90s``), ``timeZone``
(IANA name, default UTC), ``concurrencyPolicy`` (``Allow`` / ``Forbid`` / ``Replace``),
``suspend``, ``successfulRunHistoryLimit`` / ``failedRunHistoryLimit`` (default 1 each, as
Kubeflow) and ``template``: the ``spec`` of the ``spark.apache.org/v1`` SparkApplication each run
creates (for Kubeflow's API, a v1beta2 SparkApplication's ``spec``), with optional
``runMetadata`` labels and annotations for the runs (sparkplane's; Kubeflow has none).

Why its own group: Apache's operator has no such kind, and a kind invented inside Apache's
``spark.apache.org`` group could collide with one Apache adds later; the runs it creates are
plain Apache SparkApplications. Called by the schedule decider and the CRD generator. Pure data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import Field, field_validator

from sparkplane.operator.core import states as st
from sparkplane.operator.core.kubeflow_status import INTERNAL
from sparkplane.spec.kubeflow import KubeflowSpec
from sparkplane.spec.models import SparkApplicationSpec
from sparkplane.spec.tolerations import SpecModel
from sparkplane.vocab import (
    APACHE_API_VERSION,
    KUBEFLOW_API_VERSION,
    SCHEDULED_SPARK_APPLICATION,
    SPARKPLANE_GROUP,
)

GROUP = SPARKPLANE_GROUP
VERSION = "v1alpha1"
KIND = SCHEDULED_SPARK_APPLICATION
API_VERSION = f"{GROUP}/{VERSION}"
_EVERY = re.compile(r"^@every\s+((?:\d+(?:\.\d+)?(?:h|m|s|ms))+)$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


class ConcurrencyPolicy(StrEnum):
    """What a due run does while an earlier run is still going."""

    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


def every(schedule: str) -> timedelta | None:
    """The interval of an ``@every <duration>`` schedule (Go duration syntax), else None."""
    match = _EVERY.match(schedule.strip())
    if not match:
        return None
    seconds = sum(float(n) * _UNIT[u] for n, u in _PART.findall(match[1]))
    return timedelta(seconds=seconds)


class RunMetadata(SpecModel):
    """Labels and annotations put on every SparkApplication the schedule creates."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class ScheduleFields(SpecModel):
    """What every ScheduledSparkApplication's ``spec`` has besides its ``template``."""

    schedule: str
    time_zone: str = "UTC"
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.ALLOW
    suspend: bool = False
    successful_run_history_limit: int = Field(default=1, ge=0)
    failed_run_history_limit: int = Field(default=1, ge=0)
    run_metadata: RunMetadata = Field(default_factory=RunMetadata)

    @field_validator("schedule")
    @classmethod
    def _valid_schedule(cls, value: str) -> str:
        interval = every(value)
        if interval is not None:
            seconds = interval.total_seconds()
            if seconds < 1 or seconds != int(seconds):
                raise ValueError("@every needs a whole number of seconds, at least 1s")
            return value
        if value.strip().startswith("@every") or not croniter.is_valid(value):
            raise ValueError(
                f"{value!r} is not a schedule: use five cron fields (minute hour day-of-month "
                "month day-of-week, e.g. '*/5 * * * *'), a macro such as '@hourly', or "
                "'@every <duration>' such as '@every 30s'"
            )
        if len(value.split()) > 5:
            raise ValueError(f"{value!r}: use five cron fields (seconds: '@every <duration>')")
        return value

    @field_validator("time_zone")
    @classmethod
    def _valid_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. 'Europe/Paris')") from exc
        return value


class ScheduledSparkApplicationSpec(ScheduleFields):
    """``sparkplane.io/v1alpha1`` ``ScheduledSparkApplication.spec``: Apache runs."""

    template: SparkApplicationSpec


class KubeflowScheduledSpec(ScheduleFields):
    """``sparkoperator.k8s.io/v1beta2`` ``ScheduledSparkApplication.spec``: v1beta2 runs."""

    template: KubeflowSpec


def _apache_states(status: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(st.history_states(status))


def _kubeflow_states(status: Mapping[str, Any]) -> tuple[str, ...]:
    """A v1beta2 run's Apache states: the operator keeps them in ``status.sparkplane``."""
    return tuple(st.history_states(status.get(INTERNAL) or {}))


@dataclass(frozen=True)
class ScheduleKind:
    """One API a ScheduledSparkApplication is served under, and what its runs are."""

    api_version: str
    run_api_version: str
    spec_model: type[ScheduleFields]
    run_states: Callable[[Mapping[str, Any]], tuple[str, ...]]
    """A run's status → its Apache state history (what finished/succeeded is read from)."""


APACHE_SCHEDULE = ScheduleKind(
    API_VERSION, APACHE_API_VERSION, ScheduledSparkApplicationSpec, _apache_states
)
KUBEFLOW_SCHEDULE = ScheduleKind(
    KUBEFLOW_API_VERSION, KUBEFLOW_API_VERSION, KubeflowScheduledSpec, _kubeflow_states
)
SCHEDULE_KINDS: dict[str, ScheduleKind] = {
    k.api_version: k for k in (APACHE_SCHEDULE, KUBEFLOW_SCHEDULE)
}


def schedule_kind(api_version: str | None) -> ScheduleKind:
    """The :class:`ScheduleKind` of a schedule's ``apiVersion`` (sparkplane's by default)."""
    return SCHEDULE_KINDS.get(api_version or "", APACHE_SCHEDULE)
