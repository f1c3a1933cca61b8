"""Terminal output shared by every command: plain tables, errors, ``-o yaml|json|name``.

Data is written as text, never interpreted (no rich markup, no emoji codes, no highlighting),
and tables are never truncated or wrapped: columns are padded to their widest cell, as kubectl
does, whether stdout is a terminal, a pipe or a file. ``out``/``err`` (rich consoles, markup and
emoji off) are created on first use for the commands that print rich tables, so a command that
does not need rich does not import it. Progress and status lines go to stderr; stdout carries
only the data.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    out: Console
    err: Console


def __getattr__(name: str) -> Any:
    if name in ("out", "err"):
        from rich.console import Console

        console = Console(
            stderr=name == "err", markup=False, emoji=False, highlight=False, soft_wrap=True
        )
        globals()[name] = console
        return console
    raise AttributeError(name)


class Output(StrEnum):
    """``-o`` formats, as in kubectl."""

    table = "table"
    wide = "wide"
    yaml = "yaml"
    json = "json"
    name = "name"


def write(text: str, *, end: str = "\n") -> None:
    """Data on stdout, exactly as given."""
    sys.stdout.write(text + end)
    sys.stdout.flush()


def note(text: str) -> None:
    """A message on stderr, exactly as given."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def progress(message: str) -> None:
    """A progress line on stderr (stdout stays machine-readable)."""
    note(f"• {message}")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, header: bool = True) -> str:
    """Rows padded into columns (three spaces apart), nothing cut, nothing wrapped."""
    cells = [[str(c).replace("\n", " ") for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = [list(headers)] if header else []
    lines += cells
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in lines
    )


def dump(objs: Any, fmt: Output) -> None:
    """Print objects as YAML (multi-document for a list) or JSON (an array for a list)."""
    if fmt is Output.json:
        write(json.dumps(objs, indent=2, default=str))
        return
    import yaml

    if isinstance(objs, list):
        write(yaml.safe_dump_all(objs, sort_keys=False), end="")
    else:
        write(yaml.safe_dump(objs, sort_keys=False), end="")


class Status:
    """A live status line on a terminal (its elapsed time keeps ticking); one line per change
    when stderr is not a terminal."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> Status:
        if self.tty:
            self._thread.start()
        else:
            note(self.text)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.tty:
            self._thread.join(2)
            with self._lock:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()

    def update(self, text: str) -> None:
        with self._lock:
            changed, self.text = text != self.text, text
        if changed and not self.tty:
            note(text)
        elif self.tty:
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            elapsed = time.monotonic() - self.started
            sys.stderr.write(f"\r\033[K{self.text} {elapsed:.0f}s")
            sys.stderr.flush()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._draw()
