"""Every documented command either runs (tests/integration and tests/realnode run them) or says
in the Markdown why it cannot; the Python examples type-check under ``mypy --strict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docblocks import ROOT, all_blocks, blocks, groups, problems, table_commands


def test_every_block_is_runnable_or_says_why() -> None:
    found = all_blocks()
    assert len([b for b in found if b.runs]) >= 20  # the extractor finds them
    assert problems(found) == []


def test_the_readmes_first_example_runs_where_spark_really_runs() -> None:
    first = table_commands()[1]
    assert first.text == "sparkplane submit -f examples/spark-pi.yaml --wait\n"
    assert first.runs and first.real_node and first.exit_code == 0


def test_markers_placeholders_and_console_commands(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- run-with: APP=pi-1 -->\n<!-- exit: 1 -->\n```console\n"
        "$ sparkplane logs APP -n spark-jobs \\\n    --tail 5\nsome output\n$ echo APPLE\n```\n\n"
        "```\nuntagged\n```\n"
        "<!-- norun: -->\n<!-- whatever: x -->\n```sh\nls\n```\n"
    )
    console, untagged, sh = blocks(doc)
    assert console.program("ns-1") == "sparkplane logs pi-1 -n ns-1 \\\n    --tail 5\necho APPLE\n"
    assert console.exit_code == 1 and console.runs and not console.real_node
    said = "\n".join(problems([console, untagged, sh]))
    assert "doc.md:10: untagged block" in said
    assert "needs its reason" in said and "unknown marker(s) ['whatever']" in said


def test_the_table_is_one_group_in_order() -> None:
    found = all_blocks()
    table = groups(found)[-1]
    assert [b.text.split()[1] for b in table][:2] == ["dev-cluster", "submit"]
    assert all(b.table for b in table) and len(groups(found)) == len(found) - len(table) + 1


def test_python_examples_pass_mypy_strict(tmp_path: Path) -> None:
    python = [b for b in all_blocks() if b.lang == "python" and b.runs]
    assert len(python) >= 4
    for i, block in enumerate(python):
        (tmp_path / f"doc_example_{i}.py").write_text(block.text)
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
