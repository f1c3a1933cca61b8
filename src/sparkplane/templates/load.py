"""Loading a template (a directory of manifests or one multi-document file) into objects.

Owns which files make a template (``*.yaml`` / ``*.yml`` directly in the directory, sorted by
name), the skipping of empty documents and the minimal shape every object must have
(``apiVersion``, ``kind``, ``metadata.name``; string label and annotation values). Called by
the CLI and the submitter (``submit`` / ``render`` with a template). The only I/O is reading
the template files (:func:`read_sources`, bounded by :mod:`sparkplane.yamlio`);
:func:`parse_objects` is pure. Every problem of every file is reported in one
:class:`~sparkplane.errors.ValidationError`; paths read ``file#N`` where N is the 1-based
document index in that file (empty documents count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkplane import yamlio
from sparkplane.errors import Problem, ValidationError
from sparkplane.templates.split import TemplateApp, split
from sparkplane.templates.substitute import (
    Occurrence,
    substitute_yaml,
    unknown_variable_problems,
)

SUFFIXES = (".yaml", ".yml")
SUBJECT = "template"


@dataclass(frozen=True)
class TemplateObject:
    """One object of a template, with where it came from (``file#N``) for error messages."""

    origin: str
    body: dict[str, Any]


def read_sources(path: str | Path) -> list[tuple[str, str]]:
    """Read a template's files as ``(name, text)`` pairs: the file itself, or the directory's
    ``*.yaml``/``*.yml`` files (not recursive) sorted by file name."""
    root = Path(path)
    if root.is_dir():
        files = sorted(p for p in root.iterdir() if p.suffix in SUFFIXES and p.is_file())
        if not files:
            raise ValidationError(
                [Problem(str(root), "no *.yaml or *.yml files in this directory")], subject=SUBJECT
            )
    elif root.is_file():
        files = [root]
    else:
        raise ValidationError(
            [Problem(str(root), "no such file or directory", "give a template file or directory")],
            subject=SUBJECT,
        )
    sources: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for file in files:
        try:  # bounded: size and strict UTF-8 (sparkplane.yamlio)
            sources.append((str(file), yamlio.read_text(file, subject=SUBJECT)))
        except ValidationError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ValidationError(problems, subject=SUBJECT)
    return sources


def _non_empty_str(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _object_problems(doc: object, origin: str) -> list[Problem]:
    if not isinstance(doc, dict):
        kind = type(doc).__name__
        return [Problem(origin, f"expected a Kubernetes object (a mapping), got a {kind}")]
    problems = [
        Problem(f"{origin}.{field}", "required: a non-empty string")
        for field in ("apiVersion", "kind")
        if not _non_empty_str(doc.get(field))
    ]
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        problems.append(Problem(f"{origin}.metadata", "required: a mapping with at least a name"))
        return problems
    if not _non_empty_str(metadata.get("name")):
        problems.append(
            Problem(
                f"{origin}.metadata.name",
                "required: a non-empty string",
                "dependents are created by name; add a variable such as ${NAME_SUFFIX} to keep "
                "names unique across runs",
            )
        )
    for field in ("labels", "annotations"):
        entries = metadata.get(field)
        if entries is None:
            continue
        if not isinstance(entries, dict):
            problems.append(Problem(f"{origin}.metadata.{field}", "must be a mapping"))
            continue
        problems += [
            Problem(
                f"{origin}.metadata.{field}.{key}",
                f"must be a string, got {type(value).__name__} {value!r}",
                'quote it, e.g. "${VAR}": a lone unquoted reference is typed (see templates docs)',
            )
            for key, value in entries.items()
            if not isinstance(value, str)
        ]
    return problems


def parse_objects(
    sources: Sequence[tuple[str, str]], values: Mapping[str, str]
) -> list[TemplateObject]:
    """Substitute and check ``(name, text)`` sources; pure. Raises one ValidationError."""
    objects: list[TemplateObject] = []
    problems: list[Problem] = []
    missing: list[Occurrence] = []
    for name, text in sources:
        result = substitute_yaml(text, values, source=name)
        problems += result.problems
        missing += result.missing
        for index, doc in enumerate(result.documents, start=1):
            if doc is None:
                continue
            origin = f"{name}#{index}"
            found = _object_problems(doc, origin)
            problems += found
            if not found:
                objects.append(TemplateObject(origin, doc))
    problems += unknown_variable_problems(missing)
    if not problems and not objects:
        names = ", ".join(name for name, _ in sources) or "(no sources)"
        problems.append(Problem(names, "the template has no objects"))
    if problems:
        raise ValidationError(problems, subject=SUBJECT)
    return objects


def load_objects(path: str | Path, values: Mapping[str, str]) -> list[TemplateObject]:
    """Read and substitute a template file or directory into objects with their origins."""
    return parse_objects(read_sources(path), values)


def load_template(path: str | Path, values: Mapping[str, str]) -> list[dict[str, Any]]:
    """Read and substitute a template file or directory into plain Kubernetes objects."""
    return [o.body for o in load_objects(path, values)]


def split_objects(objects: Sequence[TemplateObject]) -> TemplateApp:
    """:func:`~sparkplane.templates.split.split` with the objects' origins in messages."""
    return split([o.body for o in objects], origins=[o.origin for o in objects])


def load_app(path: str | Path, values: Mapping[str, str]) -> TemplateApp:
    """Read a template and split it into its driver pod and dependents, in one step."""
    return split_objects(load_objects(path, values))
