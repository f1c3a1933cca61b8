"""Kubeflow's ``sparkoperator.k8s.io/v1beta2`` SparkApplication for the generic loop.

No second engine: :func:`~sparkplane.spec.kubeflow.to_apache` turns the resource into the
Apache-shaped SparkApplication the :class:`~.app_adapter.AppAdapter` decides for, its driver
pod named as Kubeflow names it (:func:`~sparkplane.operator.core.naming.kubeflow_driver_pod_name`:
``<name>-driver``, which Airflow's ``SparkKubernetesOperator`` waits for; a retry's is
``<name>-<attempt>-driver``), (the same pod
index, keyed by uid; the same pod templates, pod policy and limits; the Apache status it evolves
kept in ``status.sparkplane``), and :func:`~.kubeflow_status.kubeflow_status`
writes Kubeflow's status beside it. What the decision creates is re-owned by the v1beta2
resource (its ownerReferences name ``sparkoperator.k8s.io/v1beta2``, so deleting it
garbage-collects them), and the TTL deletes the v1beta2 resource. A spec sparkplane cannot
honour (a refused field, a wrong type, nothing to run) ends ``SUBMISSION_FAILED`` with the
fields named in ``errorMessage``, and nothing is created. :func:`served` lets the runner start
without the kind when its CRD is not installed. Called by the runner. Writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sparkplane.errors import ValidationError
from sparkplane.kube import Kube
from sparkplane.operator.core.decision import (
    Action,
    CreateResources,
    Decision,
    DeleteCustomResource,
    Transition,
)
from sparkplane.operator.core.kubeflow_status import INTERNAL, kubeflow_status, refused_status
from sparkplane.operator.core.naming import DRIVER_POD_NAME_CONF, kubeflow_driver_pod_name
from sparkplane.operator.kinds.adapter import Watch, queue_kind
from sparkplane.operator.kinds.app_adapter import AppAdapter
from sparkplane.spec.kubeflow import to_apache
from sparkplane.vocab import KUBEFLOW_API_VERSION, SPARK_APPLICATION, format_instant

log = logging.getLogger(__name__)
Obj = dict[str, Any]
#: The queue kind of Kubeflow's SparkApplication (its kind name is Apache's too).
KUBEFLOW_APP = queue_kind(KUBEFLOW_API_VERSION, SPARK_APPLICATION)


def served(kube: Kube) -> bool:
    """Whether the API server serves v1beta2 SparkApplications (False: not installed)."""
    if kube.serves(KUBEFLOW_API_VERSION, SPARK_APPLICATION):
        return True
    log.info("%s SparkApplication is not served: Kubeflow's API is off", KUBEFLOW_API_VERSION)
    return False


def _reowned(obj: Obj, uid: str, api_version: str, kind: str) -> Obj:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    if not any(r.get("uid") == uid for r in refs):
        return obj
    mine = {"apiVersion": api_version, "kind": kind}
    fixed = [{**r, **mine} if r.get("uid") == uid else r for r in refs]
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": fixed}}


def retarget(
    actions: Sequence[Action],
    uid: str,
    api_version: str = KUBEFLOW_API_VERSION,
    kind: str = SPARK_APPLICATION,
) -> tuple[Action, ...]:
    """``actions`` with the Apache resource replaced by resource ``uid`` of ``api_version`` and
    ``kind`` (the v1beta2 SparkApplication, or a SparkConnect): owner, TTL delete."""
    out: list[Action] = []
    for action in actions:
        if isinstance(action, CreateResources):
            objects = tuple(_reowned(o, uid, api_version, kind) for o in action.objects)
            out.append(replace(action, objects=objects))
        elif isinstance(action, DeleteCustomResource):
            out.append(replace(action, api_version=api_version, kind=kind))
        else:
            out.append(action)
    return tuple(out)


class KubeflowAdapter:
    """v1beta2 SparkApplications: mapped, decided by the Apache adapter, Kubeflow's status out."""

    kind = SPARK_APPLICATION
    api_version = KUBEFLOW_API_VERSION

    def __init__(self, apps: AppAdapter) -> None:
        self.apps = apps

    def watches(self) -> Sequence[Watch]:
        return ()  # the AppAdapter's pod informer wakes these too (queue_kind)

    def resync(self) -> None:
        return None

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Decision:
        before = cr.get("status") or {}
        try:
            apache = to_apache(cr)
        except ValidationError as exc:
            now = self.apps.clock()
            status = refused_status(cr, str(exc), format_instant(now))
            if status == before:
                return Decision()
            note = Transition(None, "SUBMISSION_FAILED", str(exc), now, warning=True)
            return Decision(status=status, transitions=(note,))
        apache["spec"]["sparkConf"][DRIVER_POD_NAME_CONF] = kubeflow_driver_pod_name(cr)
        apache["status"] = before.get(INTERNAL) or None
        decision = self.apps.decide(apache, create_error=create_error, gate=KUBEFLOW_APP)
        internal = decision.status if decision.status is not None else apache["status"]
        pods = self.apps.observe(apache, flavors=False).pods if internal else ()
        status = kubeflow_status(cr, internal, pods)
        uid = str(cr["metadata"].get("uid") or "")
        return replace(
            decision,
            status=status if status != before else None,
            actions=retarget(decision.actions, uid),
        )
