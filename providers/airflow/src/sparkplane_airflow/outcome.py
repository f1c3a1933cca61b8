"""What a finished app means to Airflow: the XCom it leaves and whether a retry can help.

Pure data: :func:`result` turns a sparkplane :class:`~sparkplane.App` into the dict that crosses
the trigger event and ends in XCom; :func:`verdict` says what the task does with it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from sparkplane import App

#: reasons a retry can fix: the app was pushed out, not wrong (the cluster's doing)
RETRY_REASONS = frozenset({"Preempted", "Evicted", "NodeLost", "DriverMissing", "Unknown"})
#: reasons a retry cannot fix: the spec, image or code is wrong, or a person stopped it
NO_RETRY_REASONS = frozenset(
    {
        "InvalidImageName",
        "ErrImagePull",
        "ImagePullBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "SubmissionFailed",
        "OOMKilled",
        "Killed",
    }
)

Verdict = Literal["success", "retry", "fail"]


def result(app: App, submission_id: str | None = None) -> dict[str, Any]:
    """The app as XCom holds it (JSON-serialisable)."""
    return {
        "name": app.name,
        "namespace": app.namespace,
        "mode": str(app.mode),
        "app_id": app.app_id,
        "driver_pod": app.driver_pod,
        "state": str(app.state.phase),
        "reason": str(app.state.reason),
        "message": app.state.message,
        "submission_id": submission_id,
    }


def verdict(state: str, reason: str, *, no_retry: Collection[str] = NO_RETRY_REASONS) -> Verdict:
    """``success``; ``fail`` (AirflowFailException: no retry) for a reason in ``no_retry``;
    else ``retry`` (an AirflowException: the task's ``retries`` apply, as to any failure)."""
    if state == "Succeeded":
        return "success"
    return "fail" if reason in no_retry else "retry"


def summary(event: dict[str, Any]) -> str:
    """One line for the task log: ``ns/name Failed (OOMKilled: message)``."""
    why = ": ".join(p for p in (event.get("reason"), event.get("message")) if p)
    return f"{event['namespace']}/{event['name']} {event['state']}" + (f" ({why})" if why else "")
