"""The ``sparkplane`` command: mounts each area's sub-commands and maps errors to exit codes."""

from __future__ import annotations

import sys

import typer

from sparkplane.cli import apps, devcluster, history, security, submit
from sparkplane.cli import operator as operator_cli
from sparkplane.cli.console import err
from sparkplane.errors import SparkplaneError
from sparkplane.staging.cli import fetch_command, staging_app

app = typer.Typer(
    name="sparkplane",
    help="A Python control plane for Apache Spark on Kubernetes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}
app.command(context_settings=EXTRA)(submit.render)
app.command(context_settings=EXTRA)(submit.submit)
app.add_typer(apps.get_app, name="get")
app.command()(apps.wait)
app.command()(apps.logs)
app.command()(apps.ui)
app.command()(apps.events)
app.command()(apps.kill)
app.command()(apps.gc)
app.add_typer(security.app)  # rbac, kubeconfig
app.add_typer(operator_cli.app, name="operator")
devcluster.app.command("simulate")(operator_cli.simulate)
app.add_typer(devcluster.app, name="dev-cluster")
app.add_typer(staging_app, name="staging", help="The resource staging server.")
app.command("fetch")(fetch_command)
app.add_typer(history.app, name="history")


def main() -> None:
    """Console-script entry point: sparkplane errors become a message and a documented exit code."""
    try:
        code = app(standalone_mode=False)
    except SparkplaneError as exc:
        err.print(f"[bold red]error:[/bold red] {exc}", markup=True, highlight=False)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except Exception as exc:  # usage errors of the CLI framework carry show() + exit_code
        code = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        raise
    sys.exit(code if isinstance(code, int) else 0)
