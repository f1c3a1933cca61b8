"""A natively submitted app in a Kueue queue: the labels Kueue's Pod integration acts on.

A native app has no custom resource and no controller, so nothing could hold a Workload for it
the way the operator does (docs/queues.md). Kueue's own Pod integration holds pods instead: its
pod webhook gates a pod labelled ``kueue.x-k8s.io/queue-name`` (scheduling gate
``kueue.x-k8s.io/admission``) and its pod controller makes a one-pod Workload for it, ungated
once admitted (kueue v0.17.0 ``pkg/controller/jobs/pod``). So:

* the **driver** carries the queue label (the app's ``metadata.labels``, which a native
  submission puts on every object it makes): it waits, gated, until admitted;
* each **executor** is its own one-pod Workload, so the quota follows dynamic allocation as
  executors come and go and an executor beyond the quota waits gated (Spark tolerates pending
  executors). Spark makes the driver pod each executor's controller, and Kueue's webhook does
  not gate a pod whose controller is a pod it manages (it counts it as that pod's child, with
  no quota of its own). The annotation ``kueue.x-k8s.io/pod-suspending-parent`` makes the
  webhook gate a pod whatever owns it, and the label ``kueue.x-k8s.io/managed`` makes the pod
  controller manage it (the webhook adds that label only on its other path); both go on the
  executors as ``spark.kubernetes.executor.label.*``/``.annotation.*`` confs.

Pure: :func:`queue_of`, :func:`with_queue` and :func:`queued_natively` read or copy a
:class:`SparkApp`; nothing here talks to a cluster.
"""

from __future__ import annotations

from sparkplane.spec.conf import K8S
from sparkplane.spec.models import SparkApp
from sparkplane.vocab import (
    KUEUE_MANAGED_LABEL,
    KUEUE_SUSPENDING_PARENT,
    QUEUE_NAME_LABEL,
)

DRIVER_QUEUE_CONF = f"{K8S}.driver.label.{QUEUE_NAME_LABEL}"
#: the value of the executors' ``pod-suspending-parent`` annotation (Kueue reads only its
#: presence for a pod integration it enables explicitly; the value names who asked)
SUSPENDING_PARENT = "sparkplane-native"


def queue_of(app: SparkApp) -> tuple[str, str] | None:
    """The LocalQueue ``app`` names and where: its ``metadata.labels`` or its driver label
    conf; None if it names none."""
    if name := app.metadata.labels.get(QUEUE_NAME_LABEL):
        return name, f"metadata.labels[{QUEUE_NAME_LABEL}]"
    if name := app.spec.spark_conf.get(DRIVER_QUEUE_CONF):
        return name, f"spec.sparkConf[{DRIVER_QUEUE_CONF}]"
    return None


def with_queue(app: SparkApp, queue: str) -> SparkApp:
    """``app`` naming ``queue`` in its ``metadata.labels`` (``--queue``; it wins over a queue
    the spec names)."""
    labels = {**app.metadata.labels, QUEUE_NAME_LABEL: queue}
    return app.model_copy(update={"metadata": app.metadata.model_copy(update={"labels": labels})})


def executor_queue_conf(queue: str) -> dict[str, str]:
    """The executor confs that make each executor a one-pod Workload of ``queue``."""
    return {
        f"{K8S}.executor.label.{QUEUE_NAME_LABEL}": queue,
        f"{K8S}.executor.label.{KUEUE_MANAGED_LABEL}": "true",
        f"{K8S}.executor.annotation.{KUEUE_SUSPENDING_PARENT}": SUSPENDING_PARENT,
    }


def queued_natively(app: SparkApp) -> SparkApp:
    """``app`` as a native submission queues it: its driver labelled with the queue (already
    so when the spec names it in ``metadata.labels``), its executors as
    :func:`executor_queue_conf` says. Unchanged if it names no queue."""
    found = queue_of(app)
    if found is None:
        return app
    queue = found[0]
    app = with_queue(app, queue)
    conf = {**app.spec.spark_conf, **executor_queue_conf(queue)}
    return app.model_copy(update={"spec": app.spec.model_copy(update={"spark_conf": conf})})


def without_pod_queue(app: SparkApp) -> SparkApp:
    """``app`` whose pods name no queue: what the operator renders for a SparkApplication it
    queues by its own Workload (a pod still labelled would be held a second time by Kueue's
    Pod integration, for quota the Workload already holds)."""
    labels = {k: v for k, v in app.metadata.labels.items() if k != QUEUE_NAME_LABEL}
    pod_keys = {f"{K8S}.{role}.label.{QUEUE_NAME_LABEL}" for role in ("driver", "executor")}
    conf = {k: v for k, v in app.spec.spark_conf.items() if k not in pod_keys}
    if labels == app.metadata.labels and conf == app.spec.spark_conf:
        return app
    return app.model_copy(
        update={
            "metadata": app.metadata.model_copy(update={"labels": labels}),
            "spec": app.spec.model_copy(update={"spark_conf": conf}),
        }
    )
