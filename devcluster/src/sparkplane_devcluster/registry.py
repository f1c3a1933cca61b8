"""The machine's list of dev clusters, so one cluster's ``up`` sees what the others hold.

One small file per cluster in :func:`root` (``<tmp>/sparkplane-dev-clusters``, shared by every
user of the machine) names the cluster's state dir; what it holds (port base, node index) is read
from that state dir's ``state.json``, which exists from the start of ``up`` to the end of
``down``. An entry whose state is gone (``down``, or a state dir deleted) is stale and removed on
the next read; a cluster that crashed keeps its claim until its ``down`` or ``up`` cleans up what
it left. :func:`locked` serialises the check-and-claim of concurrent ``up`` runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster.alloc import Claim, legacy_index

STATE_FILE = "state.json"


def root() -> Path:
    """Where the entries live (one directory per machine, like the loopback ports)."""
    return Path(tempfile.gettempdir()) / "sparkplane-dev-clusters"


def _ensure(where: Path) -> Path:
    try:
        where.mkdir(parents=True, exist_ok=True)
        if where.stat().st_uid == os.geteuid():
            where.chmod(0o1777)  # every user's clusters share the loopback ports
    except OSError as exc:
        raise DevClusterError(
            f"cannot use the dev-cluster registry {where}: {exc.strerror}; make it writable "
            f"(`chmod 1777 {where}`)"
        ) from exc
    return where


def _entry(where: Path, state_dir: Path) -> Path:
    key = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:20]
    return where / f"{key}.json"


@contextmanager
def locked(where: Path | None = None) -> Iterator[Path]:
    """Hold the registry's lock (between reading the claims and writing one's own)."""
    where = _ensure(where or root())
    try:  # read-only is enough for flock, and another user's lock file is readable
        fd = os.open(where / ".lock", os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as exc:
        raise DevClusterError(
            f"cannot open the dev-cluster registry's lock {where / '.lock'}: {exc.strerror}"
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield where
    finally:
        os.close(fd)  # releases the lock


def register(state_dir: Path, where: Path | None = None) -> None:
    """Name ``state_dir`` in the registry (its ``state.json`` says what it holds)."""
    where = _ensure(where or root())
    entry = _entry(where, state_dir)
    entry.write_text(json.dumps({"state_dir": str(state_dir.resolve())}))


def unregister(state_dir: Path, where: Path | None = None) -> None:
    _entry(where or root(), state_dir).unlink(missing_ok=True)


def claims(exclude: Path | None = None, where: Path | None = None) -> list[Claim]:
    """Every other registered cluster with a state (stale entries are removed)."""
    where = where or root()
    mine = exclude.resolve() if exclude is not None else None
    found = []
    for entry in sorted(where.glob("*.json")) if where.is_dir() else []:
        try:
            state_dir = Path(json.loads(entry.read_text())["state_dir"])
            state = json.loads((state_dir / STATE_FILE).read_text())
        except FileNotFoundError:
            try:
                entry.unlink(missing_ok=True)  # its cluster was taken down or deleted
            except OSError:
                pass  # another user's entry: theirs to remove
            continue
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written, or not ours to judge: ignore it
        if state_dir == mine or "port_base" not in state:
            continue
        base = int(state["port_base"])
        index = state.get("node_index")
        if index is None and state.get("real_node"):  # started by an older sparkplane
            index = legacy_index(base)
        found.append(Claim(state_dir, base, int(index) if index else None))
    return found
