"""The one bounded YAML reader: every user-supplied YAML goes through here.

Owns the limits on untrusted YAML (size, nesting depth, alias expansion), the refusal of
duplicate keys and of tags beyond plain YAML (``!!python/...``, ``!!set``, local ``!tags``),
strict UTF-8, and the one-message explanation of each way a file can be wrong (empty, a list
or a scalar where a mapping is wanted, several documents where one is wanted). Called by every
reader of user YAML: ``submit -f`` (CLI and :class:`~sparkplane.client.SparkPlane`), templates
(:mod:`sparkplane.templates.substitute` composes with :class:`BoundedLoader`), pod template
files (spark-submit ``--conf ...podTemplateFile`` and the operator's allowed directory).

Why: PyYAML's SafeLoader expands aliases into shared nodes, and anything that walks or dumps
the result (pydantic, ``json.dumps``) pays for every expansion: an 817-byte "billion laughs"
took 4 GB. Here the expanded size is counted while composing, before any Python object exists,
so a bomb is refused after reading a few hundred nodes. Parsing is pure (text in, objects out);
:func:`read_bytes` is the only I/O and reads at most ``max_bytes + 1`` bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

from sparkplane.errors import Problem, ValidationError

_STD = "tag:yaml.org,2002:"
ALLOWED_TAGS = frozenset(
    _STD + t for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge", "timestamp")
)
MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Bounds on one YAML input. The defaults fit any Kubernetes object with room to spare."""

    max_bytes: int = 2 * MIB
    """Larger than any object the API server stores (its request limit is about 1.5 MiB)."""
    max_depth: int = 64
    """Kubernetes objects nest about 15 levels deep."""
    max_aliases: int = 256
    """Aliases (``*name``) per document."""
    max_expansion: int = 10
    """Expanded nodes may be at most this many times the nodes written (or 10,000)."""
    max_expanded_nodes: int = 1_000_000


LIMITS = Limits()


