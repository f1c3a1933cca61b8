"""The limits on untrusted YAML, enforced on the parser's events before anything is built.

Owns :class:`Limits` (size, nesting depth, aliases and what they expand to), the refusal of
duplicate keys and of tags beyond plain YAML (``!!python/...``, ``!!set``, local ``!tags``) and
:class:`YamlLimitError`. :func:`check` walks the event stream (libyaml's parser when installed,
else PyYAML's; libyaml's own depth limit gets the same message) and counts, for every alias,
the nodes its anchor expands to: a "billion laughs" is refused after a few hundred events,
before any node or Python object exists. Called by
:mod:`sparkplane.yamlio` (every user YAML) and :mod:`sparkplane.templates.substitute`. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

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
    max_int_digits: int = 100
    """Digits of a plain (unquoted) integer: Python refuses to parse more than 4300, and no
    Kubernetes or Spark number has more than 19 (a quoted value is text, any length)."""


LIMITS = Limits()


class YamlLimitError(yaml.MarkedYAMLError):
    """The input broke one of the :class:`Limits` or rules; ``hint`` says how to fix it."""

    def __init__(self, problem: str, mark: Any, hint: str) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.hint = hint


#: libyaml's parser when installed (about 50x faster), else PyYAML's; same events either way.
FastLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

LIBYAML_DEPTH = 1000
"""libyaml 0.2.6 (in PyYAML 6.0.4's wheels) refuses nesting past 1000 levels with its own
"exceeded maximum nesting depth". In flow (``[[[...``) its scanner reads ahead and stops there
before the first events reach :class:`_Checker`, so that error, raised where libyaml stopped,
is given the guard's message: past 1000 levels is past :attr:`Limits.max_depth` too. (Parsing
again with PyYAML's own parser would find the exact line, at some 70 KB/s: 30 s for 2 MiB.)"""


def check(text: str, limits: Limits = LIMITS) -> None:
    """Enforce :class:`Limits` and the no-duplicates/no-tags rules on the parser's events,
    before anything is composed or constructed; raise :class:`YamlLimitError` (or the parser's
    own error for a syntax error)."""
    if len(text) > limits.max_bytes:
        raise YamlLimitError(
            f"is too large ({size_text(len(text.encode()))}; "
            f"the limit is {size_text(limits.max_bytes)})",
            None,
            "Kubernetes stores no object over about 1.5 MiB: move data out or split the file",
        )
    try:
        _Checker(limits).run(yaml.parse(text, Loader=FastLoader))
    except yaml.MarkedYAMLError as exc:  # a YamlLimitError too: re-raised as it is
        if "maximum nesting depth" in (exc.problem or "") and limits.max_depth < LIBYAML_DEPTH:
            raise _too_deep(limits, exc.problem_mark) from None
        raise


def _too_deep(limits: Limits, mark: Any) -> YamlLimitError:
    return YamlLimitError(
        f"nested more than {limits.max_depth} levels deep",
        mark,
        "Kubernetes objects nest far less; check for runaway brackets or indentation",
    )


class _Frame:
    """One open collection: where its anchor's weight starts, and a mapping's keys so far."""

    __slots__ = ("anchor", "keys", "mapping", "next_is_key", "start")

    def __init__(self, mapping: bool, anchor: str | None, start: int) -> None:
        self.mapping, self.anchor, self.start = mapping, anchor, start
        self.keys: dict[str, int] = {}
        self.next_is_key = mapping


class _Checker:
    """Walks one stream of events; counts what aliases would expand to as it goes."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.stack: list[_Frame] = []
        self._reset()

    def _reset(self) -> None:
        self.written = self.expanded = self.aliases = 0
        self.weight: dict[str, int] = {}  # anchor -> expanded nodes of its (finished) node

    def run(self, events: Any) -> None:
        for event in events:
            if isinstance(event, yaml.DocumentStartEvent):
                self._reset()
            elif isinstance(event, yaml.AliasEvent):
                self._key(event, None)
                self._alias(event)
            elif isinstance(event, yaml.ScalarEvent):
                self._node(event)
                self._number(event)
                self._key(
                    event, event.value if event.tag in (None, "!") or _plain_tag(event) else None
                )
                if event.anchor:
                    self.weight[event.anchor] = 1
            elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                self._node(event)
                self._key(event, None)
                if len(self.stack) >= self.limits.max_depth:
                    raise _too_deep(self.limits, event.start_mark)
                mapping = isinstance(event, yaml.MappingStartEvent)
                self.stack.append(_Frame(mapping, event.anchor, self.expanded - 1))
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                frame = self.stack.pop()
                if frame.anchor:
                    self.weight[frame.anchor] = self.expanded - frame.start

    def _node(self, event: Any) -> None:
        tag = event.tag
        if tag not in (None, "!") and tag not in ALLOWED_TAGS:
            raise YamlLimitError(
                f"tag {tag.replace(_STD, '!!')!r} is not allowed",
                event.start_mark,
                "use plain YAML values (strings, numbers, booleans, lists, mappings); "
                "quote the value if it is meant as text",
            )
        self.written += 1
        self.expanded += 1

    def _number(self, event: Any) -> None:
        """Refuse an integer too long to parse (plain, or tagged ``!!int``)."""
        as_int = event.tag == _STD + "int" or (event.implicit[0] and event.tag in (None, "!"))
        if not as_int or len(event.value) <= self.limits.max_int_digits:
            return
        digits = _DECIMAL.fullmatch(event.value)
        if digits is None:
            return
        count = len(digits.group(1).replace("_", ""))
        if count > self.limits.max_int_digits:
            raise YamlLimitError(
                f"a number with {count} digits (at most {self.limits.max_int_digits})",
                event.start_mark,
                "no Kubernetes or Spark number is that long; quote it if it is text",
            )

    def _key(self, event: Any, key: str | None) -> None:
        """Track key/value alternation in the enclosing mapping; refuse a repeated key."""
        if not self.stack or not self.stack[-1].mapping:
            return
        frame = self.stack[-1]
        is_key, frame.next_is_key = frame.next_is_key, not frame.next_is_key
        if not is_key or key is None or key == "<<":
            return
        line = event.start_mark.line + 1
        if key in frame.keys:
            raise YamlLimitError(
                f"duplicate key {key!r} (first at line {frame.keys[key]})",
                event.start_mark,
                "each key may appear once in a mapping; keep one of them",
            )
        frame.keys[key] = line

    def _alias(self, event: Any) -> None:
        weight = self.weight.get(event.anchor)
        if weight is None:  # an undefined anchor is the parser's error; an open one is ours
            if any(f.anchor == event.anchor for f in self.stack):
                raise YamlLimitError(
                    "an alias refers to the collection that contains it (a recursive alias)",
                    event.start_mark,
                    "write the value out instead of referring to an enclosing anchor",
                )
            raise yaml.composer.ComposerError(
                None, None, f"found undefined alias {event.anchor!r}", event.start_mark
            )
        lim = self.limits
        self.aliases += 1
        self.expanded += weight
        budget = min(lim.max_expanded_nodes, max(10_000, lim.max_expansion * self.written))
        if self.aliases > lim.max_aliases or self.expanded > budget:
            raise YamlLimitError(
                f"aliases expand too much ({self.aliases} aliases, over {self.expanded} nodes "
                f"from {self.written} written; the limit is {lim.max_aliases} aliases and "
                f"{budget} nodes)",
                event.start_mark,
                "write the values out, or use fewer anchors and aliases (&name / *name)",
            )


_DECIMAL = re.compile(r"[-+]?([0-9][0-9_]*)")  # YAML 1.1 decimal ints (hex/octal parse fine)


def _plain_tag(event: Any) -> bool:
    return bool(event.tag == _STD + "str")


def size_text(n: int) -> str:
    """``n`` bytes for a message (``"10.0 MiB"`` or ``"512 bytes"``)."""
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n} bytes"
