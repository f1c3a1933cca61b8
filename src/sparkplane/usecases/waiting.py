"""Waiting on applications: the ``until`` conditions and waiting for many apps at once.

:func:`condition` turns ``"finished"``/``"running"``/``"pending"``/a phase/a predicate into a
test on :class:`~sparkplane.model.phase.AppState` (an unknown word is a ValidationError,
exit 2, not a traceback). :func:`as_completed` yields apps from one shared
:class:`~sparkplane.usecases.tracker.Tracker` as each reaches its condition, whatever their
number: no poll per app. Called by :class:`sparkplane.SparkPlane` (``wait``, ``as_completed``,
``wait_all``). Never prints.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterable, Iterator

from sparkplane.errors import AppNotFoundError, Problem, TimeoutExpired, ValidationError
from sparkplane.model.apps import App
from sparkplane.model.phase import AppPhase, AppState, is_finished
from sparkplane.usecases.tracker import Tracker

Until = str | AppPhase | Callable[[AppState], bool]
WORDS = ("finished", "running", "pending", "succeeded", "failed")


def condition(until: Until) -> Callable[[AppState], bool]:
    """The test for ``until``; ``running`` is also met by an app that already finished."""
    if callable(until):
        return until
    if until in ("finished", "done"):
        return is_finished
    try:
        phase = until if isinstance(until, AppPhase) else AppPhase(str(until).capitalize())
    except ValueError:
        raise ValidationError(
            [Problem("--for", f"unknown condition {until!r}", f"one of {', '.join(WORDS)}")],
            subject="wait condition",
        ) from None
    if phase in (AppPhase.PENDING, AppPhase.RUNNING):
        return lambda s: (
            s.phase == phase
            or is_finished(s)
            or (phase is AppPhase.PENDING and s.phase is AppPhase.RUNNING)
        )
    return lambda s: s.phase == phase


def as_completed(
    tracker: Tracker,
    refs: Iterable[tuple[str, str]],
    until: Until = "finished",
    *,
    timeout: float | None = None,
    fetch: Callable[[str, str], App] | None = None,
) -> Iterator[App]:
    """Yield each ``(namespace, name)`` app once it satisfies ``until``, in the order they do.

    ``fetch`` looks up an app the tracker has not seen yet (AppNotFoundError if it does not
    exist). TimeoutExpired names the apps still waiting when ``timeout`` seconds pass."""
    wanted = condition(until)
    waiting = set(refs)
    changes: queue.Queue[App] = queue.Queue()
    unsubscribe = tracker.subscribe(changes.put)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        for ns, name in sorted(waiting):
            known = tracker.get(ns, name)
            if known is None and fetch is not None:
                known = fetch(name, ns)
            if known is None:
                raise AppNotFoundError(f"no Spark application {name!r} in namespace {ns}")
            changes.put(known)
        while waiting:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                names = ", ".join(f"{ns}/{n}" for ns, n in sorted(waiting))
                raise TimeoutExpired(f"still waiting after {timeout:.0f}s for: {names}")
            try:
                app = changes.get(timeout=min(left, 1.0) if left is not None else 1.0)
            except queue.Empty:
                continue
            key = (app.namespace, app.name)
            current = tracker.get(*key) or app
            if key in waiting and wanted(current.state):
                waiting.discard(key)
                yield current
    finally:
        unsubscribe()


def watch(
    tracker: Tracker, namespace: str | None, *, timeout: float | None = None
) -> Iterator[App]:
    """Every app of the tracker, then each app whose state changes, until ``timeout``."""
    changes: queue.Queue[App] = queue.Queue()
    unsubscribe = tracker.subscribe(changes.put)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        yield from tracker.apps(namespace)
        while deadline is None or time.monotonic() < deadline:
            left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            try:
                yield changes.get(timeout=left)
            except queue.Empty:
                continue
    finally:
        unsubscribe()
