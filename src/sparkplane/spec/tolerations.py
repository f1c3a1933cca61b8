"""``spec.applicationTolerations`` of the Apache Spark Kubernetes Operator, field for field.

Owns the restart, timeout, instance and retention settings with the operator's defaults
(reference §9.3). The spec model embeds them; the operator (later) reads them to decide
restarts and resource release. Pure data: no I/O, no decisions beyond the retention minimum.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class SpecModel(BaseModel):
    """Base of every spec model: camelCase on the wire, unknown fields rejected."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        coerce_numbers_to_str=True,
        use_enum_values=False,
    )


class RestartPolicy(StrEnum):
    """When the operator starts a new attempt after one ends."""

    ALWAYS = "Always"
    NEVER = "Never"
    ON_FAILURE = "OnFailure"
    ON_INFRASTRUCTURE_FAILURE = "OnInfrastructureFailure"


class ResourceRetainPolicy(StrEnum):
    """Whether operator-created resources are kept after the application terminates."""

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"


class DeploymentMode(StrEnum):
    """Where the driver runs; the operator rejects ClientMode."""

    CLUSTER_MODE = "ClusterMode"
    CLIENT_MODE = "ClientMode"


class RestartConfig(SpecModel):
    """``restartConfig``: policy, caps and backoffs (null caps mean "use the overall cap")."""

    restart_policy: RestartPolicy = RestartPolicy.NEVER
    max_restart_attempts: int = 3
    restart_backoff_millis: int = 30000
    restart_counter_reset_millis: int = -1
    max_restart_on_failure: int | None = None
    restart_backoff_millis_for_failure: int | None = None
    max_restart_on_scheduling_failure: int | None = None
    restart_backoff_millis_for_scheduling_failure: int | None = None


class ApplicationTimeoutConfig(SpecModel):
    """``applicationTimeoutConfig``: how long each start-up phase may take, in milliseconds."""

    driver_start_timeout_millis: int = 300000
    driver_ready_timeout_millis: int = 300000
    executor_start_timeout_millis: int = 300000
    force_termination_grace_period_millis: int = 300000
    termination_requeue_period_millis: int = 2000


class ExecutorInstanceConfig(SpecModel):
    """``instanceConfig``: operator-side executor health thresholds (not executor counts)."""

    init_executors: int = 0
    min_executors: int = 0
    max_executors: int = 0


class ApplicationTolerations(SpecModel):
    """``spec.applicationTolerations`` with the operator's defaults."""

    restart_config: RestartConfig = Field(default_factory=RestartConfig)
    application_timeout_config: ApplicationTimeoutConfig = Field(
        default_factory=ApplicationTimeoutConfig
    )
    instance_config: ExecutorInstanceConfig = Field(default_factory=ExecutorInstanceConfig)
    resource_retain_policy: ResourceRetainPolicy = ResourceRetainPolicy.NEVER
    resource_retain_duration_millis: int = -1
    ttl_after_stop_millis: int = -1

    def effective_retain_duration_millis(self) -> int:
        """The retention actually applied: the minimum of the non-negative durations, or -1."""
        values = [
            v for v in (self.resource_retain_duration_millis, self.ttl_after_stop_millis) if v >= 0
        ]
        return min(values) if values else -1
