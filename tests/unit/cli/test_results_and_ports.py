"""A taken local port is one message and exit 2, before anything is printed (a real listening
socket holds it); an ``App`` prints as one short line; events and describe are typed records.
The command-line side of the port (``sparkplane ui`` on a running app) is in
tests/integration/test_cli.py."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from sparkplane import App, Description, Event, Mode
from sparkplane.cli.main import _describe
from sparkplane.errors import LocalPortError
from sparkplane.kube import Kube
from sparkplane.kube.portforward import listen
from sparkplane.model.phase import AppPhase, AppState, Reason
from sparkplane.usecases.ui import UiAddress, forward_ui


@pytest.fixture
def held_port() -> Any:
    with socket.create_server(("127.0.0.1", 0)) as holder:  # something else holds the port
        yield holder.getsockname()[1]


def test_a_taken_port_fails_before_any_url(held_port: int):
    printed: list[str] = []
    with pytest.raises(LocalPortError) as caught:
        forward_ui(
            cast(Kube, None),  # never reached: the port is checked first
            UiAddress(url=None, pod="pi-driver", via="port-forward"),
            "default",
            local_port=held_port,
            on_ready=printed.append,
        )
    assert printed == []
    message, code = _describe(caught.value)
    assert code == 2
    assert str(held_port) in message and "--port" in message and "in use" in message
    assert "\n" not in message


def test_port_zero_picks_a_free_port():
    with listen(0) as server:
        assert server.getsockname()[1] > 0


def _pod() -> dict[str, Any]:
    fields = [{"manager": f"m{i}", "fieldsV1": {"f:spec": {"x" * 50: {}}}} for i in range(100)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pi-driver", "uid": "u", "managedFields": fields},
        "spec": {"containers": [{"name": "c", "image": "apache/spark:4.0.1"}]},
    }


def test_an_app_prints_one_short_line():
    app = App(
        name="pi",
        namespace="jobs",
        mode=Mode.NATIVE,
        owner=_pod(),
        state=AppState(AppPhase.PENDING, Reason.IMAGE_PULL_BACK_OFF, message="x" * 500),
        app_id="spark-1",
        driver_pod="pi-driver",
    )
    text = repr(app)
    assert text == (
        "App(name='pi', namespace='jobs', mode='native', phase='Pending', "
        "reason='ImagePullBackOff')"
    )
    assert len(str(app)) < 120 and "managedFields" not in str(app)
    assert not hasattr(app, "_repr_html_")
    assert app.owner["metadata"]["managedFields"]  # the whole object stays reachable


def test_events_and_descriptions_are_typed():
    raw = {
        "metadata": {"name": "pi-driver.1"},
        "involvedObject": {"kind": "Pod", "name": "pi-driver"},
        "type": "Warning",
        "reason": "BackOff",
        "message": "Back-off pulling image",
        "count": 3,
        "lastTimestamp": "2025-03-01T10:00:00Z",
    }
    event = Event.from_api(raw)
    assert event == Event(
        time=datetime(2025, 3, 1, 10, tzinfo=UTC),
        type="Warning",
        reason="BackOff",
        object="Pod/pi-driver",
        message="Back-off pulling image",
        count=3,
        name="pi-driver.1",
    )
    assert event.raw is raw and "involvedObject" not in repr(event)
    with pytest.raises(AttributeError):
        event.reason = "x"  # type: ignore[misc]
    app = App("pi", "jobs", Mode.NATIVE, _pod(), AppState(AppPhase.RUNNING))
    described = Description(app=app, objects=("ConfigMap/pi-conf",), events=(event,))
    summary = described.summary()
    assert summary["name"] == "pi" and summary["objects"] == ["ConfigMap/pi-conf"]
    assert summary["events"] == [raw]
