"""Terminal output shared by every command: rich consoles, errors, ``-o yaml|json``."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Any

import yaml
from rich.console import Console


def _width(stream: object) -> int | None:
    """Full-width tables when piped (rich would wrap at 80 columns)."""
    return None if getattr(stream, "isatty", lambda: False)() else 200


out = Console(highlight=False, soft_wrap=True, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_width(sys.stderr))


class Output(StrEnum):
    """``-o`` formats, as in kubectl."""

    table = "table"
    wide = "wide"
    yaml = "yaml"
    json = "json"


def dump(objs: Any, fmt: Output) -> None:
    """Print objects as YAML (multi-document for a list) or JSON."""
    if fmt is Output.json:
        out.print(json.dumps(objs, indent=2, default=str), markup=False)
    elif isinstance(objs, list):
        out.print(yaml.safe_dump_all(objs, sort_keys=False), end="", markup=False)
    else:
        out.print(yaml.safe_dump(objs, sort_keys=False), end="", markup=False)


def progress(message: str) -> None:
    """A progress line on stderr (stdout stays machine-readable)."""
    err.print(f"[dim]•[/dim] {message}")
