"""The ``sparkplane`` command: mounts each area's sub-commands and maps errors to exit codes."""

from __future__ import annotations

import sys

import typer

from sparkplane.cli import devcluster
from sparkplane.cli.console import err
from sparkplane.errors import SparkplaneError

app = typer.Typer(
    name="sparkplane",
    help="A Python control plane for Apache Spark on Kubernetes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(devcluster.app, name="dev-cluster")


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
