"""Reading a SparkApplication's ``spark.kubernetes.{driver,executor}.podTemplateFile``.

Owns the one rule that keeps an app's author from making the operator read files on its own
machine (a Secret mounted in the operator pod, a service account token...) and copy them into a
pod that author can read: a template file is read only from the directory the operator was
started with (``sparkplane operator run --pod-template-dir DIR``, OperatorSettings
``pod_template_dir``), after resolving symlinks; with no directory (the default) nothing is
read and the app fails with a message pointing at ``spec.driverSpec.podTemplateSpec``. Files
go through the bounded YAML reader (:mod:`sparkplane.yamlio`). Called by the runner's
``observe``; the lexical check is :func:`sparkplane.operator.core.driver.template_path_problem`.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from sparkplane import yamlio
from sparkplane.errors import ValidationError
from sparkplane.operator.core.driver import template_path_problem

log = logging.getLogger(__name__)
Obj = dict[str, Any]
#: Pod templates are small; a larger file is refused without being read to its end.
TEMPLATE_LIMITS = yamlio.Limits(max_bytes=256 * 1024)


@dataclass(frozen=True)
class TemplateDirLoader:
    """Callable ``path -> pod template | None`` confined to ``directory`` (None = read none)."""

    directory: str | None = None

    def __call__(self, path: str) -> Obj | None:
        why = template_path_problem(path, self.directory)
        if why:
            log.warning("refusing pod template file: %s", why)
            return None
        assert self.directory is not None
        local = path.removeprefix("file://")
        real, root = os.path.realpath(local), os.path.realpath(self.directory)
        if os.path.commonpath([real, root]) != root:
            log.warning("refusing pod template file %r: it resolves outside %s", path, root)
            return None
        try:
            return yamlio.load_mapping_file(
                real, what="a pod template", example="a Pod manifest", limits=TEMPLATE_LIMITS
            )
        except ValidationError as exc:
            log.warning("cannot use pod template file %r: %s", path, exc)
            return None
