"""The ``sparkplane`` command: loads only the sub-commands a command line needs, and turns
every error into one message and a documented exit code (docs/cli.md); ``--debug`` (anywhere on
the command line) shows the traceback instead.

Commands are registered by name with their one-line help (:data:`COMMANDS`), and their module is
imported when that command runs, so ``sparkplane --help`` and ``sparkplane get apps`` do not
import the operator, the staging server, rich or prometheus_client. Other distributions add
commands through the ``sparkplane.cli`` entry-point group (:data:`PLUGIN_GROUP`), read only when
a command is not a built-in one: ``dev-cluster`` comes from sparkplane-devcluster, and without it
``sparkplane dev-cluster`` says what to install (exit 2).

Help is plain text for every command (:func:`_plain`: click's formatter, which wraps the help
column and never cuts an option name, at any width). Shell completion (bash, zsh, fish) is
offered by the root command only (``sparkplane --install-completion``): typer registers its
shell classes when the root has completion on, and the lazy group loads a sub-command when a
completion needs its options.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

import typer
import typer.core
import typer.main
from typer._click import core as click  # typer >= 0.29 vendors click

from sparkplane.cli import argv as cli_argv

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

# name -> (module, attribute, short help); attribute is a Typer; a ":" suffix picks one of its
# commands (the module's Typer holds several) instead of mounting the whole Typer as a group
COMMANDS: dict[str, tuple[str, str, str]] = {
    "render": (
        "sparkplane.cli.submit",
        "commands:render",
        "Print the exact manifests a submission would create.",
    ),
    "submit": (
        "sparkplane.cli.submit",
        "commands:submit",
        "Submit an application (native, operator or kubeflow).",
    ),
    "get": ("sparkplane.cli.apps", "commands:get", "Show resources (kubectl style)."),
    "describe": ("sparkplane.cli.apps", "commands:describe", "Show one application in detail."),
    "wait": ("sparkplane.cli.apps", "commands:wait", "Wait for an application."),
    "logs": (
        "sparkplane.cli.operations",
        "commands:logs",
        "Print the driver's (or an executor's) log.",
    ),
    "ui": (
        "sparkplane.cli.operations",
        "commands:ui",
        "Print the Spark UI address (or port-forward).",
    ),
    "events": ("sparkplane.cli.operations", "commands:events", "Every event of an application."),
    "kill": (
        "sparkplane.cli.operations",
        "commands:kill",
        "Delete an application and what it owns.",
    ),
    "gc": ("sparkplane.cli.operations", "commands:gc", "Delete finished apps past their TTL."),
    "rbac": ("sparkplane.cli.security", "app:rbac", "Least-privilege RBAC for an identity."),
    "kubeconfig": ("sparkplane.cli.security", "app:kubeconfig", "A service-account kubeconfig."),
    "tenant": ("sparkplane.cli.tenant", "app", "Hold a namespace to the tenant pod policy."),
    "operator": ("sparkplane.cli.operator", "app", "The spark.apache.org operator."),
    "staging": ("sparkplane.cli.staging", "app", "The resource staging server."),
    "history": ("sparkplane.cli.history", "app", "The Spark History Server: finished apps."),
    "session": ("sparkplane.cli.session", "app", "Spark Connect sessions: Spark from Python."),
    "fetch": ("sparkplane.cli.staging", "fetch_app", "Download staged files (init-container)."),
}
# Commands of other distributions: each is an entry point ``name = "module:Typer"`` in this group.
# Those of this repository are named here (name -> distribution, one-line help), so that help
# lists them and running one that is not installed says which distribution to install.
PLUGIN_GROUP = "sparkplane.cli"
PLUGINS: dict[str, tuple[str, str]] = {
    "dev-cluster": ("sparkplane-devcluster", "The embedded local control plane."),
}
EXIT_UNREACHABLE = 11
EXIT_NOT_INSTALLED = 2


def _plugins() -> dict[str, EntryPoint]:
    """The installed plugin commands (entry points) by name; never one that shadows a built-in."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP) if ep.name not in COMMANDS}


