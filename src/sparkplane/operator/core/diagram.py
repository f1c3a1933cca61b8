"""Generate the state-machine documentation (Mermaid diagrams and tables) from the tables.

Owns the text between the ``<!-- generated:NAME -->`` / ``<!-- end:NAME -->`` markers of
``docs/state-machine.md``. A unit test checks ``update_doc(doc) == doc`` so the docs cannot drift
from ``operator.states``. Pure: takes and returns strings; regenerate the file with

    .venv/bin/python -c "import pathlib, sparkplane.operator.core.diagram as d; \\
        p = pathlib.Path('docs/state-machine.md'); p.write_text(d.update_doc(p.read_text()))"
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from sparkplane.operator.core.states import (
    APP_FAILURES,
    APP_INFRASTRUCTURE_FAILURES,
    APP_INITIALIZING,
    APP_MACHINE,
    APP_RUNNING,
    APP_STARTING,
    APP_STOPPING,
    APP_TERMINATED,
    CLUSTER_FAILURES,
    CLUSTER_INFRASTRUCTURE_FAILURES,
    CLUSTER_MACHINE,
    CLUSTER_TERMINATED,
    StateMachine,
)

# Per machine: the members of both enums are str, so "Failed" of one equals "Failed" of the other.
_SETS: dict[str, tuple[tuple[str, frozenset[Any]], ...]] = {
    APP_MACHINE.kind: (
        ("initializing", APP_INITIALIZING),
        ("starting", APP_STARTING),
        ("running", APP_RUNNING),
        ("stopping", APP_STOPPING),
        ("failure", APP_FAILURES),
        ("infrastructure failure", APP_INFRASTRUCTURE_FAILURES),
        ("terminated", APP_TERMINATED),
    ),
    CLUSTER_MACHINE.kind: (
        ("failure", CLUSTER_FAILURES),
        ("infrastructure failure", CLUSTER_INFRASTRUCTURE_FAILURES),
        ("terminated", CLUSTER_TERMINATED),
    ),
}
_BLOCK = re.compile(r"(<!-- generated:(?P<name>[\w-]+) -->\n)(.*?)(<!-- end:(?P=name) -->)", re.S)


def mermaid(machine: StateMachine[Any]) -> str:
    """A Mermaid ``stateDiagram-v2`` with every edge of the table, in table order."""
    lines = ["stateDiagram-v2", f"    [*] --> {machine.initial}"]
    lines += [f"    {edge.src} --> {edge.dst}" for edge in machine.edges]
    lines += [f"    {state} --> [*]" for state in machine.states if state in machine.terminal]
    return "\n".join(lines)


def _sets_of(machine: StateMachine[Any], state: StrEnum) -> str:
    return ", ".join(name for name, members in _SETS[machine.kind] if state in members)


def states_table(machine: StateMachine[Any]) -> str:
    """A Markdown table: state, meaning, the sets it belongs to, allowed next states."""
    rows = ["| State | Meaning | Sets | Next states |", "| --- | --- | --- | --- |"]
    for state in machine.states:
        nexts = [str(e.dst) for e in machine.edges if e.src == state]
        rows.append(
            f"| `{state}` | {machine.descriptions[state]} | {_sets_of(machine, state)} | "
            f"{', '.join(nexts) or '(terminal)'} |"
        )
    return "\n".join(rows)


def code_edges_table(machine: StateMachine[Any]) -> str:
    """The edges the Apache operator takes in code but does not draw in its diagram."""
    rows = ["| From | To | Taken by |", "| --- | --- | --- |"]
    rows += [f"| `{e.src}` | `{e.dst}` | {e.note} |" for e in machine.edges if e.origin == "code"]
    return "\n".join(rows)


def blocks() -> dict[str, str]:
    """Every generated block of the state-machine doc, by marker name."""
    fence = "```mermaid\n{}\n```"
    return {
        "app-diagram": fence.format(mermaid(APP_MACHINE)),
        "app-states": states_table(APP_MACHINE),
        "app-code-edges": code_edges_table(APP_MACHINE),
        "cluster-diagram": fence.format(mermaid(CLUSTER_MACHINE)),
        "cluster-states": states_table(CLUSTER_MACHINE),
    }


def update_doc(text: str) -> str:
    """``text`` with every generated block replaced by its current content.

    Raises ValueError when a block is missing from the text or the text names an unknown one.
    """
    generated = blocks()
    seen: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in generated:
            raise ValueError(f"unknown generated block {name!r}; known: {sorted(generated)}")
        seen.add(name)
        return f"{match[1]}{generated[name]}\n{match[4]}"

    result = _BLOCK.sub(fill, text)
    missing = sorted(set(generated) - seen)
    if missing:
        raise ValueError(f"generated blocks missing from the document: {missing}")
    return result
