"""The generated Mermaid diagram and tables, and that docs/state-machine.md is up to date."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sparkplane.operator.core.diagram import (
    blocks,
    code_edges_table,
    mermaid,
    states_table,
    update_doc,
)
from sparkplane.operator.core.states import APP_MACHINE, CLUSTER_MACHINE, StateMachine

DOC = Path(__file__).resolve().parents[3] / "docs" / "state-machine.md"
REGENERATE = (
    '.venv/bin/python -c "import pathlib, sparkplane.operator.core.diagram as d; '
    "p = pathlib.Path('docs/state-machine.md'); p.write_text(d.update_doc(p.read_text()))\""
)


def test_doc_matches_the_tables() -> None:
    text = DOC.read_text()
    assert update_doc(text) == text, f"docs/state-machine.md is stale; run {REGENERATE}"


def test_doc_contains_the_generated_app_diagram() -> None:
    assert f"```mermaid\n{mermaid(APP_MACHINE)}\n```" in DOC.read_text()


@pytest.mark.parametrize("machine", [APP_MACHINE, CLUSTER_MACHINE])
def test_mermaid_round_trips_to_the_table(machine: StateMachine[Any]) -> None:
    text = mermaid(machine)
    lines = text.splitlines()
    assert lines[0] == "stateDiagram-v2"
    arrows = [re.fullmatch(r"    (\S+) --> (\S+)", line) for line in lines[1:]]
    assert all(arrows)
    pairs = [(m[1], m[2]) for m in arrows if m]
    assert pairs[0] == ("[*]", str(machine.initial))
    ends = {src for src, dst in pairs if dst == "[*]"}
    assert ends == {str(s) for s in machine.terminal}
    inner = {(src, dst) for src, dst in pairs if "[*]" not in (src, dst)}
    assert inner == {(str(e.src), str(e.dst)) for e in machine.edges}


def test_states_table_has_a_row_per_state() -> None:
    table = states_table(APP_MACHINE)
    rows = table.splitlines()[2:]
    assert len(rows) == len(APP_MACHINE.states)
    row = next(r for r in rows if r.startswith("| `DriverStartTimedOut` |"))
    assert "stopping, failure, infrastructure failure" in row
    assert "ScheduledToRestart, ResourceReleased, TerminatedWithoutReleaseResources" in row
    cluster_row = next(r for r in states_table(CLUSTER_MACHINE).splitlines() if "`Failed`" in r)
    assert "stopping" not in cluster_row  # "Failed" of a cluster is not the app's "Failed"


def test_code_edges_table_lists_only_code_edges() -> None:
    rows = code_edges_table(APP_MACHINE).splitlines()[2:]
    assert len(rows) == sum(1 for e in APP_MACHINE.edges if e.origin == "code")
    assert "| `Succeeded` | `ScheduledToRestart` |" in "\n".join(rows)


def test_update_doc_fills_blocks_and_reports_missing_or_unknown_ones() -> None:
    skeleton = "".join(
        f"<!-- generated:{name} -->\nSTALE-TEXT\n<!-- end:{name} -->\n" for name in blocks()
    )
    filled = update_doc(skeleton)
    assert "STALE-TEXT" not in filled
    assert update_doc(filled) == filled
    with pytest.raises(ValueError, match="missing"):
        update_doc("no blocks here")
    with pytest.raises(ValueError, match="unknown"):
        update_doc(skeleton + "<!-- generated:nope -->\n<!-- end:nope -->\n")
