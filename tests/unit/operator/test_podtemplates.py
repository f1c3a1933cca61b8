"""The operator reads podTemplateFile only inside its configured directory (issue 12 item 6)."""

from __future__ import annotations

from pathlib import Path

from sparkplane.operator.core.driver import template_path_problem
from sparkplane.operator.kinds.podtemplates import TemplateDirLoader

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  annotations: {a: b}\n"


def test_no_directory_reads_nothing(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(POD)
    assert TemplateDirLoader(None)(str(tmp_path / "t.yaml")) is None
    assert "no --pod-template-dir" in template_path_problem(str(tmp_path / "t.yaml"), None)


def test_inside_the_directory_is_read(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(POD)
    loaded = TemplateDirLoader(str(tmp_path))(f"file://{tmp_path}/t.yaml")
    assert loaded is not None and loaded["metadata"]["annotations"] == {"a": "b"}


def test_outside_dotdot_relative_and_remote_are_refused(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    secret = tmp_path / "secret.yaml"
    secret.write_text(POD)
    loader = TemplateDirLoader(str(allowed))
    for path in (str(secret), f"{allowed}/../secret.yaml", "secret.yaml", "https://x/t.yaml"):
        assert loader(path) is None, path
        assert template_path_problem(path, str(allowed)), path
    # a prefix that is not a directory boundary is outside too
    sibling = tmp_path / "allowed-not"
    sibling.mkdir()
    (sibling / "t.yaml").write_text(POD)
    assert loader(str(sibling / "t.yaml")) is None


def test_symlink_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    secret = tmp_path / "secret.yaml"
    secret.write_text(POD)
    (allowed / "link.yaml").symlink_to(secret)
    assert template_path_problem(str(allowed / "link.yaml"), str(allowed)) == ""
    assert TemplateDirLoader(str(allowed))(str(allowed / "link.yaml")) is None


def test_hostile_yaml_in_the_directory_is_refused(tmp_path: Path) -> None:
    for name, text in {
        "list.yaml": "- a\n",
        "bomb.yaml": "a: &a [x,x,x,x,x,x,x,x]\n"
        + "".join(
            f"b{i}: &b{i} [" + ",".join([f"*{'a' if i == 0 else f'b{i - 1}'}"] * 8) + "]\n"
            for i in range(6)
        ),
        "dup.yaml": "kind: Pod\nkind: Pod\n",
    }.items():
        (tmp_path / name).write_text(text)
        assert TemplateDirLoader(str(tmp_path))(str(tmp_path / name)) is None, name