class YamlLimitError(yaml.MarkedYAMLError):
    """The input broke one of the :class:`Limits` or rules; ``hint`` says how to fix it."""

    def __init__(self, problem: str, mark: Any, hint: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.hint = hint


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader that enforces :class:`Limits` and the no-duplicates/no-tags rules while
    composing, so nothing is constructed for a refused input."""

    limits: Limits = LIMITS

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._reset()

    def _reset(self) -> None:
        self._written = 0
        self._expanded = 0
        self._aliases = 0
        self._weight: dict[int, int] = {}

    def compose_document(self) -> Node | None:
        self._reset()
        node: Node | None = super().compose_document()
        return node

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        lim = self.limits
        if self.check_event(AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            node: Node | None = super().compose_node(parent, index)
            weight = self._weight.get(id(node))
            if weight is None:
                raise YamlLimitError(
                    "an alias refers to the collection that contains it (a recursive alias)",
                    mark,
                    "write the value out instead of referring to an enclosing anchor",
                )
            self._aliases += 1
            self._expanded += weight
            budget = min(lim.max_expanded_nodes, max(10_000, lim.max_expansion * self._written))
            if self._aliases > lim.max_aliases or self._expanded > budget:
                raise YamlLimitError(
                    f"aliases expand too much ({self._aliases} aliases, over "
                    f"{self._expanded} nodes from {self._written} written; the limit is "
                    f"{lim.max_aliases} aliases and {budget} nodes)",
                    mark,
                    "write the values out, or use fewer anchors and aliases (&name / *name)",
                )
            return node
        self._depth += 1
        if self._depth > lim.max_depth:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise YamlLimitError(
                f"nested more than {lim.max_depth} levels deep",
                mark,
                "Kubernetes objects nest far less; check for runaway brackets or indentation",
            )
        start = self._expanded
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if node is not None:
            self._check_tag(node)
            self._written += 1
            self._expanded += 1
            self._weight[id(node)] = self._expanded - start
        return node

    def _check_tag(self, node: Node) -> None:
        if node.tag not in ALLOWED_TAGS:
            shown = node.tag.replace(_STD, "!!")
            raise YamlLimitError(
                f"tag {shown!r} is not allowed",
                node.start_mark,
                "use plain YAML values (strings, numbers, booleans, lists, mappings); "
                "quote the value if it is meant as text",
            )

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node: MappingNode = super().compose_mapping_node(anchor)
        seen: dict[str, int] = {}
        for key, _ in node.value:
            if not isinstance(key, ScalarNode) or key.tag == _STD + "merge":
                continue
            line = key.start_mark.line + 1
            if key.value in seen:
                raise YamlLimitError(
                    f"duplicate key {key.value!r} (first at line {seen[key.value]})",
                    key.start_mark,
                    "each key may appear once in a mapping; keep one of them",
                )
            seen[key.value] = line
        return node


def problem_of(exc: yaml.YAMLError, source: str) -> Problem:
    """One :class:`Problem` at ``source:line`` for a YAML error (limit, rule or syntax)."""
    hint = getattr(exc, "hint", "")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        what = exc.problem or str(exc)
        if not isinstance(exc, YamlLimitError):
            what = f"not valid YAML: {what}"
            hint = hint or "check the indentation and quoting around that line"
        return Problem(where, what, hint)
    if isinstance(exc, yaml.reader.ReaderError):
        return Problem(
            source,
            f"contains a character YAML does not allow (code {exc.character!r})",
            "remove control characters; the file must be UTF-8 text",
        )
    return Problem(source, f"not valid YAML: {exc}")


def decode(data: bytes, source: str, *, limits: Limits = LIMITS, subject: str = "input") -> str:
    """Check the size and decode strict UTF-8 (a leading BOM is dropped)."""
    if len(data) > limits.max_bytes:
        raise ValidationError([too_large(source, len(data), limits)], subject=subject)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            [
                Problem(
                    source,
                    f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                    "save it as UTF-8; YAML manifests are text",
                )
            ],
            subject=subject,
        ) from None


def too_large(source: str, size: int, limits: Limits = LIMITS) -> Problem:
    return Problem(
        source,
        f"is too large ({_size(size)}; the limit is {_size(limits.max_bytes)})",
        "Kubernetes stores no object over about 1.5 MiB: move data out (e.g. to a file "
        "in the image or object storage) or split the manifest",
    )


def _size(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n} bytes"


def read_bytes(
    path: str | os.PathLike[str], *, limits: Limits = LIMITS, subject: str = "input"
) -> bytes:
    """Read at most ``limits.max_bytes`` of a file; anything larger, or unreadable, is refused
    with one message (a device or FIFO is never read to its end)."""
    file = Path(path)
    try:
        if file.is_dir():
            raise ValidationError(
                [Problem(str(file), "is a directory", "give a YAML file")], subject=subject
            )
        with file.open("rb") as fh:
            data = fh.read(limits.max_bytes + 1)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ValidationError(
            [Problem(str(file), f"cannot read: {why}", "check the path and its permissions")],
            subject=subject,
        ) from None
    if len(data) > limits.max_bytes:
        size = file.stat().st_size if file.is_file() else len(data)
        raise ValidationError([too_large(str(file), size, limits)], subject=subject)
    return data


def read_text(
    path: str | os.PathLike[str], *, limits: Limits = LIMITS, subject: str = "input"
) -> str:
    """:func:`read_bytes` then :func:`decode`."""
    return decode(
        read_bytes(path, limits=limits, subject=subject), str(path), limits=limits, subject=subject
    )


def parse_all(
    text: str, source: str, *, limits: Limits = LIMITS, subject: str = "input"
) -> list[Any]:
    """Every document of ``text`` (``None`` for empty ones); pure. Raises one ValidationError."""
    if len(text) > limits.max_bytes:
        raise ValidationError([too_large(source, len(text.encode()), limits)], subject=subject)
    docs: list[Any] = []
    try:
        loader = _loader(text, limits)  # the reader checks the characters here already
        try:
            while loader.check_node():
                node = loader.get_node()
                docs.append(None if node is None else loader.construct_document(node))
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise ValidationError([problem_of(exc, source)], subject=subject) from None
    return docs


def _loader(text: str, limits: Limits) -> BoundedLoader:
    if limits is LIMITS:
        return BoundedLoader(text)
    cls = type("CustomBoundedLoader", (BoundedLoader,), {"limits": limits})
    loader: BoundedLoader = cls(text)
    return loader


def parse_mapping(
    text: str,
    source: str,
    *,
    what: str = "a SparkApplication manifest",
    example: str = "see examples/spark-pi.yaml",
    limits: Limits = LIMITS,
    subject: str = "input",
) -> dict[str, Any]:
    """Exactly one YAML document that is a mapping; each other shape gets its own message."""
    docs = parse_all(text, source, limits=limits, subject=subject)
    present = [d for d in docs if d is not None]
    problem: Problem | None = None
    if not present:
        problem = Problem(
            source, "is empty (no YAML document, or only comments)", f"write {what} here; {example}"
        )
    elif len(present) > 1:
        problem = Problem(
            source,
            f"has {len(present)} YAML documents; expected one",
            f"keep only {what} in this file (templates take several objects: --template)",
        )
    elif not isinstance(present[0], dict):
        kind = (
            "a list"
            if isinstance(present[0], list)
            else f"a single value ({type(present[0]).__name__})"
        )
        problem = Problem(
            source, f"is {kind}, expected a mapping", f"write {what} (key: value lines); {example}"
        )
    if problem is not None:
        raise ValidationError([problem], subject=subject)
    result: dict[str, Any] = present[0]
    bad = [k for k in result if not isinstance(k, str)]
    if bad:
        raise ValidationError(
            [Problem(source, f"key {bad[0]!r} is not a string", "quote the key")], subject=subject
        )
    return result


def load_mapping_file(
    path: str | os.PathLike[str],
    *,
    what: str = "a SparkApplication manifest",
    example: str = "see examples/spark-pi.yaml",
    limits: Limits = LIMITS,
    subject: str = "input",
) -> dict[str, Any]:
    """Read, decode and parse a file that must hold one YAML mapping."""
    text = read_text(path, limits=limits, subject=subject)
    return parse_mapping(
        text, str(path), what=what, example=example, limits=limits, subject=subject
    )
