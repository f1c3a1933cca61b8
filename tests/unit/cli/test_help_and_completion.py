"""What a newcomer meets first: ``--help`` readable at 80 columns, the spark-submit flags that
``submit`` accepts listed in its help, and shell completion that works (bash, zsh) when it is
offered. Help is checked for every command in-process (click's own runner) and through the
installed ``sparkplane``; completion through the installed command and a real bash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer._click import core as click
from typer.testing import CliRunner

from sparkplane.cli.main import _load, app, command_names
from sparkplane.spec.submit_args import CONF_FLAGS, FLAG_ONLY, NOT_SPEC, VALUE_FLAGS

SPARKPLANE = str(Path(sys.executable).with_name("sparkplane"))
COMPLETION_OPTIONS = ("--install-completion", "--show-completion")


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    """Every command and sub-command, with the words that name it."""

    def walk(path: list[str], command: click.Command) -> Iterator[tuple[list[str], click.Command]]:
        yield path, command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk([*path, name], sub)

    for name in command_names():  # the built-ins and the installed plugins (dev-cluster)
        command = _load(name)
        assert command is not None, name
        yield from walk([name], command)


def _help(words: list[str]) -> str:
    result = CliRunner().invoke(app, [*words, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_help_names_every_option_in_full_at_80_columns():
    seen = 0
    for words, command in _commands():
        text = _help(words)
        assert "…" not in text, words
        for param in command.params:
            for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                if opt.startswith("-"):
                    assert opt in text, f"{' '.join(words)} --help: {opt} cut or missing"
        assert not [o for o in COMPLETION_OPTIONS if o in text], words  # only the root has them
        seen += 1
    assert seen > 30  # every command of the tree was looked at


def test_submit_help_lists_every_spark_submit_flag_it_accepts():
    done = subprocess.run(
        [SPARKPLANE, "submit", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    )
    words = set(done.stdout.split())
    accepted = VALUE_FLAGS | set(FLAG_ONLY) | NOT_SPEC
    assert set(CONF_FLAGS) <= accepted and "--service-account" in accepted
    assert not [flag for flag in sorted(accepted) if flag not in words]
    assert "spark-submit arguments" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80


def _complete(env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [SPARKPLANE],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "not supported" not in done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(
    ("words", "cword", "expected"),
    [
        ("sparkplane ge", 1, {"get"}),
        ("sparkplane get apps --out", 3, {"--output"}),
        ("sparkplane get apps -o ", 4, {"table", "wide", "yaml", "json", "name"}),
        ("sparkplane operator ", 2, {"install", "manifests", "run"}),
    ],
)
def test_bash_completion_protocol_answers_candidates(words: str, cword: int, expected: set[str]):
    env = {"_SPARKPLANE_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    assert expected <= set(_complete(env))


def test_zsh_completion_protocol_answers_candidates():
    env = {"_SPARKPLANE_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "sparkplane de"}
    out = _complete(env)
    text = " ".join(out)
    assert '"describe"' in text and '"dev-cluster"' in text


def test_installed_bash_completion_sources_and_completes(tmp_path: Path):
    bash = shutil.which("bash")
    assert bash, "bash is needed to prove the installed script works"
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{Path(SPARKPLANE).parent}:/usr/bin:/bin",
        "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1",  # name the shell, do not guess
    }
    done = subprocess.run(
        [SPARKPLANE, "--install-completion", "bash"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "bash completion installed" in done.stdout
    script = (tmp_path / ".bash_completions" / "sparkplane.sh").read_text()
    assert "_SPARKPLANE_COMPLETE=complete_bash" in script
    assert "source" in (tmp_path / ".bashrc").read_text()
    probe = (
        "source ~/.bashrc; complete -p sparkplane; COMP_WORDS=(sparkplane de); COMP_CWORD=1; "
        '_sparkplane_completion sparkplane; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    run = subprocess.run(
        [bash, "-c", probe], capture_output=True, text=True, env=env, check=False, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("complete ") and lines[0].endswith(" sparkplane")
    assert {"describe", "dev-cluster"} <= set(lines[1:])


def test_show_completion_prints_the_zsh_script():
    done = subprocess.run(
        [SPARKPLANE, "--show-completion", "zsh"],
        capture_output=True,
        text=True,
        env={**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "#compdef sparkplane" in done.stdout and "complete_zsh" in done.stdout
