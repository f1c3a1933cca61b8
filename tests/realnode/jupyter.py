"""Notebooks run in REAL Jupyter kernels: nbclient starts ipykernel from ``.venv-jupyter``
(``make jupyter-venv``: requirements/jupyter.lock, never .venv), as a notebook user's machine
would, and every cell's output comes back as text.

A missing ``.venv-jupyter`` FAILS the test, naming the make target (never a skip).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.realnode.airflowd import ROOT

VENV = ROOT / ".venv-jupyter"
PYTHON = VENV / "bin" / "python"

#: Runs in .venv-jupyter: execute the notebook in a new kernel (cwd: the notebook's folder), write
#: it with its outputs (also when a cell fails: the traceback is in it), exit 1 on a failed cell.
RUNNER = """
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

source, out, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
nb = nbformat.read(source, as_version=4)
client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[4]}})
try:
    client.execute()
except CellExecutionError as exc:
    nbformat.write(nb, out)
    sys.exit(f"a cell failed: {exc}")
nbformat.write(nb, out)
"""


@dataclass(frozen=True)
class Ran:
    """A notebook as executed: each code cell's output text (streams, results, errors)."""

    cells: list[str]
    returncode: int
    stderr: str

    @property
    def text(self) -> str:
        return "\n".join(self.cells)


def _joined(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)  # the file splits it in lines


def _cell_text(cell: dict[str, Any]) -> str:
    parts = []
    for output in cell.get("outputs") or []:
        if output.get("output_type") == "stream":
            parts.append(_joined(output["text"]))
        elif output.get("output_type") in ("execute_result", "display_data"):
            parts.append(_joined(output["data"].get("text/plain", "")))
        elif output.get("output_type") == "error":
            parts.append("\n".join([output["ename"], output["evalue"], *output["traceback"]]))
    return "".join(parts)


def run_notebook(notebook: Path, env: dict[str, str], work: Path, *, timeout: int = 420) -> Ran:
    """Execute ``notebook`` in a new kernel with ``env`` (added to this process's); its executed
    copy is left in ``work``."""
    assert PYTHON.exists(), f"{PYTHON} is missing: run `make jupyter-venv`"
    work.mkdir(parents=True, exist_ok=True)
    runner = work / "run_notebook.py"
    runner.write_text(RUNNER)
    out = work / notebook.name
    path = f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"  # the kernel's python
    done = subprocess.run(
        [str(PYTHON), str(runner), str(notebook), str(out), str(timeout), str(notebook.parent)],
        env={**os.environ, **env, "PATH": path, "VIRTUAL_ENV": str(VENV)},
        capture_output=True,
        text=True,
        timeout=timeout + 120,
        check=False,
    )
    cells = json.loads(out.read_text())["cells"] if out.exists() else []
    texts = [_cell_text(c) for c in cells if c["cell_type"] == "code"]
    return Ran(texts, done.returncode, done.stderr[-4000:])
