"""Loading template directories and multi-document files, and the object shape checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.errors import ValidationError
from sparkplane.templates import load_objects, load_template, parse_objects

POD = """apiVersion: v1
kind: Pod
metadata:
  name: ${APP}-driver
  labels: {spark-role: driver}
spec:
  containers: [{name: c, image: i}]
"""
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${APP}-conf\ndata: {k: v}\n"


def problems(exc: pytest.ExceptionInfo[ValidationError]) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in exc.value.problems]


def test_directory_loads_yaml_and_yml_sorted_and_ignores_other_files(tmp_path: Path) -> None:
    (tmp_path / "b-pod.yaml").write_text(POD)
    (tmp_path / "a-cm.yml").write_text(CM)
    (tmp_path / "README.md").write_text("not yaml: ${NOPE")
    (tmp_path / "values.env").write_text("APP=x\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.yaml").write_text("ignored: [")
    objects = load_objects(tmp_path, {"APP": "pi"})
    assert [o.origin for o in objects] == [f"{tmp_path}/a-cm.yml#1", f"{tmp_path}/b-pod.yaml#1"]
    assert [o.body["metadata"]["name"] for o in objects] == ["pi-conf", "pi-driver"]


def test_multi_document_file_skips_empty_documents(tmp_path: Path) -> None:
    path = tmp_path / "app.yaml"
    path.write_text(f"---\n{POD}---\n# only a comment\n---\n{CM}---\n")
    objects = load_objects(path, {"APP": "pi"})
    assert [(o.origin, o.body["kind"]) for o in objects] == [
        (f"{path}#1", "Pod"),
        (f"{path}#3", "ConfigMap"),
    ]
    assert load_template(path, {"APP": "pi"}) == [o.body for o in objects]


def test_every_problem_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    (tmp_path / "1.yaml").write_text("kind: Pod\nmetadata:\n  name: $A\n---\n- a list\n")
    (tmp_path / "2.yaml").write_text("apiVersion: v1\nkind: ''\nmetadata: {}\n---\nx: [\n")
    (tmp_path / "3.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${B}\n")
    with pytest.raises(ValidationError) as caught:
        load_objects(tmp_path, {})
    f1, f2, f3 = (f"{tmp_path}/{n}.yaml" for n in (1, 2, 3))
    assert problems(caught) == [
        (f"{f1}#1.apiVersion", "required: a non-empty string"),
        (f"{f1}#2", "expected a Kubernetes object (a mapping), got a list"),
        (f"{f2}:6", "not valid YAML: expected the node content, but found '<stream end>'"),
        (f"{f2}#1.kind", "required: a non-empty string"),
        (f"{f2}#1.metadata.name", "required: a non-empty string"),
        # unknown variables last, one problem each
        (f"{f1}:3", "unknown variable ${A}"),
        (f"{f3}:4", "unknown variable ${B}"),
    ]


def test_shape_checks_name_the_document_index(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\n---\n"
        "apiVersion: v1\nkind: Pod\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: x-}\n---\n"
        "apiVersion: 1\nkind: Pod\nmetadata: {name: a, labels: [x]}\n"
    )
    with pytest.raises(ValidationError) as caught:
        load_objects(path, {})
    assert problems(caught) == [
        (f"{path}#2.metadata", "required: a mapping with at least a name"),
        (f"{path}#3.metadata.name", "required: a non-empty string"),
        (f"{path}#4.apiVersion", "required: a non-empty string"),
        (f"{path}#4.metadata.labels", "must be a mapping"),
    ]


def test_typed_label_values_are_rejected_with_a_quoting_hint() -> None:
    text = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {run: $N, ok: "$N"}\n'
    with pytest.raises(ValidationError) as caught:
        parse_objects([("p.yaml", text)], {"N": "42"})
    (problem,) = caught.value.problems
    assert problem.path == "p.yaml#1.metadata.labels.run"
    assert problem.message == "must be a string, got int 42"
    assert "quote it" in problem.hint


def test_empty_template_and_missing_paths(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("---\n# nothing\n---\n")
    with pytest.raises(ValidationError, match="the template has no objects"):
        load_objects(tmp_path / "empty.yaml", {})
    (tmp_path / "d").mkdir()
    with pytest.raises(ValidationError, match=r"no \*\.yaml or \*\.yml files"):
        load_objects(tmp_path / "d", {})
    with pytest.raises(ValidationError, match="no such file or directory"):
        load_objects(tmp_path / "missing", {})


def test_non_utf8_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(ValidationError, match="is not UTF-8 text"):
        load_objects(tmp_path, {})


def test_custom_resources_load_like_any_kind() -> None:
    text = (
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
        "metadata: {name: pg-$S}\nspec: {minMember: $N}\n"
    )
    (obj,) = parse_objects([("pg.yaml", text)], {"S": "x", "N": "1"})
    assert obj.body == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg-x"},
        "spec": {"minMember": 1},
    }
