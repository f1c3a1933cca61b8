"""Substitution on the YAML tree: syntax, escapes, defaults, unknowns, injection, typing."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.templates import expand, render_yaml, substitute_yaml


def one(text: str, **values: str) -> Any:
    docs = render_yaml(text, values, source="t.yaml")
    assert len(docs) == 1
    return docs[0]


def problems_of(text: str, values: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        render_yaml(text, values or {}, source="t.yaml")
    return [str(p) for p in caught.value.problems]


# --- syntax -------------------------------------------------------------------------------


def test_braced_and_bare_references_inside_text() -> None:
    doc = one("name: ${APP}-$SUFFIX-driver\nhost: $APP.ns.svc", APP="pi", SUFFIX="ab12")
    assert doc == {"name": "pi-ab12-driver", "host": "pi.ns.svc"}


def test_bare_name_is_greedy_so_braces_delimit() -> None:
    assert one("a: $APP_x\nb: ${APP}_x", APP="pi", APP_x="long") == {"a": "long", "b": "pi_x"}


def test_double_dollar_is_a_literal_dollar_and_not_a_reference() -> None:
    doc = one('a: $$HOME\nb: "cost: $$5"\nc: $$$X\nd: $${X}', X="x")
    assert doc == {"a": "$HOME", "b": "cost: $5", "c": "$x", "d": "${X}"}


def test_lone_dollar_is_kept_like_envsubst() -> None:
    assert one("a: price $ 5\nb: $1\nc: end$", X="x") == {"a": "price $ 5", "b": "$1", "c": "end$"}


def test_defaults_apply_when_unset_or_empty() -> None:
    text = "a: ${A:-one}\nb: ${B:-two}\nc: ${C:-}\nd: x${D:-}y"
    assert one(text, A="set", B="") == {"a": "set", "b": "two", "c": "", "d": "xy"}


def test_values_are_not_expanded_again() -> None:
    assert one("a: ${A}", A="$B ${C}") == {"a": "$B ${C}"}


def test_keys_are_substituted_and_stay_strings() -> None:
    doc = one("labels:\n  ${KEY}: v\n  x-${N}: w", KEY="team", N="7")
    assert doc == {"labels": {"team": "v", "x-7": "w"}}


def test_block_scalar_and_sequence_items() -> None:
    text = "data:\n  spark.properties: |\n    spark.app.name=${APP}\n    a=b\nargs:\n  - ${APP}\n"
    assert one(text, APP="pi") == {
        "data": {"spark.properties": "spark.app.name=pi\na=b\n"},
        "args": ["pi"],
    }


def test_comments_are_left_alone_and_need_no_value() -> None:
    assert one("# uses ${UNSET}\na: 1  # and $OTHER\n") == {"a": 1}


def test_anchored_value_is_expanded_once() -> None:
    doc = one('a: &x "$$${A}"\nb: *x', A="v")
    assert doc == {"a": "$v", "b": "$v"}


def test_multi_document_text() -> None:
    docs = render_yaml("a: ${A}\n---\n---\nb: ${A}\n", {"A": "1"})
    assert docs == [{"a": 1}, None, {"b": 1}]


# --- unknown variables and malformed references ---------------------------------------------


def test_every_unknown_variable_is_reported_once_with_its_locations() -> None:
    text = "a: ${ONE}\nb:\n  - x-$TWO\nc: ${ONE}-${THREE:-ok}\nd: |\n  line\n  v=${FOUR}\n"
    problems = problems_of(text)
    assert problems == [
        "t.yaml:1: unknown variable ${ONE} (also at t.yaml:4) "
        "(pass --set ONE=value, or give a default: ${ONE:-value})",
        "t.yaml:3: unknown variable ${TWO} "
        "(pass --set TWO=value, or give a default: ${TWO:-value})",
        "t.yaml:7: unknown variable ${FOUR} "
        "(pass --set FOUR=value, or give a default: ${FOUR:-value})",
    ]


def test_unknown_variables_across_documents_are_collected() -> None:
    result = substitute_yaml("a: $X\n---\nb: $Y\n---\nc: $X\n", {}, source="f.yaml")
    assert [(o.name, o.line) for o in result.missing] == [("X", 1), ("Y", 3), ("X", 5)]
    assert not result.ok


def test_error_says_nothing_was_created_and_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as caught:
        render_yaml("a: $X", {}, source="t.yaml")
    assert caught.value.exit_code == 2
    assert "nothing was created" in str(caught.value)
    assert caught.value.subject == "template"


@pytest.mark.parametrize("ref", ["${}", "${1X}", "${A-b}", "${A:=b}", "${A"])
def test_malformed_references_are_problems(ref: str) -> None:
    problems = problems_of(f'a: "{ref}"')
    assert len(problems) == 1
    assert problems[0].startswith(f"t.yaml:1: malformed reference '{ref}'")


def test_yaml_syntax_error_has_a_line() -> None:
    problems = problems_of("a: 1\nb: [unclosed\n")
    assert len(problems) == 1
    assert problems[0].startswith("t.yaml:3: not valid YAML")


def test_duplicate_keys_after_substitution_are_rejected() -> None:
    problems = problems_of("${A}: 1\n${B}: 2\n", {"A": "k", "B": "k"})
    assert problems == [
        "t.yaml:2: duplicate key 'k' (first at line 1) (each key may appear once in a mapping)"
    ]


# --- injection ---------------------------------------------------------------------------------

INJECTIONS = [
    "x\nkind: Secret",
    "{a: b}",
    "- item",
    "[1, 2]",
    "x\n---\nkind: Secret\n",
    "&a x",
    "*a",
    "!!python/object:os.system x",
    "a: b",
    "'quoted'",
    '"dq" # comment',
    "|\n  block",
    "null",
    "~",
    "",
]


@pytest.mark.parametrize("value", INJECTIONS)
@pytest.mark.parametrize("template", ["v: ${V}", 'v: "${V}"', "v: '${V}'", "v:\n  - ${V}"])
def test_a_value_never_adds_structure(template: str, value: str) -> None:
    doc = one(f"kind: ConfigMap\n{template}\nafter: 1\n", V=value)
    assert set(doc) == {"kind", "v", "after"}
    assert doc["kind"] == "ConfigMap"
    got = doc["v"][0] if isinstance(doc["v"], list) else doc["v"]
    assert got == value
    assert isinstance(got, str)


def test_injection_in_a_key_and_inside_text() -> None:
    doc = one("${K}: 1\nname: pre-${V}-post\n", K="a: b\nc", V="\nkind: Secret")
    assert doc == {"a: b\nc": 1, "name": "pre-\nkind: Secret-post"}


def test_injection_in_a_block_scalar_stays_inside_it() -> None:
    doc = one("data:\n  f: |\n    x=${V}\nkind: ConfigMap\n", V="1\nkind: Secret\n---")
    assert doc == {"data": {"f": "x=1\nkind: Secret\n---\n"}, "kind": "ConfigMap"}


# --- typing rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3),
        ("-12", -12),
        ("0", 0),
        ("1.5", 1.5),
        ("2e3", 2000.0),
        ("true", True),
        ("False", False),
        ("0755", "0755"),
        ("0x1f", "0x1f"),
        ("yes", "yes"),
        ("on", "on"),
        ("null", "null"),
        ("", ""),
        ("1_000", "1_000"),
        ("3 ", "3 "),
        (".", "."),
        ("2024-01-01", "2024-01-01"),
    ],
)
def test_a_lone_unquoted_reference_is_typed(value: str, expected: object) -> None:
    got = one("n: ${N}", N=value)["n"]
    assert got == expected
    assert type(got) is type(expected)


def test_quoted_or_mixed_references_stay_strings() -> None:
    doc = one("a: \"${N}\"\nb: '${N}'\nc: ${N}${N}\nd: x$N\ne: $N", N="3")
    assert doc == {"a": "3", "b": "3", "c": "33", "d": "x3", "e": 3}


def test_defaults_are_typed_by_the_same_rule() -> None:
    doc = one('port: ${PORT:-4040}\nname: "${PORT:-4040}"\nflag: ${FLAG:-true}')
    assert doc == {"port": 4040, "name": "4040", "flag": True}


def test_explicit_tags_are_respected() -> None:
    assert one("a: !!str ${N}\nb: !!int '${N}'", N="3") == {"a": "3", "b": 3}


# --- expand -------------------------------------------------------------


def test_expand_plain_string() -> None:
    assert expand("${A}-$$-${B:-d}", {"A": "a"}) == "a-$-d"
    with pytest.raises(ValidationError) as caught:
        expand("$X $Y $X", {})
    assert [p.message for p in caught.value.problems] == [
        "unknown variable ${X}",
        "unknown variable ${Y}",
    ]
