"""The bounded YAML reader: one message per input class, refused before anything is built."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from sparkplane import yamlguard, yamlio
from sparkplane.errors import ValidationError
from sparkplane.templates import render_yaml


def laughs(levels: int, width: int = 9) -> str:
    """A "billion laughs": each level lists the previous one ``width`` times (817 bytes)."""
    lines = ["l0: &l0 [" + ",".join(["lol"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def only_problem(text: str, **kw: object) -> str:
    with pytest.raises(ValidationError) as info:
        yamlio.parse_mapping(text, "in.yaml", **kw)  # type: ignore[arg-type]
    assert len(info.value.problems) == 1, info.value.problems
    assert info.value.exit_code == 2
    return str(info.value.problems[0])


CLASSES = {
    "empty": ("", "in.yaml: is empty"),
    "comment-only": ("# nothing\n  # here\n", "in.yaml: is empty"),
    "list": ("- a\n- b\n", "in.yaml: is a list, expected a mapping"),
    "scalar": ("just text\n", "in.yaml: is a single value (str), expected a mapping"),
    "multi-document": ("a: 1\n---\nb: 2\n", "in.yaml: has 2 YAML documents; expected one"),
    "duplicate key": ("image: a\nimage: b\n", "in.yaml:2: duplicate key 'image' (first at line 1)"),
    "python tag": ("x: !!python/object/apply:os.system [id]\n", "tag '!!python/object/apply"),
    "set tag": ("x: !!set {a}\n", "tag '!!set' is not allowed"),
    "local tag": ("x: !secret y\n", "tag '!secret' is not allowed"),
    "recursive alias": ("a: &a [*a]\n", "recursive alias"),
    "deep flow": ("a: " + "[" * 20000 + "]" * 20000 + "\n", "nested more than 64 levels"),
    "deep block": ("".join(" " * i + f"k{i}:\n" for i in range(200)), "nested more than 64"),
    "syntax": ("a: [1\n", "not valid YAML"),
    "control char": ("a: \x07\n", "contains a character YAML does not allow"),
    "bomb": (laughs(9), "aliases expand too much"),
}


LOADERS = {"libyaml": "CSafeLoader", "pure-python": "SafeLoader"}


@pytest.fixture(params=list(LOADERS))
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with libyaml's parser (the default when installed) and with PyYAML's own."""
    name = LOADERS[request.param]
    # the lock's PyYAML wheels bundle libyaml: its absence is a broken install, not a skip
    assert hasattr(yaml, name), f"PyYAML {yaml.__version__} has no {name}"
    monkeypatch.setattr(yamlguard, "FastLoader", getattr(yaml, name))
    monkeypatch.setattr(yamlio, "FastLoader", getattr(yaml, name))
    return str(request.param)


@pytest.mark.parametrize("name", list(CLASSES))
def test_each_class_is_one_message(name: str, loader: str) -> None:
    text, expected = CLASSES[name]
    assert expected in only_problem(text)


# libyaml 0.2.6 (in PyYAML 6.0.4's wheels) refuses flow nesting past 1000 levels with its own
# error while it scans ahead, before the first events reach the guard: the guard's message wins
DEEP_FLOW = [
    "a: " + "[" * 999 + "]" * 999 + "\n",
    "a: " + "[" * 1000 + "]" * 1000 + "\n",
    "a: " + "{b: " * 3000 + "1" + "}" * 3000 + "\n",
    "pad: " + "x" * 5000 + "\nlist:\n  - " + "[" * 1500 + "]" * 1500 + "\n",
]


@pytest.mark.parametrize("text", DEEP_FLOW, ids=["999", "1000", "3000 maps", "after 5 KB"])
def test_deep_flow_is_the_same_message_with_either_loader(text: str) -> None:
    messages = {}
    for name in LOADERS.values():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(yamlguard, "FastLoader", getattr(yaml, name))
            patch.setattr(yamlio, "FastLoader", getattr(yaml, name))
            messages[name] = only_problem(text)
            with pytest.raises(ValidationError, match="nested more than 64 levels deep"):
                render_yaml(text, {})
    assert len(set(messages.values())) == 1, messages
    line = 1 if text.startswith("a:") else 3
    assert messages["CSafeLoader"].startswith(f"in.yaml:{line}: nested more than 64 levels deep")


