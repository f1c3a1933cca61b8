"""The one bounded YAML reader: every user-supplied YAML goes through here.

Owns reading (bounded size, strict UTF-8), parsing under the limits of
:mod:`sparkplane.yamlguard` (nesting depth, alias expansion, duplicate keys, plain tags only),
and the one-message explanation of each way a file can be wrong (empty, a list
or a scalar where a mapping is wanted, several documents where one is wanted). Called by every
reader of user YAML: ``submit -f`` (CLI and :class:`~sparkplane.api.client.SparkPlane`), templates
(:mod:`sparkplane.templates.substitute` calls :func:`check` before composing), pod template
files (spark-submit ``--conf ...podTemplateFile`` and the operator's allowed directory).

Why: PyYAML's SafeLoader expands aliases into shared nodes, and anything that walks or dumps
the result (pydantic, ``json.dumps``) pays for every expansion: an 817-byte "billion laughs"
took 4 GB. Text is checked first and constructed only when it passed. Parsing is pure (text
in, objects out); :func:`read_bytes` is the only I/O and reads at most ``max_bytes + 1`` bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from sparkplane.errors import Problem, ValidationError
from sparkplane.yamlguard import (
    LIMITS,
    FastLoader,
    Limits,
    YamlLimitError,
    check,
    size_text,
)

__all__ = [
    "LIMITS",
    "Limits",
    "YamlLimitError",
    "check",
    "decode",
    "load_mapping_file",
    "parse_all",
    "parse_mapping",
    "problem_of",
    "read_bytes",
    "read_text",
]


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
        f"is too large ({size_text(size)}; the limit is {size_text(limits.max_bytes)})",
        "Kubernetes stores no object over about 1.5 MiB: move data out (e.g. to a file "
        "in the image or object storage) or split the manifest",
    )


def read_bytes(
    path: str | os.PathLike[str], *, limits: Limits = LIMITS, subject: str = "input"
) -> bytes:
    """Read at most ``limits.max_bytes`` of a regular file; anything larger, unreadable or not
    a regular file (a directory, a FIFO that would wait for a writer forever, a device) is
    refused with one message, before it is opened."""
    file = Path(path)
    try:
        mode = os.stat(file).st_mode
        if not stat.S_ISREG(mode):
            raise ValidationError([_not_regular(file, mode)], subject=subject)
        # O_NONBLOCK: a FIFO swapped in after the check still cannot make open() wait
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise ValidationError([_not_regular(file, mode)], subject=subject)
            data = fh.read(limits.max_bytes + 1)
    except FileNotFoundError:
        raise ValidationError(
            [Problem(str(file), "does not exist", "check the path")], subject=subject
        ) from None
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ValidationError(
            [Problem(str(file), f"cannot read: {why}", "check the path and its permissions")],
            subject=subject,
        ) from None
    if len(data) > limits.max_bytes:
        raise ValidationError([too_large(str(file), file.stat().st_size, limits)], subject=subject)
    return data


def _not_regular(file: Path, mode: int) -> Problem:
    if stat.S_ISDIR(mode):
        return Problem(str(file), "is a directory", "give a YAML file")
    kinds = (
        (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
        (stat.S_ISCHR, "is a device, not a regular file"),
        (stat.S_ISBLK, "is a device, not a regular file"),
        (stat.S_ISSOCK, "is a socket, not a regular file"),
    )
    what = next((text for test, text in kinds if test(mode)), "is not a regular file")
    return Problem(str(file), what, "give a file on disk; save piped input to a file first")


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
    try:
        check(text, limits)
        return list(yaml.load_all(text, Loader=FastLoader))
    except yaml.YAMLError as exc:
        raise ValidationError([problem_of(exc, source)], subject=subject) from None


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
