"""Each documented ``kubectl apply`` set under deploy/ is self-contained, and the operator's roles
grant what its sweeper and log archive list.

kubectl applies the files of a set in the order given (a directory: its files by name) and the
documents of a file in order; a namespaced object whose Namespace is neither in the cluster nor
applied before it fails on an empty cluster. The KWOK suite applies the sets with the real
kubectl (tests/integration/test_deploy_sets.py); this checks the order without a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.manifests import chart
from sparkplane.operator.deploy import manifests as deploy
from sparkplane.security.rules import OPERATOR

DEPLOY = Path(__file__).parents[2] / "deploy"

#: The documented sets (docs/operator.md "Without Helm"), each as kubectl's -f arguments.
SETS = {
    "cluster-wide operator": ["crds", "operator/cluster-wide.yaml"],
    "namespaced operator": ["crds", "operator/namespaced.yaml"],
    "staging server": ["staging"],
    "gc CronJob": ["gc"],
}


def applied(args: list[str]) -> list[dict[str, Any]]:
    """The documents kubectl applies for ``-f a -f b ...``, in its order."""
    files: list[Path] = []
    for arg in args:
        path = DEPLOY / arg
        files += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]


@pytest.mark.parametrize("name", list(SETS))
def test_every_namespace_a_set_uses_comes_before_its_objects(name: str) -> None:
    made: set[str] = set()
    used = []
    for doc in applied(SETS[name]):
        if doc["kind"] == "Namespace":
            made.add(doc["metadata"]["name"])
        for ns in (doc["metadata"].get("namespace"), *_subject_namespaces(doc)):
            if ns:
                assert ns in made, f"{name}: {doc['kind']} {doc['metadata']['name']} needs {ns}"
                used.append(ns)
    assert used, name


def _subject_namespaces(doc: dict[str, Any]) -> list[str]:
    return [s["namespace"] for s in doc.get("subjects") or [] if s.get("namespace")]


def test_the_files_are_the_chart_rendering_plus_their_namespaces() -> None:
    for rel, values in (
        ("operator/cluster-wide.yaml", chart.ChartValues()),
        ("operator/namespaced.yaml", chart.ChartValues(job_namespaces=("spark-apps",))),
    ):
        docs = applied([rel])
        spaces = [d for d in docs if d["kind"] == "Namespace"]
        assert docs[: len(spaces)] == spaces and spaces, rel
        assert docs[len(spaces) :] == chart.operator_objects(values), rel


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(r, v) for rule in rules for r in rule["resources"] for v in rule["verbs"]}


def test_the_operator_may_list_what_its_sweeper_and_archive_list() -> None:
    """The sweeper (operator/runtime/sweep.py) lists ConfigMaps and Services by its label; the log
    archive lists and deletes ConfigMaps (issue 19: "sweep failed: forbidden" every 60 s)."""
    needed = {("services", "list"), ("configmaps", "list"), ("configmaps", "delete")}
    needed |= {("services", "delete"), ("pods", "delete")}
    assert needed <= _grants(deploy.workload_rules())
    assert deploy.workload_rules() == [r.body() for r in OPERATOR.namespaced]
    for rel in ("operator/cluster-wide.yaml", "operator/namespaced.yaml"):
        roles = [d for d in applied([rel]) if d["kind"] in ("Role", "ClusterRole")]
        workload = [r for r in roles if r["metadata"]["name"] == deploy.NAME]
        assert workload and all(needed <= _grants(r["rules"]) for r in workload), rel
    rules = yaml.safe_load((DEPLOY / chart.CHART / "files" / "rules" / "operator.yaml").read_text())
    assert needed <= _grants(rules)
