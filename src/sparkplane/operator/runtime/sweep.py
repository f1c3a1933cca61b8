"""The sweeper: deletes objects of attempts that are over, whatever left them behind.

The loop commits a status before it acts, so a crash (or a lost lease) between the commit and
the deletes can leave an attempt's ConfigMaps, Services or driver pod behind, and a replica
frozen in the microseconds between its lease check and a create can still create one late.
The sweeper is the backstop for both. An object is a leftover when its controller is a
SparkApplication this operator serves (same uid; Apache's or Kubeflow's v1beta2, whose state is
its ``status.sparkplane``) and either that application is
``ResourceReleased`` or the object's ``spark-app-selector`` is not the current attempt's app ID
(restarted, or created for an attempt already finished). Objects younger than ``min_age`` are
left alone (a cache may not show the attempt that made them yet); objects whose owner is gone
are the garbage collector's. Pods are deleted behind a uid precondition.

Runs on the leader when it takes the lease and every ``sweep_seconds``. :func:`leftovers` is
pure; :func:`sweep` reads the ConfigMaps and Services (one LIST per kind and namespace, by the
operator's label) and the pod index, and deletes through the fenced gateway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Protocol

from sparkplane.errors import ConflictError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.operator.core import states as st
from sparkplane.operator.core.kubeflow_status import INTERNAL
from sparkplane.operator.core.naming import OPERATOR_NAME_LABEL, attempt_app_id, attempt_of
from sparkplane.operator.kinds.kubeflow_io import KUBEFLOW_APP
from sparkplane.vocab import (
    APP_SELECTOR_LABEL,
    KUBEFLOW_API_VERSION,
    SPARK_APPLICATION,
    controller_of,
    parse_time,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]
APP = SPARK_APPLICATION


class Host(Protocol):
    """What a sweep needs from the process running it (the runner's ``Operator``).

    ``name`` (the operator's, for its label), ``namespaces`` (watched; None: all), ``reader``
    (unfenced reads), ``kube`` (the fenced gateway the deletes go through), ``clock``,
    ``current`` (the newest copy of a SparkApplication), ``driver_pods`` (the pod index's
    drivers) and ``deleting`` (told a pod's uid before the sweeper deletes it, so its deletion is
    not archived as someone else's).
    """

    @property
    def name(self) -> str: ...

    @property
    def namespaces(self) -> tuple[str | None, ...]: ...

    @property
    def reader(self) -> Kube: ...

    @property
    def kube(self) -> Kube: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    def current(self, key: tuple[str, str, str]) -> Obj | None: ...

    def driver_pods(self) -> list[Obj]: ...

    def deleting(self, uid: str) -> None: ...


def _owner(obj: Obj) -> dict[str, Any] | None:
    """``obj``'s controller reference when its controller is a SparkApplication."""
    ref = controller_of(obj)
    return dict(ref) if ref is not None and ref.get("kind") == APP else None


def leftovers(
    objects: Iterable[Obj], app_of: Callable[[str, str], Obj | None], now: datetime, min_age: float
) -> list[Obj]:
    """The objects among ``objects`` that belong to an attempt that is over."""
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        ref = _owner(obj)
        born = parse_time(meta.get("creationTimestamp"))
        if ref is None or meta.get("deletionTimestamp") or born is None:
            continue
        if (now - born).total_seconds() < min_age:
            continue
        namespace = str(meta.get("namespace"))
        cr = app_of(namespace, str(ref.get("name")))
        if cr is None or cr["metadata"].get("uid") != ref.get("uid"):
            continue
        status = cr.get("status") or {}
        current = attempt_app_id(str(cr["metadata"]["name"]), namespace, attempt_of(status))
        selector = (meta.get("labels") or {}).get(APP_SELECTOR_LABEL)
        if st.current_summary(status) == st.AppStateSummary.RESOURCE_RELEASED or (
            selector and selector != current
        ):
            out.append(obj)
    return out


def run_round(host: Host, min_age: float) -> None:
    """One best-effort round (errors are logged; the next round tries again)."""
    try:
        swept = sweep(host, min_age)
    except Exception as exc:
        log.warning("sweep failed: %s", exc)
        return
    if swept:
        log.info("swept %d leftover object(s) of finished attempts", swept)


def sweep(host: Host, min_age: float) -> int:
    """One round over the operator's namespaces; returns how many objects it deleted."""
    selector = f"{OPERATOR_NAME_LABEL}={host.name}"
    found: list[Obj] = []
    for namespace in host.namespaces:
        for kind in ("ConfigMap", "Service"):
            found += host.reader.list("v1", kind, namespace, label_selector=selector)
    found += [{**p, "apiVersion": "v1", "kind": "Pod"} for p in host.driver_pods()]

    def app_of(namespace: str, name: str) -> Obj | None:
        return host.current((APP, namespace, name))

    def kubeflow_app_of(namespace: str, name: str) -> Obj | None:
        """A v1beta2 resource as the state machine sees it (its ``status.sparkplane``)."""
        cr = host.current((KUBEFLOW_APP, namespace, name))
        return None if cr is None else {**cr, "status": (cr.get("status") or {}).get(INTERNAL)}

    apache: list[Obj] = []
    kubeflow: list[Obj] = []
    for obj in found:
        owned = (_owner(obj) or {}).get("apiVersion") == KUBEFLOW_API_VERSION
        (kubeflow if owned else apache).append(obj)
    now = host.clock()
    swept = leftovers(apache, app_of, now, min_age) + leftovers(
        kubeflow, kubeflow_app_of, now, min_age
    )
    deleted = 0
    for obj in swept:
        meta = obj["metadata"]
        uid = meta.get("uid") if obj["kind"] == "Pod" else None
        if uid:  # an older attempt's pod: its log would overwrite the app's newer archive
            host.deleting(uid)
        try:
            host.kube.delete("v1", obj["kind"], meta["name"], meta["namespace"], uid=uid)
            deleted += 1
        except (NotFoundError, ConflictError):
            pass
    return deleted
