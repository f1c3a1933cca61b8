"""``SparkCluster.spec`` of the Apache Spark Kubernetes Operator, field for field (reference §9.7).

Owns the models: ``runtimeVersions`` (required), ``sparkConf``, ``clusterTolerations``
(``instanceConfig.{initWorkers,minWorkers,maxWorkers}``, checked so the workers' autoscaler is
valid), ``masterSpec`` and ``workerSpec`` (raw StatefulSet/Service specs and metadata, plus the
worker's ``horizontalPodAutoscalerSpec``).
Called by the cluster reconciler and the CRD generator. Pure data.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from sparkplane.spec import podshape
from sparkplane.spec.models import RuntimeVersions
from sparkplane.spec.tolerations import SpecModel


class WorkerInstanceConfig(SpecModel):
    """How many workers to start, and the least the cluster is healthy with."""

    init_workers: int = Field(default=0, ge=0)
    min_workers: int = Field(default=0, ge=0)
    max_workers: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _autoscaled_from_one(self) -> WorkerInstanceConfig:
        if self.min_workers < self.max_workers and self.min_workers < 1:
            raise ValueError(
                "minWorkers must be at least 1 when maxWorkers is larger: it is the minReplicas "
                "of the workers' HorizontalPodAutoscaler, which Kubernetes refuses at 0; set "
                "minWorkers >= 1, or maxWorkers = minWorkers for a fixed-size cluster"
            )
        return self


class ClusterTolerations(SpecModel):
    """``spec.clusterTolerations``."""

    instance_config: WorkerInstanceConfig = Field(default_factory=WorkerInstanceConfig)


class MasterSpec(SpecModel):
    """Overrides for the master StatefulSet and Service (merged over the built ones)."""

    # each must have its Kubernetes shape where the builder merges into it
    # (sparkplane.spec.podshape): `containers: "x"` is refused here, with the field

    stateful_set_spec: dict[str, Any] | None = None
    stateful_set_metadata: dict[str, Any] | None = None
    service_spec: dict[str, Any] | None = None
    service_metadata: dict[str, Any] | None = None

    @field_validator("stateful_set_spec")
    @classmethod
    def _sts_shape(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return podshape.check(podshape.StatefulSetSpec, value)  # type: ignore[no-any-return]

    @field_validator("service_spec")
    @classmethod
    def _service_shape(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return podshape.check(podshape.ServiceSpec, value)  # type: ignore[no-any-return]

    @field_validator("stateful_set_metadata", "service_metadata")
    @classmethod
    def _meta_shape(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return podshape.check(podshape.ObjectMeta, value)  # type: ignore[no-any-return]


class WorkerSpec(MasterSpec):
    """Overrides for the workers, plus the base of their HorizontalPodAutoscaler's spec.

    The autoscaler exists when ``minWorkers < maxWorkers`` (as in Apache's operator); its
    ``scaleTargetRef``, ``minReplicas`` and ``maxReplicas`` are always the operator's.
    """

    horizontal_pod_autoscaler_spec: dict[str, Any] | None = None


class SparkClusterSpec(SpecModel):
    """``SparkCluster.spec``."""

    runtime_versions: RuntimeVersions
    spark_conf: dict[str, str] = Field(default_factory=dict)
    cluster_tolerations: ClusterTolerations = Field(default_factory=ClusterTolerations)
    master_spec: MasterSpec = Field(default_factory=MasterSpec)
    worker_spec: WorkerSpec = Field(default_factory=WorkerSpec)
    #: Apache operator 1.1.0: release the master and workers and hold the cluster while true.
    suspend: bool = False

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _stringify(cls, value: object) -> object:
        if isinstance(value, dict):
            return {
                k: ("true" if v is True else "false" if v is False else v) for k, v in value.items()
            }
        return value
