"""``SparkCluster.spec`` of the Apache Spark Kubernetes Operator, field for field (reference §9.7).

Owns the models: ``runtimeVersions`` (required), ``sparkConf``, ``clusterTolerations``
(``instanceConfig.{initWorkers,minWorkers,maxWorkers}``), ``masterSpec`` and ``workerSpec`` (raw
StatefulSet/Service specs and metadata, plus the worker's ``horizontalPodAutoscalerSpec``).
Called by the cluster reconciler and the CRD generator. Pure data.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from sparkplane.spec.models import RuntimeVersions
from sparkplane.spec.tolerations import SpecModel


class WorkerInstanceConfig(SpecModel):
    """How many workers to start, and the least the cluster is healthy with."""

    init_workers: int = 0
    min_workers: int = 0
    max_workers: int = 0


class ClusterTolerations(SpecModel):
    """``spec.clusterTolerations``."""

    instance_config: WorkerInstanceConfig = Field(default_factory=WorkerInstanceConfig)


class MasterSpec(SpecModel):
    """Overrides for the master StatefulSet and Service (merged over the built ones)."""

    stateful_set_spec: dict[str, Any] | None = None
    stateful_set_metadata: dict[str, Any] | None = None
    service_spec: dict[str, Any] | None = None
    service_metadata: dict[str, Any] | None = None


class WorkerSpec(MasterSpec):
    """Overrides for the workers; ``horizontalPodAutoscalerSpec`` is accepted, not acted on."""

    horizontal_pod_autoscaler_spec: dict[str, Any] | None = None


class SparkClusterSpec(SpecModel):
    """``SparkCluster.spec``."""

    runtime_versions: RuntimeVersions
    spark_conf: dict[str, str] = Field(default_factory=dict)
    cluster_tolerations: ClusterTolerations = Field(default_factory=ClusterTolerations)
    master_spec: MasterSpec = Field(default_factory=MasterSpec)
    worker_spec: WorkerSpec = Field(default_factory=WorkerSpec)

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _stringify(cls, value: object) -> object:
        if isinstance(value, dict):
            return {
                k: ("true" if v is True else "false" if v is False else v) for k, v in value.items()
            }
        return value
