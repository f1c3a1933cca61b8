"""CLI output: data is printed as given, tables are never cut or wrapped."""

from __future__ import annotations

import json

from sparkplane.cli.console import Output, dump, table


def test_table_pads_and_never_truncates():
    long = "x" * 300
    text = table(["NAME", "STATE"], [[long, "Running"], ["b", "[red]Failed[/red] :smile:"]])
    lines = text.splitlines()
    assert lines[1].startswith(long + "   Running")
    assert lines[2].split()[1:] == ["[red]Failed[/red]", ":smile:"]
    assert lines[0].index("STATE") == lines[1].index("Running")


def test_dump_is_exact(capsys):
    dump([{"a": ":smile: [b]x[/b]"}], Output.json)
    assert json.loads(capsys.readouterr().out) == [{"a": ":smile: [b]x[/b]"}]
    dump({"a": "[/x]"}, Output.yaml)
    assert capsys.readouterr().out == "a: '[/x]'\n"
