"""``sparkplane rbac`` / ``sparkplane kubeconfig`` as a user types them (no cluster needed)."""

from __future__ import annotations

import json

import typer
import yaml
from typer.testing import CliRunner

from sparkplane.cli import security
from sparkplane.errors import ValidationError
from sparkplane.security.rbac import bodies, render, to_yaml

RUNNER = CliRunner()


def test_rbac_prints_commented_yaml():
    result = RUNNER.invoke(security.app, ["rbac", "driver", "-n", "jobs"])
    assert result.exit_code == 0, result.output
    assert result.stdout == to_yaml(render("driver", "jobs"))
    assert "# the driver reads its own pod" in result.stdout


def test_rbac_json_with_options():
    args = ["rbac", "operator", "-n", "sys", "--target-namespace", "a", "--target-namespace", "b"]
    result = RUNNER.invoke(security.app, [*args, "--service-account", "op", "-o", "json"])
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)["items"]
    assert items == bodies(render("operator", "sys", service_account="op", namespaces=["a", "b"]))


def test_rbac_refuses_a_cluster_wide_driver():
    result = RUNNER.invoke(security.app, ["rbac", "driver", "-n", "jobs", "--cluster-wide"])
    assert isinstance(result.exception, ValidationError)
    assert "no cluster-wide variant" in str(result.exception)


def test_rbac_rejects_unknown_identities():
    result = RUNNER.invoke(security.app, ["rbac", "root", "-n", "jobs"])
    assert result.exit_code == 2
    assert "root" in result.output


def test_kubeconfig_validates_the_duration_before_connecting():
    result = RUNNER.invoke(
        security.app, ["kubeconfig", "--service-account", "s", "-n", "n", "--duration", "60"]
    )
    assert isinstance(result.exception, ValidationError)
    assert "--duration" in str(result.exception)


def test_commands_mount_at_the_top_level():
    root = typer.Typer()
    root.add_typer(security.app)

    @root.command()
    def version() -> None:
        """Another command, so the root is a group."""

    result = RUNNER.invoke(root, ["--help"])
    assert "rbac" in result.stdout and "kubeconfig" in result.stdout
    out = RUNNER.invoke(root, ["rbac", "gc", "-n", "x"])
    assert list(yaml.safe_load_all(out.stdout)) == bodies(render("gc", "x"))


def test_kubeconfig_refuses_a_ten_year_token_before_connecting():
    result = RUNNER.invoke(
        security.app,
        ["kubeconfig", "--service-account", "s", "-n", "n", "--duration", "3650d"],
    )
    assert result.exit_code != 0
    assert "7d maximum" in str(result.exception) and "--force" in str(result.exception)