def command_names() -> list[str]:
    """Every command this installation can run: the built-ins, then the installed plugins."""
    return [*COMMANDS, *sorted(_plugins())]


def _load_plugin(name: str) -> click.Command | None:
    plugin = _plugins().get(name)
    if plugin is None:
        if name not in PLUGINS:
            return None  # click: "No such command"
        from sparkplane.errors import SparkplaneError

        dist = PLUGINS[name][0]
        error = SparkplaneError(
            f"`sparkplane {name}` comes with the {dist} distribution, which is not installed: "
            f"pip install {dist} (in a sparkplane checkout: make install)"
        )
        error.exit_code = EXIT_NOT_INSTALLED
        raise error
    return _plain(typer.main.get_command(plugin.load()))


def _load(name: str) -> click.Command | None:
    if name not in COMMANDS:
        return _load_plugin(name)
    module, attr, _ = COMMANDS[name]
    obj_name, _, member = attr.partition(":")
    obj = getattr(import_module(module), obj_name)
    command = typer.main.get_command(obj)
    if member and isinstance(command, typer.core.TyperGroup):
        command = command.commands[member]
    return _plain(command)


COMPLETION_PARAMS = frozenset({"install_completion", "show_completion"})


def _plain(command: click.Command) -> click.Command:
    """``command`` and its sub-commands with plain help (rich's option table cuts long option
    names at 80 columns) and without completion options of their own (the root has them)."""
    if hasattr(command, "rich_markup_mode"):
        command.rich_markup_mode = None
    command.params = [p for p in command.params if p.name not in COMPLETION_PARAMS]
    for sub in getattr(command, "commands", {}).values():
        _plain(sub)
    return command


class LazyGroup(typer.core.TyperGroup):
    """A group whose sub-commands are imported when used, listed from :data:`COMMANDS` and the
    installed plugins (:data:`PLUGIN_GROUP`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return command_names()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = _load(cmd_name)
        if command is not None:
            command.name = cmd_name
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:  # type: ignore[name-defined]
        installed = _plugins()
        rows = [(n, h) for n, (_, _, h) in COMMANDS.items()]
        for name, plugin in sorted(installed.items()):
            dist = plugin.dist.name if plugin.dist else "another distribution"
            rows.append((name, PLUGINS.get(name, ("", f"A command of {dist}."))[1]))
        for name, (dist, short) in PLUGINS.items():
            if name not in installed:
                rows.append((name, f"{short} (not installed: pip install {dist})"))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="sparkplane",
    cls=LazyGroup,
    help="A Python control plane for Apache Spark on Kubernetes.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich help would import every command
    add_completion=True,  # --install-completion/--show-completion; registers typer's shells
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root() -> None:
    """A Python control plane for Apache Spark on Kubernetes."""


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: errors become one message and a documented exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args[: args.index("--")] if "--" in args else "--debug" in args
    args = cli_argv.prepare([a for a in args if a != "--debug"] if debug else args)
    try:
        code: Any = app(args=args, prog_name="sparkplane", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("aborted\n")
        sys.exit(130)
    except Exception as exc:
        show, usage_code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
        if callable(show) and isinstance(usage_code, int):  # usage errors: message, exit 2
            show()
            sys.exit(usage_code)
        if debug:
            raise
        _fail(*_describe(exc))
    sys.exit(code if isinstance(code, int) else 0)


def _describe(exc: Exception) -> tuple[str, int]:
    """The message and exit code of any exception (sparkplane's own carry theirs)."""
    from sparkplane.errors import SparkplaneError

    if isinstance(exc, SparkplaneError):
        return str(exc), exc.exit_code
    module = type(exc).__module__
    if module.startswith("urllib3") or isinstance(exc, ConnectionError | TimeoutError):
        reason = getattr(exc, "reason", None) or exc
        return (
            f"cannot reach the Kubernetes API server: {reason} (is the cluster up, and do "
            "--kubeconfig/--context name it?)",
            EXIT_UNREACHABLE,
        )
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}", 3
    return (
        f"unexpected {type(exc).__name__}: {exc} (run again with --debug for the traceback, "
        "and please report it)",
        1,
    )
