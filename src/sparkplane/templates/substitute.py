"""Safe envsubst for YAML templates: ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and ``$$``.

Owns the reference syntax, the typing rule for whole-scalar references and the reporting of
unknown variables. Called by :mod:`sparkplane.templates.load` (and by the CLI to parse
``--set VAR=value``). Pure: it takes text and values, never reads files or the environment.

Why substitute on the parsed tree and not on raw text (as envsubst and the seed article do):
text substitution lets a value rewrite the document (``x\\nkind: Secret`` adds a key,
``{a: b}`` becomes a mapping, a newline plus ``---`` starts a new document). Here the template
is *composed* first (PyYAML node graph, with line marks), then every scalar node, keys
included, is expanded in place and constructed. A value can only ever become the text of the
one scalar it was written into, so it cannot inject keys, items or documents. Side benefits:
references in YAML comments are ignored, and every problem points at ``file:line``.

The typing rule: a *plain* (unquoted) scalar that is exactly one reference (``port: ${PORT}``)
is typed from its value the way YAML 1.2's core schema types a plain scalar, restricted to
the unsurprising cases: a decimal int (``-?(0|[1-9][0-9]*)``), a decimal float (``1.5``,
``2e3``) or ``true``/``false`` (any case). Anything else, including ``""``, ``null``, ``~``,
``yes``, ``0755`` and ``0x1f``, stays a string. Quoted scalars (``"${PORT}"``) and scalars
mixing text and references (``${A}-x``) are always strings; an explicit tag (``!!str ${N}``)
wins. So ``replicas: ${N}`` gives an int and ``annotation: "${N}"`` a string, as Kubernetes
expects. Keys are always strings.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sparkplane import yamlio
from sparkplane.errors import Problem, ValidationError
from sparkplane.yamlio import problem_of

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
NAME_PATTERN = re.compile(NAME)
_WHOLE = re.compile(rf"\$\{{{NAME}(?::-[^}}]*)?\}}|\${NAME}")
_BRACED = re.compile(rf"\{{({NAME})(?::-([^}}]*))?\}}")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_BOOL = re.compile(r"true|false", re.IGNORECASE)
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SHOWN_PLACES = 4
SET_HINT = "pass --set {name}=value, or give a default: ${{{name}:-value}}"


@dataclass(frozen=True)
class Occurrence:
    """Where an unknown variable (one without a value or a default) is referenced."""

    name: str
    source: str
    line: int


@dataclass(frozen=True)
class Substituted:
    """One template source after substitution: its documents (``None`` for empty ones, in
    file order) and what went wrong. Nothing raises here so that callers can report the
    problems of every file at once (see :func:`raise_for_problems`)."""

    source: str
    documents: tuple[Any, ...]
    missing: tuple[Occurrence, ...] = ()
    problems: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.missing and not self.problems


@dataclass
class _Expansion:
    text: str
    missing: list[tuple[str, str]]  # (variable name, the reference's text as written)
    malformed: list[str]


def _expand(text: str, values: Mapping[str, str]) -> _Expansion:
    """One left-to-right pass; values are inserted verbatim and never re-expanded."""
    out: list[str] = []
    missing: list[tuple[str, str]] = []
    malformed: list[str] = []
    pos = 0
    while (dollar := text.find("$", pos)) != -1:
        out.append(text[pos:dollar])
        rest = dollar + 1
        if text.startswith("$", rest):
            out.append("$")
            pos = rest + 1
            continue
        if text.startswith("{", rest):
            braced = _BRACED.match(text, rest)
            if braced is None:
                close = text.find("}", rest)
                token = text[dollar : close + 1] if close != -1 else text[dollar:]
                malformed.append(token)
                out.append(token)
                pos = dollar + len(token)
                continue
            name, default = braced.group(1), braced.group(2)
            token, pos = text[dollar : braced.end()], braced.end()
        else:
            bare = NAME_PATTERN.match(text, rest)
            if bare is None:  # a lone "$" (e.g. "$1", "a $ b") stays literal, as in envsubst
                out.append("$")
                pos = rest
                continue
            name, default, token, pos = bare.group(), None, text[dollar : bare.end()], bare.end()
        value = values.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                missing.append((name, token))
                out.append(token)
                continue
            value = default
        out.append(value)
    out.append(text[pos:])
    return _Expansion("".join(out), missing, malformed)


def expand(text: str, values: Mapping[str, str], *, source: str = "<string>") -> str:
    """Expand the references in one plain string, or raise ValidationError listing them all."""
    result = _expand(text, values)
    problems = [
        Problem(source, f"malformed reference {t!r}", _MALFORMED_HINT) for t in result.malformed
    ]
    problems += [
        Problem(source, f"unknown variable ${{{n}}}", SET_HINT.format(name=n))
        for n in dict.fromkeys(n for n, _ in result.missing)
    ]
    if problems:
        raise ValidationError(problems, subject="template")
    return result.text


_MALFORMED_HINT = (
    "write ${NAME} or ${NAME:-default} (NAME is [A-Za-z_][A-Za-z0-9_]*); $$ is a literal $"
)


def _typed_tag(value: str) -> str:
    """The tag of a whole-reference plain scalar, per the module's typing rule."""
    if _INT.fullmatch(value):
        return "tag:yaml.org,2002:int"
    if _FLOAT.fullmatch(value):
        return "tag:yaml.org,2002:float"
    if _BOOL.fullmatch(value):
        return "tag:yaml.org,2002:bool"
    return _STR_TAG


