"""Template values: ``--set VAR=value`` flags and ``values.env`` files into a dict.

Owns the accepted forms of a value assignment. Called by the CLI before
:mod:`sparkplane.templates.load`. Pure: it parses text it is given (reading ``values.env``
is the caller's job) and never consults the process environment.
"""

from __future__ import annotations

from collections.abc import Iterable

from sparkplane.errors import Problem, ValidationError
from sparkplane.templates.substitute import NAME_PATTERN


def parse_assignments(assignments: Iterable[str], *, source: str = "--set") -> dict[str, str]:
    """Parse ``VAR=value`` items (``--set`` flags); the value may be empty or contain ``=``."""
    values: dict[str, str] = {}
    problems: list[Problem] = []
    for index, item in enumerate(assignments):
        name, sep, value = item.partition("=")
        if not sep or not NAME_PATTERN.fullmatch(name):
            problems.append(
                Problem(f"{source}[{index}]", f"expected VAR=value, got {item!r}", _NAME_HINT)
            )
            continue
        values[name] = value
    if problems:
        raise ValidationError(problems, subject="template values")
    return values


_NAME_HINT = "VAR must match [A-Za-z_][A-Za-z0-9_]*"


def parse_env(text: str, *, source: str = "<values>") -> dict[str, str]:
    """Parse a ``values.env`` file: ``VAR=value`` lines, ``#`` comments, optional ``export``.

    A value wrapped in matching single or double quotes is unwrapped; nothing else is
    interpreted (no escapes, no expansion), so values are exactly what is written.
    """
    values: dict[str, str] = {}
    problems: list[Problem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").lstrip()
        name, sep, value = line.partition("=")
        name = name.strip()
        if not sep or not NAME_PATTERN.fullmatch(name):
            problems.append(
                Problem(f"{source}:{number}", f"expected VAR=value, got {raw!r}", _NAME_HINT)
            )
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[name] = value
    if problems:
        raise ValidationError(problems, subject="template values")
    return values
