"""A session's progress from the driver's REST API (pure): jobs, stages, what a notebook shows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sparkplane.model.progress import SHOWN, SparkProgress
from sparkplane.model.session import short

# the shapes Spark 4.0.1's /api/v1/applications/<id>/jobs and /stages answer (trimmed)
JOBS = [
    {
        "jobId": 1,
        "name": "collect at SparkConnectPlanExecution.scala:130",
        "description": "Spark Connect - session_id: ...",
        "submissionTime": "2026-11-28T11:59:30.250GMT",
        "stageIds": [1, 2],
        "status": "RUNNING",
        "numTasks": 8,
        "numCompletedTasks": 3,
        "numCompletedStages": 1,
    },
    {
        "jobId": 0,
        "name": "collect at SparkConnectPlanExecution.scala:130",
        "submissionTime": "2026-11-28T11:59:00.000GMT",
        "completionTime": "2026-11-28T11:59:02.000GMT",
        "stageIds": [0],
        "status": "SUCCEEDED",
        "numTasks": 2,
        "numCompletedTasks": 2,
        "numCompletedStages": 1,
    },
]
STAGES = [
    {"stageId": 2, "attemptId": 0, "name": "collect", "status": "ACTIVE", "numTasks": 4,
     "numCompleteTasks": 1},
    {"stageId": 0, "attemptId": 0, "name": "collect", "status": "COMPLETE", "numTasks": 2,
     "numCompleteTasks": 2},
]  # fmt: skip


def test_jobs_and_stages_are_read_as_data() -> None:
    found = SparkProgress.from_rest("app-1", JOBS, STAGES, "http://localhost:4041")
    running, done = found.jobs
    assert (running.id, running.status, running.tasks_done, running.tasks) == (1, "RUNNING", 3, 8)
    assert (running.stages_done, running.stages) == (1, 2)
    assert running.name.startswith("Spark Connect")  # the description wins over the call site
    assert done.completed == datetime(2026, 11, 28, 11, 59, 2, tzinfo=UTC)
    assert [(s.id, s.status, s.tasks_done) for s in found.stages] == [
        (2, "ACTIVE", 1),
        (0, "COMPLETE", 2),
    ]
    assert found.counts() == {"RUNNING": 1, "SUCCEEDED": 1}


def test_text_and_html_show_the_link_and_the_newest_rows() -> None:
    many = [{**JOBS[1], "jobId": n} for n in range(SHOWN + 3)]
    found = SparkProgress.from_rest("app-1", many, STAGES, "http://localhost:4041")
    text = str(found).splitlines()
    assert text[0] == f"app-1: {SHOWN + 3} jobs ({SHOWN + 3} succeeded)"
    assert text[1] == "Spark UI: http://localhost:4041"
    assert len(text) == 2 + SHOWN + len(STAGES)
    page = found._repr_html_()
    assert '<a href="http://localhost:4041"' in page and page.count("<tr>") == SHOWN + 2


def test_a_session_without_jobs_and_odd_fields() -> None:
    found = SparkProgress.from_rest("app-2", [{"status": None, "numTasks": "x"}], [])
    assert found.jobs[0].status == "UNKNOWN" and found.jobs[0].tasks == 0
    assert "Spark UI" not in str(found)
    assert str(SparkProgress.from_rest("app-3", [], [])) == "app-3: 0 jobs (none yet)"


def test_short_durations() -> None:
    assert [short(timedelta(seconds=s)) for s in (-3, 42, 187, 7500)] == [
        "0s",
        "42s",
        "3m07s",
        "2h05m",
    ]
