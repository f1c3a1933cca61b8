"""The Airflow provider's pure parts (no Airflow needed; Airflow itself runs in
tests/realnode/test_airflow.py): the submission id of a task instance, the connection's fields
read as sparkplane's connect/submit arguments, and which outcomes Airflow retries."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from sparkplane.vocab import is_label_value
from sparkplane_airflow import connection, get_provider_info, ids, outcome

ROOT = Path(__file__).parents[2]


def test_the_submission_id_is_the_task_instances_and_a_valid_label_value() -> None:
    run = "manual__2026-11-27T20:00:00.123456+00:00"  # ':' and '+': not label characters
    first = ids.submission_id("etl", run, "pi")
    assert first == ids.submission_id("etl", run, "pi")  # every try shares it
    assert is_label_value(first) and first.startswith("airflow-")
    others = {
        ids.submission_id("etl", run, "pi2"),
        ids.submission_id("etl", run, "pi", map_index=0),
        ids.submission_id("etl", run + "x", "pi"),
        ids.submission_id("etl2", run, "pi"),
        ids.submission_id("et", "l" + run, "pi"),  # no concatenation clash
        ids.submission_id("etl", run, "pi", clear_number=1),  # a cleared task runs anew
    }
    assert first not in others and len(others) == 6


@pytest.mark.parametrize(
    ("host", "password", "extra", "expected"),
    [
        (None, None, {}, {}),
        (
            "10.0.0.1:6443",
            "tok",
            {"ca_cert": "/ca"},
            {"server": "https://10.0.0.1:6443", "token": "tok", "ca_cert": "/ca"},
        ),
        (
            None,
            None,
            {"kubeconfig": "/k", "context": "c", "namespace": "ns"},
            {"kubeconfig": "/k", "context": "c", "namespace": "ns"},
        ),
        (None, None, {"in_cluster": "true"}, {"in_cluster": True}),
        ("https://api:6443", None, {"staging_server": "https://s"}, {"server": "https://api:6443"}),
    ],
)
def test_connection_fields_become_connect_arguments(
    host: str | None, password: str | None, extra: dict[str, str], expected: dict[str, object]
) -> None:
    assert connection.connect_kwargs(host, password, extra) == expected


def test_a_wrong_connection_is_named_with_its_fix() -> None:
    with pytest.raises(
        connection.ConnectionFieldError, match=r"unknown extra field.*kubconfig.*known: ca_cert"
    ):
        connection.connect_kwargs(None, None, {"kubconfig": "/k"})
    with pytest.raises(connection.ConnectionFieldError, match="in_cluster is set together"):
        connection.connect_kwargs("https://api", None, {"in_cluster": True})


def test_the_staging_server_and_the_ui_link_come_from_extra() -> None:
    extra = {
        "staging_server": "https://s:8443",
        "staging_token": "t",
        "ui_url": "https://h/history/{app_id}/{namespace}",
    }
    assert connection.submit_kwargs(extra) == {
        "staging_server": "https://s:8443",
        "staging_token": "t",
    }
    assert connection.ui_link(extra, "pi", "ns", "spark-1") == "https://h/history/spark-1/ns"
    assert connection.ui_link({}, "pi", "ns", None) is None


@pytest.mark.parametrize(
    ("state", "reason", "verdict"),
    [
        ("Succeeded", "Completed", "success"),
        ("Failed", "Preempted", "retry"),
        ("Failed", "Evicted", "retry"),
        ("Failed", "Error", "retry"),
        ("Failed", "OOMKilled", "fail"),
        ("Failed", "InvalidImageName", "fail"),
        ("Failed", "Killed", "fail"),
    ],
)
def test_failure_reasons_map_to_airflows_retry_semantics(
    state: str, reason: str, verdict: str
) -> None:
    assert outcome.verdict(state, reason) == verdict


def test_reasons_named_by_the_provider_are_sparkplanes() -> None:
    from sparkplane.model.phase import Reason

    known = {str(r) for r in Reason}
    assert known >= (outcome.RETRY_REASONS | outcome.NO_RETRY_REASONS)


def test_the_provider_is_registered_for_airflow() -> None:
    meta = tomllib.loads((ROOT / "providers" / "airflow" / "pyproject.toml").read_text())
    entry = meta["project"]["entry-points"]["apache_airflow_provider"]["provider_info"]
    assert entry == "sparkplane_airflow:get_provider_info"
    info = get_provider_info()
    assert info["package-name"] == meta["project"]["name"]
    assert info["connection-types"][0]["connection-type"] == "sparkplane"


def test_the_live_log_retries_until_the_driver_runs_and_never_repeats_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The trigger's live copy of the driver log (livelog.follow): no driver yet → try again; a
    broken stream → re-open it, skipping the lines already logged; the stream's end → done."""
    import asyncio
    from collections.abc import Iterator

    from sparkplane.errors import AppNotFoundError
    from sparkplane_airflow import livelog

    opened: list[int] = []

    class Cluster:  # the three things a driver's log stream does, in turn
        def logs(self, name: str, *, namespace: str, follow: bool) -> Iterator[str]:
            assert (name, namespace, follow) == ("pi", "ns", True)
            opened.append(1)
            if len(opened) == 1:
                raise AppNotFoundError("pi has no driver pod yet")
            yield "one\n"
            yield "two\n"
            if len(opened) == 2:
                raise OSError("connection reset")
            yield "three\n"

    said: list[str] = []
    monkeypatch.setattr(livelog, "RETRY", 0.01)
    done = asyncio.run(
        livelog.follow(Cluster(), "pi", "ns", lambda fmt, line: said.append(fmt % line))  # type: ignore[arg-type]
    )
    assert done is True and len(opened) == 3
    assert said == ["driver | one", "driver | two", "driver | three"]
