"""The dynamic configuration: a ConfigMap in the operator's namespace, applied without a restart.

Apache's operator reloads some of its settings ("hot properties") from a ConfigMap when
``spark.kubernetes.operator.dynamicConfig.enabled`` is set; sparkplane's does the same with
``sparkplane operator run --dynamic-config`` (Helm value ``dynamicConfig.enabled``). One
informer watches that one ConfigMap (by name: the shipped Role may read no other). Each version
of its data is laid over the settings the process started with
(:func:`sparkplane.operator.core.settings.apply_dynamic`, the one place settings are merged);
the result goes to the operator's ``reconfigure`` (watched namespaces, reconcile interval,
label selector). A
bad value is logged as a warning naming its key, and the operator keeps the settings it runs
with; keys it does not apply are logged once per version. Deleting the ConfigMap brings the
started settings back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sparkplane.kube import Kube
from sparkplane.kube.informer import Informer
from sparkplane.operator.core.settings import OperatorSettings, apply_dynamic

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class DynamicConfig:
    """Watches ``settings.dynamic_config_name`` in ``settings.lease_namespace``."""

    def __init__(
        self,
        kube: Kube,
        base: OperatorSettings,
        reconfigure: Callable[[OperatorSettings], None],
    ) -> None:
        self.base, self.reconfigure = base, reconfigure
        self.name, self.namespace = base.dynamic_config_name, base.lease_namespace
        self.informer = Informer(
            kube,
            "v1",
            "ConfigMap",
            namespace=self.namespace,
            field_selector=f"metadata.name={self.name}",
        )
        self.applied: dict[str, str] | None = None  # the data last applied (None: the base)
        self.problems: tuple[str, ...] = ()  # of the newest version seen (tests read them)
        self._lock = threading.Lock()  # one version applied at a time

    def start(self, wait_synced: float) -> None:
        self.informer.add_handler(self._on_event)
        self.informer.start()
        self.informer.wait_synced(wait_synced)

    def stop(self) -> None:
        self.informer.stop()

    def _on_event(self, event: str, obj: Obj) -> None:
        if (obj.get("metadata") or {}).get("name") != self.name:
            return
        data = (
            {}
            if event == "DELETED"
            else {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        )
        with self._lock:
            if data == self.applied:
                return
            outcome = apply_dynamic(self.base, data)
            self.problems = outcome.problems
            where = f"ConfigMap {self.namespace}/{self.name}"
            for key in outcome.ignored:
                log.warning("%s: %s is not a dynamic setting; ignored", where, key)
            if outcome.problems:
                for problem in outcome.problems:
                    log.warning("%s: %s; the previous settings stay", where, problem)
                return
            try:
                self.reconfigure(outcome.settings)
            except Exception as exc:  # a namespace whose caches cannot sync (RBAC): keep going
                log.warning("%s: cannot apply it: %s; the previous settings stay", where, exc)
                self.problems = (str(exc),)
                return
            self.applied = data
            log.info("%s applied (%s)", where, ", ".join(sorted(data)) or "started settings")
