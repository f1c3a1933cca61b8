"""Small helpers shared by integration tests (polling, fixtures' clean-up, pod builders)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from sparkplane.errors import NotFoundError
from sparkplane.kube import Kube

T = TypeVar("T")


def wait_for(check: Callable[[], T], *, timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll ``check`` until it returns something truthy; fail the test naming ``what``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def delete_namespace(kube: Kube, name: str) -> None:
    try:
        kube.delete("v1", "Namespace", name)
    except NotFoundError:
        pass


def pod(
    name: str,
    *,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    cpu: str = "100m",
    priority_class: str | None = None,
    node: str | None = None,
    tolerate: str | None = None,
) -> dict[str, Any]:
    """A minimal pod; ``sim.sparkplane.io/*`` annotations drive what KWOK does with it."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if tolerate:
        spec["tolerations"] = [{"key": tolerate, "operator": "Exists", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}, "labels": labels or {}},
        "spec": spec,
    }
