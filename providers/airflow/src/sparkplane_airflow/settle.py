"""What the task does with the trigger's event: XCom, the driver log, success or which failure.

A finished app's :func:`sparkplane_airflow.outcome.verdict` picks the exception: a reason a retry
cannot fix raises :class:`AirflowFailException` (the task fails at once, whatever its
``retries``), anything else :class:`AirflowException` (retried as any failure). A deadline that
passed raises :class:`AirflowTaskTimeout`'s sibling, an AirflowException saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowException, AirflowFailException

from sparkplane_airflow import outcome

if TYPE_CHECKING:
    from sparkplane import SparkPlane

XCOM_KEY = "spark_app"
FAILURES: dict[str, type[AirflowException]] = {
    "retry": AirflowException,
    "fail": AirflowFailException,
}


def driver_log(
    sp: SparkPlane, event: dict[str, Any], lines: int | None, say: Callable[..., None]
) -> None:
    """The driver's last ``lines`` log lines into the task log (live pod, else the archive)."""
    from sparkplane.errors import SparkplaneError

    if lines == 0:
        return
    say("---- driver log of %s/%s ----", event["namespace"], event["name"])
    try:
        for line in sp.logs(
            event["name"],
            namespace=event["namespace"],
            tail=lines,
            notice=lambda text: say("%s", text),
        ):
            say("driver | %s", line.rstrip("\n"))
    except SparkplaneError as exc:
        say("no driver log: %s", exc)
    say("---- end of driver log ----")


def settle(event: dict[str, Any], no_retry: Collection[str]) -> dict[str, Any]:
    """The XCom value for a successful app; raises the failure Airflow should see otherwise."""
    status = event.get("status")
    result = {k: v for k, v in event.items() if k not in ("status", "live_log")}
    if status == "timeout":
        raise AirflowException(f"timed out: {outcome.summary(event)}")
    if status == "gone":
        raise AirflowException(f"the app is gone: {outcome.summary(event)}")
    if status != "finished":
        raise AirflowException(f"waiting failed: {outcome.summary(event)}")
    verdict = outcome.verdict(event["state"], event["reason"], no_retry=no_retry)
    if verdict == "success":
        return result
    raise FAILURES[verdict](outcome.summary(event))