class _Loader(yaml.SafeLoader):
    """SafeLoader (the text passed :func:`sparkplane.yamlio.check` first: size, depth, aliases,
    duplicate keys, tags) that remembers which scalars carry an explicit tag (``!!str ${N}``), which
    the composed node alone cannot tell from an implicitly resolved one."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.explicit: set[int] = set()

    def compose_scalar_node(self, anchor: Any) -> ScalarNode:  # stubs mistype the anchor
        tag = self.peek_event().tag  # type: ignore[no-untyped-call]
        node = super().compose_scalar_node(anchor)
        if tag not in (None, "!"):
            self.explicit.add(id(node))
        return node


class _Walker:
    """Expands every scalar of one composed document in place, collecting problems."""

    def __init__(
        self, text: str, source: str, values: Mapping[str, str], explicit: set[int]
    ) -> None:
        self.text, self.source, self.values, self.explicit = text, source, values, explicit
        self.missing: list[Occurrence] = []
        self.problems: list[Problem] = []
        self._seen: set[int] = set()
        self._line_starts: list[int] | None = None

    def line_of(self, node: Node, token: str, cursor: int) -> tuple[int, int]:
        """1-based line of ``token`` inside ``node``'s text, searching from ``cursor``."""
        start, end = node.start_mark.index, node.end_mark.index
        found = self.text.find(token, max(start, cursor), max(end, start + len(token)))
        if found == -1:
            return node.start_mark.line + 1, cursor
        if self._line_starts is None:
            self._line_starts = [0, *(i + 1 for i, c in enumerate(self.text) if c == "\n")]
        return bisect.bisect_right(self._line_starts, found), found + len(token)

    def walk(self, node: Node, *, key: bool = False) -> None:
        if id(node) in self._seen:  # an alias: the anchored node was already expanded
            return
        self._seen.add(id(node))
        if isinstance(node, ScalarNode):
            self.scalar(node, key=key)
        elif isinstance(node, SequenceNode):
            for item in node.value:
                self.walk(item)
        elif isinstance(node, MappingNode):
            self.mapping(node)

    def mapping(self, node: MappingNode) -> None:
        # Keys equal as written were refused while composing (BoundedLoader); keys that
        # become equal after substitution (${A}: 1 / ${B}: 2 with A=B) are caught here.
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            self.walk(key_node, key=True)
            self.walk(value_node)
            if isinstance(key_node, ScalarNode) and key_node.tag != _MERGE_TAG:
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    self.problems.append(
                        Problem(
                            f"{self.source}:{line}",
                            f"duplicate key {key_node.value!r} (first at line "
                            f"{seen[key_node.value]})",
                            "each key may appear once in a mapping",
                        )
                    )
                seen.setdefault(key_node.value, line)

    def scalar(self, node: ScalarNode, *, key: bool) -> None:
        if "$" not in node.value:
            return
        result = _expand(node.value, self.values)
        cursor = node.start_mark.index
        for name, token in result.missing:
            line, cursor = self.line_of(node, token, cursor)
            self.missing.append(Occurrence(name, self.source, line))
        cursor = node.start_mark.index
        for token in result.malformed:
            line, cursor = self.line_of(node, token, cursor)
            self.problems.append(
                Problem(f"{self.source}:{line}", f"malformed reference {token!r}", _MALFORMED_HINT)
            )
        whole = node.style is None and _WHOLE.fullmatch(node.value) is not None
        if id(node) not in self.explicit:
            node.tag = _typed_tag(result.text) if whole and not key else _STR_TAG
        node.value = result.text


