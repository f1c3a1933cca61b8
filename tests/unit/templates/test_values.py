"""Template values from --set flags and values.env files."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.templates import parse_assignments, parse_env


def test_parse_assignments() -> None:
    assert parse_assignments(["A=1", "B=", "C=x=y"]) == {"A": "1", "B": "", "C": "x=y"}
    with pytest.raises(ValidationError) as caught:
        parse_assignments(["ok=1", "nope", "1X=2", "-A=3"])
    assert [p.path for p in caught.value.problems] == ["--set[1]", "--set[2]", "--set[3]"]


def test_parse_env() -> None:
    text = "# comment\n\nA=1\nexport B = two words \nC='q # x'\nD=\"d\"\nE=\n"
    assert parse_env(text) == {"A": "1", "B": "two words", "C": "q # x", "D": "d", "E": ""}
    with pytest.raises(ValidationError) as caught:
        parse_env("A=1\nbad line\n", source="values.env")
    assert [p.path for p in caught.value.problems] == ["values.env:2"]
