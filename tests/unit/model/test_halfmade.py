"""Half-made apps: owners past their grace period whose announced dependents never came."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sparkplane.model.halfmade import (
    DEPENDENTS_CREATED_KEY,
    DEPENDENTS_KEY,
    dependents_of,
    half_made,
    may_be_half_made,
    missing_dependents,
    owned_by,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
REFS = [["v1", "ConfigMap", "cm"], ["v1", "Service", "svc"], ["v1", "Secret", "s"]]


def pod(
    age: timedelta,
    refs: object = REFS,
    *,
    phase: str = "Running",
    complete: bool = False,
    **meta: object,
) -> dict[str, object]:
    created = (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {DEPENDENTS_KEY: json.dumps(refs)} if refs is not None else {}
    if complete:
        annotations[DEPENDENTS_CREATED_KEY] = created
    return {
        "metadata": {
            "name": "d",
            "namespace": "ns",
            "uid": "u",
            "creationTimestamp": created,
            "annotations": annotations,
            **meta,
        },
        "status": {"phase": phase},
    }


def test_missing_after_grace_is_half_made() -> None:
    found = half_made(pod(timedelta(minutes=10)), [("v1", "Service", "svc")], NOW)
    assert found is not None and found.missing == (("v1", "ConfigMap", "cm"),)
    assert "ConfigMap/cm never came" in found.reason


def test_within_grace_complete_deleted_or_unannotated_is_not() -> None:
    assert half_made(pod(timedelta(minutes=1)), [], NOW) is None
    present = [("v1", "ConfigMap", "cm"), ("v1", "Service", "svc")]
    assert half_made(pod(timedelta(hours=1)), present, NOW) is None  # Secret is not checked
    assert half_made(pod(timedelta(hours=1), deletionTimestamp="x"), [], NOW) is None
    assert half_made(pod(timedelta(hours=1), refs=None), [], NOW) is None
    assert dependents_of(pod(timedelta(0), refs="garbage")) is None


def test_operator_refs_can_be_given() -> None:
    expected = [("v1", "ConfigMap", "attempt-1-conf")]
    found = half_made(pod(timedelta(hours=1), refs=None), [], NOW, expected=expected)
    assert found is not None and found.missing == (("v1", "ConfigMap", "attempt-1-conf"),)
    assert missing_dependents(expected, expected) == []


def test_owned_by() -> None:
    cm = {"metadata": {"ownerReferences": [{"uid": "u"}]}}
    assert owned_by(cm, "u") and not owned_by(cm, "other") and not owned_by(None, "u")


def test_gc_across_namespaces_protects_system_namespaces() -> None:
    from sparkplane.usecases.gc import protected

    for ns in ("kube-system", "kube-public", "kube-node-lease", "kube-anything", "spark-operator"):
        assert protected(ns), ns
    for ns in ("default", "spark-jobs", "team-kube"):
        assert not protected(ns), ns


def test_pending_or_running_without_its_dependents_is_half_made() -> None:
    for phase in ("Pending", "Running", "Unknown", ""):
        found = half_made(pod(timedelta(minutes=10), phase=phase), [], NOW)
        assert found is not None, phase
        assert {k for _, k, _ in found.missing} == {"ConfigMap", "Service"}


def test_dependents_that_existed_once_are_not_half_made() -> None:
    """Spark deletes the driver's Services when it stops: a submission that recorded its last
    dependent is never half-made, finished or not, however old."""
    for phase in ("Running", "Succeeded", "Failed"):
        marked = pod(timedelta(days=3), phase=phase, complete=True)
        assert half_made(marked, [("v1", "ConfigMap", "cm")], NOW) is None, phase
        assert not may_be_half_made(marked, NOW, timedelta(0))


def test_a_finished_driver_is_never_half_made_only_the_ttl_deletes_it() -> None:
    """Unmarked (an older sparkplane, or a submitter killed just before the mark) and finished:
    left to its TTL, even with every dependent gone."""
    for phase in ("Succeeded", "Failed"):
        assert half_made(pod(timedelta(days=3), phase=phase), [], NOW) is None, phase
        assert not may_be_half_made(pod(timedelta(days=3), phase=phase), NOW, timedelta(0))


def test_grace_is_the_callers() -> None:
    young = pod(timedelta(seconds=30))
    assert half_made(young, [], NOW) is None  # default grace: 5 minutes
    assert half_made(young, [], NOW, grace=timedelta(seconds=10)) is not None
    assert may_be_half_made(young, NOW, timedelta(seconds=10))
