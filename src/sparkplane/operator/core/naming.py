"""Names and labels of what the operator creates, deterministic per custom resource and attempt.

Owns the Apache operator's naming (reference §9.8): the app ID of an attempt is
``<metadata.name>-<attemptId>`` (``pi-0``), hashed when longer than 46 characters; it is the
resource prefix, so the driver pod is ``<appId>-driver``, its Service ``<appId>-driver-svc`` and
its spark.properties ConfigMap ``<appId>-spark-drv-conf-map``. The same CR and attempt always give
the same names: a create after a crash collides (AlreadyExists) instead of starting a second
driver. Also the operator labels (``spark.operator/name``, ``spark.operator/spark-app-name``).

A driver pod name set in ``spark.kubernetes.driver.pod.name`` names the first attempt's driver;
a retry's is ``<that name without -driver>-<attempt>-driver`` (:func:`attempt_driver_pod_name`),
so a retry never collides with its predecessor's pod while that one is still terminating.
Kubeflow's v1beta2 driver is ``spec.driver.podName``, else that conf, else ``<name>-driver``
(:func:`kubeflow_driver_pod_name`; kubeflow/spark-operator ``pkg/util/sparkapplication.go``
``GetDriverPodName``). Kubeflow reuses that one name on every retry: its PENDING_RERUN deletes the
old driver and resubmits only once it is gone (``internal/controller/sparkapplication/
controller.go``, ``reconcilePendingRerunSparkApplication``); sparkplane does not wait, it renames.

Called by the driver builder, the reconciler and the runner. Pure.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkplane.spec.conf import K8S
from sparkplane.spec.naming import AppIds
from sparkplane.vocab import is_dns1035_label, label_value

#: Label with the operator's name on every object it creates (and on executors, via conf).
OPERATOR_NAME_LABEL = "spark.operator/name"
#: Label with the SparkApplication (or SparkCluster) name.
APP_NAME_LABEL = "spark.operator/spark-app-name"
CLUSTER_NAME_LABEL = "spark.operator/spark-cluster-name"
DEFAULT_OPERATOR_NAME = "spark-kubernetes-operator"
MAX_APP_ID = 46
#: Spark's conf key of the driver pod's name.
DRIVER_POD_NAME_CONF = f"{K8S}.driver.pod.name"
DRIVER_SUFFIX = "-driver"
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, rem = divmod(number, 36)
        out = _BASE36[rem] + out
    return out or "0"


def attempt_app_id(name: str, namespace: str, attempt: int) -> str:
    """The app ID (= resource prefix) of ``attempt`` of SparkApplication ``namespace/name``.

    A CR name is already a valid object-name prefix; Service names, which must also start with a
    letter and have no dots, fall back to ``spark-<hash>-driver-svc`` (:class:`OperatorIds`).
    """
    plain = f"{name}-{attempt}"
    if len(plain) <= MAX_APP_ID:
        return plain
    digest = _base36(hashlib.sha256(f"{namespace}/{name}/{attempt}".encode()).digest())
    return f"{name[:9].rstrip('-.')}-{digest[:36]}"


@dataclass(frozen=True)
class OperatorIds(AppIds):
    """:class:`AppIds` with the operator's names: everything derives from ``prefix``."""

    prefix: str = ""

    @classmethod
    def for_attempt(cls, name: str, namespace: str, uid: str, attempt: int) -> OperatorIds:
        """The ids of one attempt; ``uid`` (the CR's) only seeds the local-dir UUID."""
        prefix = attempt_app_id(name, namespace, attempt)
        digest = hashlib.sha256(f"{uid}/{attempt}".encode()).hexdigest()
        return cls(
            app_name=name,
            app_id=prefix,
            unique_id=digest[:16],
            local_dir_uuid=str(uuid.UUID(hex=digest[16:48], version=4)),
            submission_id=f"{uid}-{attempt}",
            prefix=prefix,
        )

    @classmethod
    def of(cls, cr: Mapping[str, Any], attempt: int) -> OperatorIds:
        """:meth:`for_attempt` of custom resource ``cr`` (its name, namespace and uid)."""
        meta = cr.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        return cls.for_attempt(
            str(meta.get("name") or ""), namespace, str(meta.get("uid") or ""), attempt
        )

    @property
    def resource_prefix(self) -> str:
        return self.prefix

    @property
    def driver_service_name(self) -> str:
        name = f"{self.prefix}-driver-svc"
        return name if is_dns1035_label(name) else f"spark-{self.unique_id}-driver-svc"

    @property
    def ui_service_name(self) -> str:
        name = f"{self.prefix}-ui-svc"
        return name if is_dns1035_label(name) else f"spark-{self.unique_id}-ui-svc"

    @property
    def conf_map_name(self) -> str:
        return f"{self.prefix}-spark-drv-conf-map"


def operator_labels(operator_name: str, app_name: str) -> dict[str, str]:
    """The labels the Apache operator puts on drivers, their Services and executors."""
    return {OPERATOR_NAME_LABEL: operator_name, APP_NAME_LABEL: label_value(app_name)}


def attempt_of(status: Mapping[str, Any] | None) -> int:
    """``status.currentAttemptSummary.attemptInfo.id`` (0 for a new resource)."""
    info = ((status or {}).get("currentAttemptSummary") or {}).get("attemptInfo") or {}
    try:
        return int(info.get("id", 0))
    except (TypeError, ValueError):
        return 0


def cr_app_id(cr: Mapping[str, Any]) -> str:
    """The app ID of the current attempt of a SparkApplication."""
    meta = cr.get("metadata") or {}
    return attempt_app_id(
        str(meta.get("name", "")), str(meta.get("namespace", "")), attempt_of(cr.get("status"))
    )


def attempt_driver_pod_name(first: str, attempt: int) -> str:
    """The driver pod of ``attempt`` when the first attempt's is named ``first``."""
    if attempt == 0:
        return first
    return f"{first.removesuffix(DRIVER_SUFFIX)}-{attempt}{DRIVER_SUFFIX}"


def kubeflow_driver_pod_name(cr: Mapping[str, Any]) -> str:
    """Kubeflow's driver pod name of v1beta2 SparkApplication ``cr`` (its first attempt's)."""
    spec = cr.get("spec") or {}
    named = (spec.get("driver") or {}).get("podName") or (spec.get("sparkConf") or {}).get(
        DRIVER_POD_NAME_CONF
    )
    return str(named) if named else f"{(cr.get('metadata') or {}).get('name', '')}{DRIVER_SUFFIX}"
