"""Kubeflow's ``sparkoperator.k8s.io/v1alpha1`` SparkConnect for the generic loop.

No engine of its own: :func:`~sparkplane.spec.kubeflow_connect.to_apache` turns the resource
into the Apache-shaped SparkApplication running Spark's Connect server, with its server pod
named as Kubeflow names it (``<name>-server``; a restart's ``<name>-server-<attempt>-driver``)
and its Service (``<name>-server``, gRPC port 15002); the :class:`~.app_adapter.AppAdapter`
decides for it (the same pod index, keyed by uid, which wakes the SparkConnect when its pods
change; the same render steps, pod policy and limits; the Apache status it evolves kept in
``status.sparkplane``) and :func:`~sparkplane.operator.core.connect_status.connect_status`
writes Kubeflow's status beside it. Everything the decision creates is owned by the
SparkConnect (``controller: true``), so deleting it garbage-collects the server, its Service
and ConfigMap, and (through the server pod) its executors. A spec sparkplane cannot honour
ends ``Failed`` with the fields named in the condition's message, and nothing is created.
:func:`served` lets the runner start without the kind when its CRD is not installed. Called by
the runner. Writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sparkplane.errors import ValidationError
from sparkplane.kube import Kube
from sparkplane.operator.core.connect_status import (
    CONDITION,
    FAILED,
    UPDATED,
    connect_status,
)
from sparkplane.operator.core.decision import Decision, Transition
from sparkplane.operator.core.kubeflow_status import INTERNAL
from sparkplane.operator.core.naming import DRIVER_POD_NAME_CONF
from sparkplane.operator.kinds.adapter import Watch, queue_kind
from sparkplane.operator.kinds.app_adapter import AppAdapter
from sparkplane.operator.kinds.kubeflow_io import retarget
from sparkplane.spec.kubeflow_connect import server_pod_name, to_apache
from sparkplane.vocab import KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT, format_instant

log = logging.getLogger(__name__)
Obj = dict[str, Any]
#: The queue kind of Kubeflow's SparkConnect.
CONNECT = queue_kind(KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT)


def served(kube: Kube) -> bool:
    """Whether the API server serves v1alpha1 SparkConnects (False: not installed)."""
    if kube.serves(KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT):
        return True
    log.info("%s SparkConnect is not served", KUBEFLOW_CONNECT_API_VERSION)
    return False


def refused_status(cr: Obj, message: str, now: str) -> Obj:
    """The status of a SparkConnect whose spec sparkplane refuses: ``Failed``, the problems
    in the condition's message (unchanged when it already says so)."""
    before = cr.get("status") or {}
    old: Mapping[str, Any] = next(
        (c for c in before.get("conditions") or [] if c.get("type") == CONDITION), {}
    )
    if before.get("state") == FAILED and old.get("message") == message:
        return dict(before)
    condition = {
        "type": CONDITION,
        "status": "False",
        "reason": "ServerPodNotReady",
        "message": message,
        "lastTransitionTime": now,
    }
    return {
        "state": FAILED,
        "conditions": [condition],
        "startTime": before.get("startTime") or now,
        UPDATED: now,
    }


class ConnectAdapter:
    """v1alpha1 SparkConnects: mapped, decided by the Apache adapter, Kubeflow's status out."""

    kind = SPARK_CONNECT
    api_version = KUBEFLOW_CONNECT_API_VERSION

    def __init__(self, apps: AppAdapter) -> None:
        self.apps = apps

    def watches(self) -> Sequence[Watch]:
        return ()  # the AppAdapter's pod informer wakes these too (by owner kind)

    def resync(self) -> None:
        return None

    def decide(self, cr: Obj, *, create_error: str | None = None) -> Decision:
        before = cr.get("status") or {}
        now = self.apps.clock()
        try:
            apache = to_apache(cr)
        except ValidationError as exc:
            status = refused_status(cr, str(exc), format_instant(now))
            if status == before:
                return Decision()
            note = Transition(None, FAILED, str(exc), now, warning=True)
            return Decision(status=status, transitions=(note,))
        name = str(cr["metadata"]["name"])
        apache["spec"]["sparkConf"][DRIVER_POD_NAME_CONF] = server_pod_name(name)
        apache["status"] = before.get(INTERNAL) or None
        decision = self.apps.decide(apache, create_error=create_error, gate=CONNECT)
        internal = decision.status if decision.status is not None else apache["status"]
        pods = self.apps.observe(apache, flavors=False).pods if internal else ()
        status = connect_status(cr, internal, pods, format_instant(now))
        uid = str(cr["metadata"].get("uid") or "")
        return replace(
            decision,
            status=status if status != before else None,
            actions=retarget(decision.actions, uid, KUBEFLOW_CONNECT_API_VERSION, SPARK_CONNECT),
        )