def test_libyaml_error_stands_when_no_guard_limit_was_met() -> None:
    # a caller's own larger depth limit: the guard must not claim it was exceeded
    text = "a: " + "[" * 1500 + "]" * 1500 + "\n"
    limits = yamlio.Limits(max_depth=5000)
    if yaml._yaml.get_version() >= (0, 2, 6):  # type: ignore[attr-defined]
        with pytest.raises(ValidationError) as info:
            yamlio.parse_all(text, "in.yaml", limits=limits)
        assert str(info.value.problems[0]).startswith(
            "in.yaml:1: not valid YAML: exceeded maximum nesting depth"
        )
    else:  # libyaml 0.2.5 (PyYAML <= 6.0.3) has no depth limit and reads it
        node = yamlio.parse_all(text, "in.yaml", limits=limits)[0]["a"]
        for _ in range(1499):
            (node,) = node
        assert node == []


def test_bomb_is_refused_before_expanding() -> None:
    # 9**12 nodes: constructing them would never finish (the speed is benchmarks' business)
    assert "aliases expand too much" in only_problem(laughs(12))


def test_modest_aliases_and_merge_keys_are_fine() -> None:
    doc = yamlio.parse_mapping("b: &b {x: 1}\nc:\n  <<: *b\n  y: 2\nd: [*b, *b]\n", "in.yaml")
    assert doc["c"] == {"x": 1, "y": 2} and doc["d"] == [{"x": 1}, {"x": 1}]
    assert yamlio.parse_mapping(laughs(2), "in.yaml")["l2"][0][0][0] == "lol"


def test_non_utf8_and_size(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"is not UTF-8 text \(byte 0xff at offset 3\)"):
        yamlio.decode(b"a: \xff\n", "x.yaml")
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * (10 * 1024 * 1024) + "\n")
    with pytest.raises(ValidationError, match=r"is too large \(10.0 MiB; the limit is 2.0 MiB\)"):
        yamlio.load_mapping_file(big)
    assert yamlio.decode("\ufeffa: 1".encode(), "bom.yaml") == "a: 1"


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        yamlio.load_mapping_file(tmp_path / "missing.yaml")
    with pytest.raises(ValidationError, match="is a directory"):
        yamlio.load_mapping_file(tmp_path)


def test_device_is_not_read_to_its_end() -> None:
    with pytest.raises(ValidationError, match="/dev/zero: is a device, not a regular file"):
        yamlio.read_bytes("/dev/zero")


def test_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    """A FIFO with no writer would block open() forever (issue 26, finding 9)."""
    fifo = tmp_path / "props.conf"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ValidationError, match=r"props\.conf: is a FIFO \(named pipe\)"):
        yamlio.read_text(fifo, subject="--properties-file")
    with pytest.raises(ValidationError, match="is a FIFO"):
        yamlio.load_mapping_file(fifo)
    assert time.monotonic() - start < 5


def test_a_number_too_long_to_parse_is_a_yaml_problem() -> None:
    """Python refuses int() of more than 4300 digits: a plain 5000-digit number is refused by
    the reader with its line, a quoted one is text."""
    big = "9" * 5000
    with pytest.raises(ValidationError, match=r"x\.yaml:3: a number with 5000 digits"):
        yamlio.parse_mapping(f"a: 1\nb:\n  c: {big}\n", "x.yaml")
    with pytest.raises(ValidationError, match="a number with 5000 digits"):
        yamlio.parse_mapping(f"a: !!int {big}\n", "x.yaml")
    with pytest.raises(ValidationError, match="a number with 101 digits"):
        yamlio.parse_mapping(f"a: -{'1_' * 100}1\n", "x.yaml")
    assert yamlio.parse_mapping(f"a: '{big}'\n", "x.yaml")["a"] == big
    assert yamlio.parse_mapping(f"a: {'9' * 100}\n", "x.yaml")["a"] == int("9" * 100)


def test_templates_use_the_same_bounds() -> None:
    with pytest.raises(ValidationError, match="aliases expand too much"):
        render_yaml(laughs(9), {})
    with pytest.raises(ValidationError, match=r"tag '!!python/name:os\.system' is not allowed"):
        render_yaml("a: !!python/name:os.system ''\n", {})
    with pytest.raises(ValidationError, match="duplicate key 'image'"):
        render_yaml("image: a\nimage: b\n", {})


def test_templates_report_control_characters() -> None:
    with pytest.raises(ValidationError, match="contains a character YAML does not allow"):
        render_yaml("a: \x07\n", {})