def substitute_yaml(
    text: str, values: Mapping[str, str], *, source: str = "<string>"
) -> Substituted:
    """Expand every scalar of a (multi-document) YAML text and construct its documents.

    Never raises for template problems: they come back in the result (see the module
    docstring for the rules). ``source`` names the text in problem paths (``source:line``).
    """
    try:
        yamlio.check(text)  # bounded first: nothing is composed for a refused text
    except yamlio.YamlLimitError as exc:
        return Substituted(source, (), (), (problem_of(exc, source),))
    except yaml.YAMLError:
        pass  # a syntax error: reported below, after the problems of the documents before it
    try:
        loader = _Loader(text)
    except yaml.YAMLError as exc:
        return Substituted(source, (), (), (problem_of(exc, source),))
    documents: list[Any] = []
    missing: list[Occurrence] = []
    problems: list[Problem] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node() said there is one
                break
            walker = _Walker(text, source, values, loader.explicit)
            walker.walk(node)
            missing += walker.missing
            problems += walker.problems
            try:  # built even with problems (references left as written) to check the rest
                documents.append(loader.construct_document(node))
            except (yaml.YAMLError, ValueError, TypeError) as exc:
                line = node.start_mark.line + 1
                problems.append(Problem(f"{source}:{line}", f"cannot build the document: {exc}"))
                documents.append(None)
    except yaml.YAMLError as exc:
        problems.append(problem_of(exc, source))
    finally:
        loader.dispose()
    return Substituted(source, tuple(documents), tuple(missing), tuple(problems))


def unknown_variable_problems(occurrences: Iterable[Occurrence]) -> list[Problem]:
    """One problem per unknown variable, at its first use, listing the other uses."""
    by_name: dict[str, list[Occurrence]] = {}
    for occurrence in occurrences:
        by_name.setdefault(occurrence.name, []).append(occurrence)
    problems = []
    for name, uses in by_name.items():
        places = list(dict.fromkeys(f"{o.source}:{o.line}" for o in uses))
        first, others = places[0], places[1:]
        message = f"unknown variable ${{{name}}}"
        if others:
            shown = ", ".join(others[:_SHOWN_PLACES])
            more = len(others) - _SHOWN_PLACES
            message += f" (also at {shown}" + (f" and {more} more)" if more > 0 else ")")
        problems.append(Problem(first, message, SET_HINT.format(name=name)))
    return problems


def raise_for_problems(results: Sequence[Substituted], *, subject: str = "template") -> None:
    """Raise one ValidationError with the problems of every source, unknown variables last."""
    problems = [p for r in results for p in r.problems]
    problems += unknown_variable_problems(o for r in results for o in r.missing)
    if problems:
        raise ValidationError(problems, subject=subject)


def render_yaml(text: str, values: Mapping[str, str], *, source: str = "<string>") -> list[Any]:
    """:func:`substitute_yaml` for one text, raising ValidationError on any problem."""
    result = substitute_yaml(text, values, source=source)
    raise_for_problems([result])
    return list(result.documents)
