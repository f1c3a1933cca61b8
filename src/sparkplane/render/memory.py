"""Spark's driver memory formula (reference §3.4): heap plus overhead, in MiB.

Called by the basic driver step. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkplane.spec.quantities import memory_mib

JVM_FACTOR = 0.1
NON_JVM_FACTOR = 0.4
MIN_OVERHEAD = "384m"


@dataclass(frozen=True)
class DriverMemory:
    """The driver's heap, overhead and the factor written back to spark.properties."""

    heap_mib: int
    overhead_mib: int
    default_factor: float

    @property
    def total_mib(self) -> int:
        """What the container requests and is limited to."""
        return self.heap_mib + self.overhead_mib


def java_double(value: float) -> str:
    """Java's ``Double.toString`` for the usual factors (0.1 → "0.1", 1 → "1.0")."""
    return repr(float(value))


def _heap_and_overhead(
    conf: Mapping[str, str], role: str, *, non_jvm: bool
) -> tuple[int, int, float]:
    """``(heap, overhead, default factor)`` of ``role`` (driver or executor), in MiB, as
    Spark computes them for both: heap = spark.<role>.memory (1g); overhead =
    spark.<role>.memoryOverhead, else max(factor * heap, spark.<role>.minMemoryOverhead
    (384m)). The default factor is spark.kubernetes.memoryOverheadFactor if set, else 0.4 for
    Python/R and 0.1 for the JVM; spark.<role>.memoryOverheadFactor wins over it."""
    heap = memory_mib(conf.get(f"spark.{role}.memory", "1g"))
    k8s_factor = conf.get("spark.kubernetes.memoryOverheadFactor")
    if k8s_factor is not None:
        default_factor = float(k8s_factor)
    else:
        default_factor = NON_JVM_FACTOR if non_jvm else JVM_FACTOR
    factor = float(conf.get(f"spark.{role}.memoryOverheadFactor", default_factor))
    if f"spark.{role}.memoryOverhead" in conf:
        overhead = memory_mib(conf[f"spark.{role}.memoryOverhead"])
    else:
        minimum = memory_mib(conf.get(f"spark.{role}.minMemoryOverhead", MIN_OVERHEAD))
        overhead = max(int(factor * heap), minimum)
    return heap, overhead, default_factor


def driver_memory(conf: Mapping[str, str], *, non_jvm: bool) -> DriverMemory:
    """The driver's heap and overhead (:func:`_heap_and_overhead`) and its default factor."""
    return DriverMemory(*_heap_and_overhead(conf, "driver", non_jvm=non_jvm))


def executor_memory_mib(conf: Mapping[str, str], *, non_jvm: bool) -> int:
    """What one executor pod's container requests, as Spark's ``BasicExecutorFeatureStep``
    computes it: heap + overhead (:func:`_heap_and_overhead`) + spark.executor.pyspark.memory
    (Python) + spark.memory.offHeap.size (when off-heap is enabled)."""
    heap, overhead, _ = _heap_and_overhead(conf, "executor", non_jvm=non_jvm)
    extra = 0
    if non_jvm and conf.get("spark.executor.pyspark.memory"):
        extra += memory_mib(conf["spark.executor.pyspark.memory"])
    if str(conf.get("spark.memory.offHeap.enabled", "false")).strip().lower() == "true":
        extra += memory_mib(conf.get("spark.memory.offHeap.size", "0"), default_unit="b")
    return heap + overhead + extra
