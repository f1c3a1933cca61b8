"""Kubernetes Events sparkplane's client writes about a native application (issue 23).

A native app has no operator to record what happened to it, so the client does it on the
driver pod: ``Submitted`` when ``submit`` created it, ``Killed`` when ``kill`` deletes it
(``kubectl describe pod`` and ``sparkplane events`` show them). Best effort: an Event the API
refuses is logged at debug level and never fails the verb. The client identity's RBAC allows
``create`` on core events for this (security/rules.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sparkplane.errors import KubeError
from sparkplane.kube import Kube
from sparkplane.vocab import format_instant

log = logging.getLogger(__name__)
COMPONENT = "sparkplane"
SUBMITTED = "Submitted"
KILLED = "Killed"


def event_on(obj: Mapping[str, Any], reason: str, message: str) -> dict[str, Any]:
    """A Normal core/v1 Event about ``obj``, reported by :data:`COMPONENT`."""
    meta = obj["metadata"]
    now = format_instant(datetime.now(UTC))
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion", "v1"),
            "kind": obj.get("kind", "Pod"),
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid"),
        },
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


def record(kube: Kube, obj: Mapping[str, Any], reason: str, message: str) -> None:
    """Post an Event about ``obj``; never raises (see the module doc)."""
    try:
        kube.create(event_on(obj, reason, message))
    except KubeError as exc:
        log.debug("could not record %s on %s: %s", reason, obj["metadata"]["name"], exc)
