"""``sparkplane dev-cluster`` is a plugin: the sparkplane-devcluster distribution's entry point
in the ``sparkplane.cli`` group. Installed (``make install``), the command is there with all of
its sub-commands; absent (a user's ``pip install sparkplane``), it says in one line what to
install, exit 2. The absent case runs the real command in a Python that sees this venv's
packages except sparkplane-devcluster (``-S``: no ``.pth`` files, a site directory without it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sparkplane.cli.main import PLUGIN_GROUP, PLUGINS, app, command_names

ROOT = Path(__file__).resolve().parents[3]


def test_the_installed_dev_cluster_is_a_plugin_with_its_commands():
    from importlib.metadata import entry_points

    (plugin,) = [ep for ep in entry_points(group=PLUGIN_GROUP) if ep.name == "dev-cluster"]
    assert plugin.value == "sparkplane_devcluster.cli:app"
    assert plugin.dist is not None and plugin.dist.name == PLUGINS["dev-cluster"][0]
    assert command_names()[-1] == "dev-cluster"
    result = CliRunner().invoke(app, ["dev-cluster", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    for sub in ("up", "down", "build", "images", "status", "kubeconfig", "env", "simulate"):
        assert f"  {sub} " in result.output


def _without_devcluster(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python (run with -S) has every package but sparkplane-devcluster."""
    site = tmp_path / "site"
    site.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if "devcluster" not in entry.name and not entry.name.endswith(".pth"):
            (site / entry.name).symlink_to(entry)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "PYTHONPATH": f"{site}{os.pathsep}{ROOT / 'src'}", "COLUMNS": "80"}


def _sparkplane(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-S", "-m", "sparkplane.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("args", [["dev-cluster", "up"], ["dev-cluster"], ["dev-cluster", "-h"]])
def test_without_the_distribution_dev_cluster_says_what_to_install(tmp_path: Path, args: list[str]):
    env = _without_devcluster(tmp_path)
    probe = "import importlib.util, json; print(json.dumps(importlib.util.find_spec('{}') is None))"
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe.format("sparkplane_devcluster")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert json.loads(done.stdout), "the probe environment still has sparkplane_devcluster"
    done = _sparkplane(args, env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: `sparkplane dev-cluster` comes with the sparkplane-devcluster distribution, "
        "which is not installed: pip install sparkplane-devcluster (in a sparkplane checkout: "
        "make install)"
    ]


def test_without_the_distribution_help_names_it_and_other_commands_work(tmp_path: Path):
    env = _without_devcluster(tmp_path)
    done = _sparkplane(["--help"], env)
    assert done.returncode == 0, done.stderr
    commands = " ".join(done.stdout.split("Commands:")[1].split())  # help wraps at 80 columns
    assert (
        "dev-cluster The embedded local control plane. (not installed: pip install "
        "sparkplane-devcluster)"
    ) in commands
    done = _sparkplane(["render", "--help"], env)
    assert done.returncode == 0, done.stderr
    done = _sparkplane(["no-such-command"], env)
    assert done.returncode == 2 and "No such command 'no-such-command'" in done.stderr
