"""Hand-made SparkApplications, pods and a stepping helper for the reconciler's unit tests."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from sparkplane.operator.core.decision import Decision
from sparkplane.operator.core.observe import Observed
from sparkplane.operator.core.priority import DEFAULT as DEFAULT_PRIORITY
from sparkplane.operator.core.reconciler import decide
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.operator.core.states import history_states

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
UID = "11111111-2222-3333-4444-555555555555"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_cr(
    tolerations: dict[str, Any] | None = None,
    conf: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "mainClass": "org.apache.spark.examples.SparkPi",
        "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
        "runtimeVersions": {"sparkVersion": "4.0.0"},
        "sparkConf": {"spark.kubernetes.container.image": "apache/spark:4.0.0", **(conf or {})},
        **spec,
    }
    if tolerations is not None:
        body["applicationTolerations"] = tolerations
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": "ns1", "uid": UID, "resourceVersion": "1"},
        "spec": body,
    }


def driver(
    attempt: int = 0,
    phase: str = "Running",
    *,
    ready: bool = True,
    uid: str = "d-uid",
    **status: Any,
) -> dict[str, Any]:
    st: dict[str, Any] = {"phase": phase, **status}
    if phase == "Running":
        st.setdefault("conditions", [{"type": "Ready", "status": "True" if ready else "False"}])
        st.setdefault(
            "containerStatuses",
            [{"name": "spark-kubernetes-driver", "state": {"running": {"startedAt": stamp(1)}}}],
        )
    if phase in ("Succeeded", "Failed"):
        code = 0 if phase == "Succeeded" else 1
        reason = "Completed" if phase == "Succeeded" else "Error"
        st.setdefault(
            "containerStatuses",
            [
                {
                    "name": "spark-kubernetes-driver",
                    "state": {"terminated": {"exitCode": code, "reason": reason}},
                }
            ],
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pi-{attempt}-driver",
            "namespace": "ns1",
            "uid": uid,
            "labels": {"spark-role": "driver", "spark-app-selector": f"pi-{attempt}"},
            "ownerReferences": [{"kind": "SparkApplication", "name": "pi", "uid": UID}],
        },
        "spec": {},
        "status": st,
    }


def executor(
    n: int, *, ready: bool = True, attempt: int = 0, owner: str = "d-uid"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pi-x-exec-{n}",
            "namespace": "ns1",
            "labels": {"spark-role": "executor", "spark-app-selector": f"pi-{attempt}"},
            "ownerReferences": [{"kind": "Pod", "name": f"pi-{attempt}-driver", "uid": owner}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


class Walk:
    """Feed observations to ``decide`` and apply its status, as the runner would."""

    def __init__(self, cr: dict[str, Any], settings: ReconcileSettings | None = None) -> None:
        self.cr = cr
        self.settings = settings or ReconcileSettings()
        self.decisions: list[Decision] = []

    def step(self, seconds: float, *pods: dict[str, Any], **observed: Any) -> Decision:
        # priority classes as the runner reads them for a Workload: by default a cluster with
        # none (no globalDefault PriorityClass: priority 0)
        observed.setdefault("priority", {DEFAULT_PRIORITY: None})
        obs = Observed(pods=tuple(pods), **observed)
        decision = decide(self.cr, obs, at(seconds), self.settings)
        if decision.status is not None:
            self.cr = {**copy.deepcopy(self.cr), "status": decision.status}
        self.decisions.append(decision)
        return decision

    @property
    def states(self) -> list[str]:
        return history_states(self.cr.get("status") or {})

    @property
    def state(self) -> str:
        return str(self.cr["status"]["currentState"]["currentStateSummary"])
