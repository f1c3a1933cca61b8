"""Half-made apps: owners past their grace period whose announced dependents never came."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sparkplane.lifecycle.halfmade import (
    DEPENDENTS_KEY,
    dependents_of,
    half_made,
    missing_dependents,
    owned_by,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
REFS = [["v1", "ConfigMap", "cm"], ["v1", "Service", "svc"], ["v1", "Secret", "s"]]


def pod(age: timedelta, refs: object = REFS, **meta: object) -> dict[str, object]:
    created = (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ")
    annotations = {DEPENDENTS_KEY: json.dumps(refs)} if refs is not None else {}
    return {
        "metadata": {
            "name": "d",
            "namespace": "ns",
            "uid": "u",
            "creationTimestamp": created,
            "annotations": annotations,
            **meta,
        }
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
    from sparkplane.lifecycle.gc import protected

    for ns in ("kube-system", "kube-public", "kube-node-lease", "kube-anything", "spark-operator"):
        assert protected(ns), ns
    for ns in ("default", "spark-jobs", "team-kube"):
        assert not protected(ns), ns
