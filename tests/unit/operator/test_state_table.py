"""The SparkApplication / SparkCluster state tables, checked against the reference.

The expectations here are copied independently from the reference (§9.5-9.7: the Apache
operator's docs/architecture.md diagram, ApplicationStateSummary.java), so the code and the table
in the docs are each checked against the source, not against themselves.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from sparkplane.operator.core.states import (
    APP_EDGES,
    APP_FAILURES,
    APP_INFRASTRUCTURE_FAILURES,
    APP_INITIALIZING,
    APP_MACHINE,
    APP_QUEUED,
    APP_RUNNING,
    APP_STARTING,
    APP_STOPPING,
    APP_TERMINATED,
    CLUSTER_EDGES,
    CLUSTER_FAILURES,
    CLUSTER_MACHINE,
    AppStateSummary,
    ClusterStateSummary,
    IllegalTransition,
    StateMachine,
    check_transition,
    restart_allowed,
    terminal_state,
)

A, C = AppStateSummary, ClusterStateSummary

# ApplicationStateSummary in Java declaration order (reference §9.5), used only to re-derive the
# Apache predicates, which compare ordinals; our sets are written out instead.
JAVA_ORDER = [
    "Submitted",
    "ScheduledToRestart",
    "DriverRequested",
    "DriverStarted",
    "DriverReady",
    "InitializedBelowThresholdExecutors",
    "RunningHealthy",
    "RunningWithPartialCapacity",
    "RunningWithBelowThresholdExecutors",
    "DriverStartTimedOut",
    "ExecutorsStartTimedOut",
    "DriverReadyTimedOut",
    "Succeeded",
    "Failed",
    "SchedulingFailure",
    "DriverEvicted",
    "ResourceReleased",
    "TerminatedWithoutReleaseResources",
]
FAILURES = {
    "DriverStartTimedOut",
    "ExecutorsStartTimedOut",
    "SchedulingFailure",
    "DriverEvicted",
    "Failed",
    "DriverReadyTimedOut",
}
END = {"ScheduledToRestart", "ResourceReleased", "TerminatedWithoutReleaseResources"}
# Reference §9.6: the transitions of the Apache diagram.
DIAGRAM = {
    "Submitted": {"DriverRequested", "SchedulingFailure"},
    "ScheduledToRestart": {"DriverRequested"},
    "DriverRequested": {"DriverStarted", "DriverStartTimedOut"},
    "DriverStarted": {"DriverReady", "DriverReadyTimedOut", "DriverEvicted"},
    "DriverReady": {
        "RunningHealthy",
        "InitializedBelowThresholdExecutors",
        "RunningWithPartialCapacity",
        "ExecutorsStartTimedOut",
        "DriverEvicted",
    },
    "InitializedBelowThresholdExecutors": {
        "RunningHealthy",
        "RunningWithPartialCapacity",
        "Failed",
    },
    "RunningHealthy": {
        "Succeeded",
        "RunningWithBelowThresholdExecutors",
        "RunningWithPartialCapacity",
        "Failed",
    },
    "RunningWithBelowThresholdExecutors": {
        "RunningWithPartialCapacity",
        "RunningHealthy",
        "Failed",
    },
    "RunningWithPartialCapacity": {
        "RunningWithBelowThresholdExecutors",
        "RunningHealthy",
        "Succeeded",
        "Failed",
    },
    **dict.fromkeys(FAILURES, END),
    "Succeeded": {"ResourceReleased", "TerminatedWithoutReleaseResources"},
}


def edges(
    machine: StateMachine[AppStateSummary], origin: str | None = None
) -> set[tuple[str, str]]:
    return {(str(e.src), str(e.dst)) for e in machine.edges if origin in (None, e.origin)}


def test_every_state_has_a_description() -> None:
    assert set(APP_MACHINE.descriptions) == set(AppStateSummary)
    assert set(CLUSTER_MACHINE.descriptions) == set(ClusterStateSummary)
    assert all(text.strip() for text in APP_MACHINE.descriptions.values())
    # Apache 1.1.0 adds Suspended (spec.suspend), not in the 1.0 enum JAVA_ORDER is read from;
    # AdmissionPending is sparkplane's (a queued app waiting for Kueue: issue 23)
    assert {s.value for s in AppStateSummary} == set(JAVA_ORDER) | {
        "Suspended",
        "AdmissionPending",
    }


def test_diagram_edges_are_exactly_the_reference() -> None:
    expected = {(src, dst) for src, dsts in DIAGRAM.items() for dst in dsts}
    assert edges(APP_MACHINE, "diagram") == expected


def test_code_edges_are_documented_and_not_duplicates() -> None:
    assert len(APP_EDGES) == len({(e.src, e.dst) for e in APP_EDGES})
    for edge in APP_EDGES:
        assert edge.origin in ("diagram", "code")
        assert bool(edge.note) == (edge.origin == "code")


def test_sets_match_the_apache_predicates() -> None:
    def ordinal(name: str) -> int:
        return JAVA_ORDER.index(name)

    terminated = {"ResourceReleased", "TerminatedWithoutReleaseResources"}
    starting = {s for s in JAVA_ORDER if ordinal("ScheduledToRestart") < ordinal(s) < 6}
    stopping = {
        s
        for s in JAVA_ORDER
        if ordinal(s) > ordinal("RunningWithBelowThresholdExecutors") and s not in terminated
    }
    assert {"Submitted", "ScheduledToRestart"} == APP_INITIALIZING
    assert starting == APP_STARTING
    assert stopping == APP_STOPPING
    assert terminated == APP_TERMINATED
    assert FAILURES == APP_FAILURES
    assert {"DriverStartTimedOut", "ExecutorsStartTimedOut", "SchedulingFailure"} == (
        APP_INFRASTRUCTURE_FAILURES
    )
    every = APP_INITIALIZING | APP_STARTING | APP_RUNNING | APP_STOPPING | APP_TERMINATED
    every |= {A.SUSPENDED} | APP_QUEUED
    assert every == set(AppStateSummary)


def test_only_stopping_states_end_an_attempt() -> None:
    for state in AppStateSummary:
        nexts = APP_MACHINE.allowed(state)
        if state in APP_STOPPING:
            assert nexts == END, state
        elif state == "TerminatedWithoutReleaseResources":  # its retention runs out (Apache)
            assert nexts == {"ResourceReleased"}, state
        elif state in APP_TERMINATED:
            assert nexts == set(), state
        else:
            assert not nexts & {"ResourceReleased", "TerminatedWithoutReleaseResources"}, state


@pytest.mark.parametrize("machine", [APP_MACHINE, CLUSTER_MACHINE])
def test_every_state_reachable_and_every_state_can_terminate(machine: StateMachine[Any]) -> None:
    seen, todo = {machine.initial}, deque([machine.initial])
    while todo:
        for nxt in machine.allowed(todo.popleft()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    assert seen == set(machine.descriptions)
    for state in machine.descriptions:
        reach, todo = {state}, deque([state])
        while todo:
            for nxt in machine.allowed(todo.popleft()) - reach:
                reach.add(nxt)
                todo.append(nxt)
        assert reach & machine.terminal, state


def test_check_transition_accepts_table_and_rejects_the_rest() -> None:
    check_transition(None, A.SUBMITTED)
    check_transition(A.DRIVER_READY, A.RUNNING_WITH_PARTIAL_CAPACITY)
    check_transition(A.RUNNING_HEALTHY, A.DRIVER_EVICTED)
    with pytest.raises(IllegalTransition) as info:
        check_transition(A.SUBMITTED, A.RUNNING_HEALTHY)
    assert info.value.allowed == (
        "AdmissionPending",
        "DriverRequested",
        "Failed",
        "SchedulingFailure",
        "Suspended",
    )
    assert "Submitted -> RunningHealthy" in str(info.value)
    with pytest.raises(IllegalTransition, match="terminal"):
        check_transition(A.RESOURCE_RELEASED, A.SUBMITTED)
    with pytest.raises(IllegalTransition):
        check_transition(None, A.FAILED)
    with pytest.raises(IllegalTransition):
        check_transition(A.RUNNING_HEALTHY, A.RUNNING_HEALTHY)


def test_every_listed_transition_passes_and_every_other_pair_fails() -> None:
    table = edges(APP_MACHINE)
    for src in AppStateSummary:
        for dst in AppStateSummary:
            if (src.value, dst.value) in table:
                check_transition(src, dst)
            else:
                with pytest.raises(IllegalTransition):
                    check_transition(src, dst)


def test_cluster_table_matches_reference() -> None:
    expected = {
        ("Submitted", "RunningHealthy"),
        ("Submitted", "SchedulingFailure"),
        ("RunningHealthy", "Failed"),
        ("RunningHealthy", "ResourceReleased"),
        ("SchedulingFailure", "ResourceReleased"),
        ("Failed", "ResourceReleased"),
        # Apache 1.1.0's spec.suspend (code edges, the diagram predates them)
        ("Submitted", "Suspended"),
        ("RunningHealthy", "Suspended"),
        ("Suspended", "Submitted"),
    }
    assert {(str(e.src), str(e.dst)) for e in CLUSTER_EDGES} == expected
    assert {"SchedulingFailure", "Failed"} == CLUSTER_FAILURES
    check_transition(C.SUBMITTED, C.RUNNING_HEALTHY)
    with pytest.raises(IllegalTransition):
        check_transition(C.SUBMITTED, C.FAILED)
    with pytest.raises(IllegalTransition):
        check_transition(C.RESOURCE_RELEASED, C.SUBMITTED)


@pytest.mark.parametrize(
    ("policy", "restarts"),
    [
        ("Never", set()),
        ("Always", APP_STOPPING),
        ("OnFailure", APP_FAILURES),
        ("OnInfrastructureFailure", APP_INFRASTRUCTURE_FAILURES),
    ],
)
def test_restart_allowed(policy: str, restarts: frozenset[AppStateSummary]) -> None:
    assert {s for s in AppStateSummary if restart_allowed(policy, s)} == restarts


def test_restart_policy_must_be_known() -> None:
    with pytest.raises(ValueError, match="restartPolicy"):
        restart_allowed("Sometimes", A.FAILED)


@pytest.mark.parametrize(
    ("state", "retain", "expected"),
    [
        (A.SUCCEEDED, "Never", A.RESOURCE_RELEASED),
        (A.SUCCEEDED, "OnFailure", A.RESOURCE_RELEASED),
        (A.SUCCEEDED, "Always", A.TERMINATED_WITHOUT_RELEASE_RESOURCES),
        (A.FAILED, "OnFailure", A.TERMINATED_WITHOUT_RELEASE_RESOURCES),
        (A.DRIVER_EVICTED, "Never", A.RESOURCE_RELEASED),
    ],
)
def test_terminal_state_follows_retain_policy(
    state: AppStateSummary, retain: str, expected: AppStateSummary
) -> None:
    assert terminal_state(state, retain) is expected
    check_transition(state, expected)
