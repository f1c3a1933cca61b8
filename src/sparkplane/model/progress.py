"""A Spark application's progress, pure: its jobs and stages as the driver's REST API reports
them (``/api/v1/applications/<id>/jobs`` and ``/stages``), as data a notebook shows.

``session.ui()`` returns a :class:`SparkProgress`: its ``url`` (the Spark UI through the
session's port-forward), ``jobs`` and ``stages`` (newest first, as the REST API lists them),
``counts()`` by status; ``str()`` is a short text table and ``_repr_html_`` the same as HTML
with the UI's link, which is what Jupyter displays.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sparkplane.model.session import spark_time

Obj = dict[str, Any]
#: Rows ``str()`` and the HTML show of each list (the data holds them all).
SHOWN = 5


@dataclass(frozen=True)
class Job:
    """One Spark job: ``status`` is the REST API's (RUNNING, SUCCEEDED, FAILED, UNKNOWN)."""

    id: int
    name: str
    status: str
    tasks_done: int
    tasks: int
    stages_done: int
    stages: int
    submitted: datetime | None
    completed: datetime | None


@dataclass(frozen=True)
class Stage:
    """One stage attempt: ``status`` is ACTIVE, COMPLETE, PENDING, SKIPPED or FAILED."""

    id: int
    attempt: int
    name: str
    status: str
    tasks_done: int
    tasks: int


def _int(raw: Obj, key: str) -> int:
    value = raw.get(key)
    return int(value) if isinstance(value, int | float) else 0


def job(raw: Obj) -> Job:
    """A job of the REST API's ``/jobs`` list."""
    return Job(
        id=_int(raw, "jobId"),
        name=str(raw.get("description") or raw.get("name") or ""),
        status=str(raw.get("status") or "UNKNOWN"),
        tasks_done=_int(raw, "numCompletedTasks"),
        tasks=_int(raw, "numTasks"),
        stages_done=_int(raw, "numCompletedStages"),
        stages=len(raw.get("stageIds") or []),
        submitted=spark_time(raw.get("submissionTime")),
        completed=spark_time(raw.get("completionTime")),
    )


def stage(raw: Obj) -> Stage:
    """A stage attempt of the REST API's ``/stages`` list."""
    return Stage(
        id=_int(raw, "stageId"),
        attempt=_int(raw, "attemptId"),
        name=str(raw.get("name") or ""),
        status=str(raw.get("status") or "UNKNOWN"),
        tasks_done=_int(raw, "numCompleteTasks"),
        tasks=_int(raw, "numTasks"),
    )


@dataclass(frozen=True)
class SparkProgress:
    """An application's jobs and stages at one moment, and where its UI is (``url``: None
    when no port-forward was asked for)."""

    app_id: str
    jobs: tuple[Job, ...]
    stages: tuple[Stage, ...]
    url: str | None = None

    @classmethod
    def from_rest(
        cls, app_id: str, jobs: Iterable[Obj], stages: Iterable[Obj], url: str | None = None
    ) -> SparkProgress:
        return cls(app_id, tuple(map(job, jobs)), tuple(map(stage, stages)), url)

    def counts(self) -> dict[str, int]:
        """Jobs by status, e.g. ``{"SUCCEEDED": 3, "RUNNING": 1}``."""
        return dict(Counter(j.status for j in self.jobs))

    def _rows(self) -> list[list[str]]:
        jobs = [
            [f"job {j.id}", j.status, f"{j.tasks_done}/{j.tasks} tasks", j.name]
            for j in self.jobs[:SHOWN]
        ]
        stages = [
            [f"stage {s.id}.{s.attempt}", s.status, f"{s.tasks_done}/{s.tasks} tasks", s.name]
            for s in self.stages[:SHOWN]
        ]
        return jobs + stages

    def _title(self) -> str:
        counts = ", ".join(f"{n} {status.lower()}" for status, n in self.counts().items())
        return f"{self.app_id}: {len(self.jobs)} jobs ({counts or 'none yet'})"

    def __str__(self) -> str:
        lines = [self._title(), *("  ".join(row) for row in self._rows())]
        if self.url:
            lines.insert(1, f"Spark UI: {self.url}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """What Jupyter shows: the UI's link and the newest jobs and stages."""
        link = (
            f'<a href="{html.escape(self.url)}" target="_blank">Spark UI</a> ' if self.url else ""
        )
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self._rows()
        )
        return f"<div>{link}{html.escape(self._title())}<table>{cells}</table></div>"
