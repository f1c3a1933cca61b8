"""Identity of an application in either mode, and the labels sparkplane adds at submit time.

A *native* app is its driver pod (label ``spark-role=driver``, not owned by a custom resource);
its name is the pod name without the ``-driver`` suffix. An *operator* app is a SparkApplication
custom resource of ``spark.apache.org`` (ours or Apache's operator) or ``sparkoperator.k8s.io``
(Kubeflow's); its name is the resource's name. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sparkplane.model.phase import AppState, Event
from sparkplane.vocab import (
    APACHE_API_VERSION,
    DRIVER_ROLE,
    KUBEFLOW_API_VERSION,
    ROLE_LABEL,
    SPARK_APPLICATION,
    SPARK_CONNECT,
)

Obj = dict[str, Any]

MANAGED_BY = "app.kubernetes.io/managed-by"


class Mode(StrEnum):
    """How an application was submitted (and which object owns it)."""

    NATIVE = "native"
    APACHE = "operator"
    KUBEFLOW = "kubeflow"


@dataclass(frozen=True)
class Kind:
    """API coordinates of the object that owns an application."""

    api_version: str
    kind: str


KINDS: dict[Mode, Kind] = {
    Mode.NATIVE: Kind("v1", "Pod"),
    Mode.APACHE: Kind(APACHE_API_VERSION, "SparkApplication"),
    Mode.KUBEFLOW: Kind(KUBEFLOW_API_VERSION, "SparkApplication"),
}


@dataclass(frozen=True, repr=False)
class App:
    """One application as observed: its owner object, driver and state."""

    name: str
    namespace: str
    mode: Mode
    owner: Obj
    state: AppState
    app_id: str | None = None
    driver_pod: str | None = None
    created: datetime | None = None

    @property
    def owner_kind(self) -> Kind:
        return KINDS[self.mode]

    def __repr__(self) -> str:
        """One short line (a notebook shows this, not the owner object with its managedFields:
        that stays in ``owner``)."""
        st = self.state
        reason = f", reason={str(st.reason)!r}" if st.reason else ""
        return (
            f"App(name={self.name!r}, namespace={self.namespace!r}, mode={self.mode.value!r}, "
            f"phase={st.phase.value!r}{reason})"
        )

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly dict (for ``-o json|yaml``)."""
        st = self.state
        return {
            "name": self.name,
            "namespace": self.namespace,
            "mode": self.mode.value,
            "appId": self.app_id,
            "driverPod": self.driver_pod,
            "created": self.created.isoformat() if self.created else None,
            "state": {
                "phase": st.phase.value,
                "reason": str(st.reason) if st.reason else None,
                "message": st.message,
                "preemptor": st.preemptor,
                "executors": dict(st.executors),
                "since": st.since.isoformat() if st.since else None,
                "operatorState": st.raw_state,
            },
        }


@dataclass(frozen=True)
class Description:
    """What ``sparkplane describe`` prints: the app (name, namespace, mode, app id, driver,
    created, state), the objects it owns (``Kind/name``) and its events, oldest first."""

    app: App
    objects: tuple[str, ...]
    events: tuple[Event, ...]

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly dict (the app's summary, the objects, the raw events)."""
        return {
            **self.app.summary(),
            "objects": list(self.objects),
            "events": [dict(e.raw) for e in self.events],
        }


def native_name(driver_pod_name: str) -> str:
    """The app name of a native driver pod (``<prefix>-driver`` -> ``<prefix>``)."""
    return driver_pod_name.removesuffix("-driver")


def driver_candidates(app_name: str) -> list[str]:
    """Driver pod names to try for a native app name (``name-driver``, then ``name``)."""
    return [f"{app_name}-driver", app_name]


def is_native_driver(pod: Obj) -> bool:
    """A driver pod submitted natively: not owned by a custom resource the operator serves
    (a SparkApplication, or a SparkConnect whose server it is)."""
    meta = pod.get("metadata", {})
    if meta.get("labels", {}).get(ROLE_LABEL) != DRIVER_ROLE:
        return False
    refs = meta.get("ownerReferences", [])
    return not any(ref.get("kind") in (SPARK_APPLICATION, SPARK_CONNECT) for ref in refs)
