"""Wait conditions (usecases.waiting) and preempted apps known only from events."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.model.phase import AppPhase, AppState, Reason
from sparkplane.usecases.query import preempted_leftovers
from sparkplane.usecases.waiting import condition


def test_conditions():
    running = AppState(AppPhase.RUNNING, Reason.NONE, "")
    done = AppState(AppPhase.SUCCEEDED, Reason.COMPLETED, "")
    assert condition("running")(running) and condition("running")(done)
    assert not condition("finished")(running) and condition("finished")(done)
    assert condition("succeeded")(done) and not condition("failed")(done)
    with pytest.raises(ValidationError, match="unknown condition 'bogus'"):
        condition("bogus")


def test_a_preempted_driver_that_is_gone_is_still_an_app():
    event = {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "pi-driver", "namespace": "ns"},
        "reason": "Preempted",
        "message": "Preempted by pod 1234-abcd on node n1",
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }
    executor = {**event, "involvedObject": {"kind": "Pod", "name": "pi-exec-1", "namespace": "ns"}}
    (app,) = preempted_leftovers([], [event, executor])
    assert app.name == "pi" and app.state.reason == Reason.PREEMPTED
    assert app.state.preemptor == "1234-abcd"  # named by pod once the pods are listed
