"""Event logs on a local disk: where the pruner may delete them, and nowhere else.

The directory comes only from the configuration of the process that prunes (the admin running
``sparkplane gc``, the operator): its settings' ``event_log_root`` (``SPARKPLANE_EVENT_LOG_ROOT``,
``off`` for none), by default
:data:`~sparkplane.history.server.DEFAULT_ROOT`, the root of the per-namespace stores
``sparkplane history up`` makes. A namespace's event logs are ``<root>/<namespace>/``: the
namespace is that of the Kubernetes object holding the archive, never a name from its content,
and never the namespace's own ``sparkplane-history`` ConfigMap (which its tenants write).
Deletions stay inside ``<root>/<namespace>``: symlinks and escapes are refused. Called by
:func:`sparkplane.history.logs.prune`.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from sparkplane.history.server import DEFAULT_ROOT

log = logging.getLogger(__name__)
OFF = ("off", "none", "false", "0")
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_APP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def configured_root(value: str) -> Path | None:
    """The event-log root a setting names (empty: the default); None when turned off or not an
    absolute path."""
    raw = value.strip()
    if raw.lower() in OFF and raw:
        return None
    path = Path(raw or DEFAULT_ROOT)
    return path if path.is_absolute() else None


def namespace_dir(root: Path, namespace: str) -> Path | None:
    """``<root>/<namespace>`` when it is a real directory inside ``root`` (no symlink on the
    way, no escape); None otherwise."""
    if not _NAMESPACE.match(namespace):
        return None
    try:
        real_root = root.resolve(strict=True)
    except OSError:
        return None
    where = root / namespace
    if where.is_symlink() or not where.is_dir():
        return None
    return where if where.resolve() == real_root / namespace else None


def _matches(entry: str, app_ids: list[str]) -> bool:
    name = entry.removeprefix("eventlog_v2_")
    return any(name == i or name.startswith((f"{i}.", f"{i}_")) for i in app_ids)


def remove_event_logs(root: Path | None, namespace: str, app_ids: Iterable[str]) -> list[str]:
    """Delete the event logs of ``app_ids`` in ``<root>/<namespace>`` (Spark's names: the app id,
    ``<id>.inprogress``, ``<id>_<attempt>``, ``eventlog_v2_<id>/``); returns the names removed.
    A symlink is never followed nor removed."""
    ids = [i for i in app_ids if i and _APP_ID.match(i)]
    where = namespace_dir(root, namespace) if root is not None and ids else None
    if where is None:
        return []
    removed = []
    for entry in where.iterdir():
        if not _matches(entry.name, ids):
            continue
        if entry.is_symlink():
            log.warning("not removing %s: a symbolic link in the event-log directory", entry)
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry.name)
    return removed
