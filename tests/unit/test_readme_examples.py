"""The README's Python examples type-check under ``mypy --strict`` (they are the API's docs)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_readme_python_examples_pass_mypy_strict(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    for i, block in enumerate(blocks):
        (tmp_path / f"readme_example_{i}.py").write_text(block)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            *sorted(str(p) for p in tmp_path.glob("*.py")),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=280,
    )
    assert done.returncode == 0, done.stdout + done.stderr
