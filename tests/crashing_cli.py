"""The sparkplane CLI, SIGKILLed right after one step of a submission: a real crash, made here.

``python -m tests.crashing_cli STEP ARGS...`` (the repository root on the path) wraps the gateway's
:meth:`sparkplane.kube.Kube.create`, through which every object of a submission is created, and
runs ``sparkplane ARGS...`` in this process. Right after STEP it kills the process with SIGKILL,
leaving exactly what a crash leaves (no rollback, no ``finally``):

* ``pre-resources``: the objects created before the owner (a submission's pre-resources, marked
  with the pending-owner annotation) exist, the owner does not;
* ``owner``: the owner (the driver pod, which announces its dependents) exists, no dependent;
* ``dependent:N``: the first N dependents exist, in the order the owner announces them (the
  gateway creates them concurrently; here each waits for the one before it, so the N that
  exist are always the same N).

Used by the crash-safety tests (tests/integration/test_crash_safety.py, test_deploy_sets.py)
and ``benchmarks/reliability.py``; production code has no fault point.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparkplane.kube.client import Kube
from sparkplane.vocab import DEPENDENTS_KEY, PENDING_OWNER_KEY

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("pre-resources", "owner", "dependent:N")
Ref = tuple[str, str, str]


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


class _KillAfter:
    """The wrapper of ``Kube.create`` that kills the process right after ``step``."""

    def __init__(self, step: str) -> None:
        kind, _, number = step.partition(":")
        if kind not in ("pre-resources", "owner", "dependent") or (kind == "dependent") != (
            number.isdigit() and int(number) > 0
        ):
            raise SystemExit(f"crashing_cli: unknown step {step!r} (one of {', '.join(STEPS)})")
        self.kind, self.number = kind, int(number or 0)
        self.pre_resources = 0
        self.announced: list[Ref] = []
        self.created = 0  # dependents created, in announced order
        self.turn = threading.Condition()

    def wrap(self, create: Any) -> Any:
        def wrapped(kube: Kube, obj: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            notes = _annotations(obj)
            if DEPENDENTS_KEY in notes:
                return self._owner(create, kube, obj, notes[DEPENDENTS_KEY], args, kwargs)
            if PENDING_OWNER_KEY in notes:
                made = create(kube, obj, *args, **kwargs)
                self.pre_resources += 1
                return made
            ref = (str(obj.get("apiVersion")), str(obj.get("kind")), _name(obj))
            if self.kind == "dependent" and ref in self.announced:
                return self._dependent(create, kube, obj, ref, args, kwargs)
            return create(kube, obj, *args, **kwargs)

        return wrapped

    def _owner(
        self, create: Any, kube: Kube, obj: Any, refs: str, args: Sequence[Any], kwargs: Any
    ) -> Any:
        if self.kind == "pre-resources" and self.pre_resources:
            _die()
        made = create(kube, obj, *args, **kwargs)
        self.announced = [(str(a), str(k), str(n)) for a, k, n in json.loads(refs)]
        if self.kind == "owner":
            _die()
        return made

    def _dependent(
        self, create: Any, kube: Kube, obj: Any, ref: Ref, args: Sequence[Any], kwargs: Any
    ) -> Any:
        place = self.announced.index(ref) + 1
        with self.turn:
            self.turn.wait_for(lambda: self.created >= place - 1)
        try:
            made = create(kube, obj, *args, **kwargs)
        except BaseException:
            self._done(place)
            raise
        if place == self.number:
            _die()  # before the next one may start
        self._done(place)
        return made

    def _done(self, place: int) -> None:
        with self.turn:
            self.created = max(self.created, place)
            self.turn.notify_all()


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def run(
    step: str | None, *args: str, env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``sparkplane ARGS`` in a child process, killed right after ``step`` (None: not killed).
    The repository root goes on ``PYTHONPATH`` so the child finds this module from any cwd."""
    command = ["-m", "tests.crashing_cli", step] if step else ["-m", "sparkplane.cli"]
    child = dict(env)
    child["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, *command, *args],
        capture_output=True,
        text=True,
        env=child,
        timeout=timeout,
        check=False,
    )


def main(argv: Sequence[str]) -> None:
    if not argv:
        raise SystemExit(f"usage: python -m tests.crashing_cli STEP ARGS... ({', '.join(STEPS)})")
    plan = _KillAfter(argv[0])
    Kube.create = plan.wrap(Kube.create)  # type: ignore[method-assign]
    from sparkplane.cli.main import main as sparkplane

    sparkplane(list(argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
