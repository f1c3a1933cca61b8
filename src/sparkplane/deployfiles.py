"""Write generated deploy/ files (RBAC, staging, clean-up): one helper for every generator.

Each generator renders ``{file name: text}`` purely; a unit test compares the committed files
with it, and ``make deploy`` rewrites them through :func:`main`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path


def write_files(files: Mapping[str, str], target: Path) -> list[Path]:
    """Write every file into ``target`` (created if needed); return the paths written."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        (target / name).write_text(text)
        written.append(target / name)
    return written


def main(render: Callable[[], Mapping[str, str]], default: str, argv: list[str] | None) -> int:
    """``python -m <generator> [DIR]``: write the rendered files into DIR (or ``default``)."""
    args = sys.argv[1:] if argv is None else argv
    for path in write_files(render(), Path(args[0] if args else default)):
        print(path)
    return 0
