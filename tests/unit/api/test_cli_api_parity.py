"""Nothing a user can do in the CLI is missing from the Python API (issue 20).

Every command of the CLI (sub-commands included) is listed here with the ``SparkPlane`` method
that does the same, or with why it has none (a long-running program or a container tool, not a
verb on a cluster). A new command without an entry fails the first test; an entry whose method
is missing from ``SparkPlane`` or from ``AsyncSparkPlane`` fails the second.
"""

from __future__ import annotations

from sparkplane import AsyncSparkPlane, SparkPlane
from sparkplane.cli.main import COMMANDS, _load

#: command path -> the method, or ("no method", why)
API: dict[str, str | tuple[str, str]] = {
    "render": "render",
    "submit": "submit",
    "get": "get",  # `get app NAME` (and `get apps NAME`)
    "get apps": "list",
    "describe": "describe",
    "wait": "wait",
    "logs": "logs",
    "ui": "ui",
    "events": "events",
    "kill": "kill",
    "suspend": "suspend",
    "resume": "resume",
    "gc": "gc",
    "rbac": "rbac",
    "kubeconfig": "kubeconfig",
    "tenant setup": "tenant_setup",
    "operator install": "install_operator",
    "operator manifests": ("no method", "prints deploy/'s files: sparkplane.operator.deploy"),
    "operator run": (
        "no method",
        "the operator process: sparkplane.operator.runtime.runner",
    ),
    "staging": ("no method", "the staging server's commands (below)"),
    "staging serve": ("no method", "the staging server process (sparkplane.staging)"),
    "history": "history_ensure",
    "history up": "history_up",
    "history open": "history_address",
    "history conf": "history_conf",
    "history down": "history_down",
    "session": ("no method", "the Spark Connect session commands (below)"),
    "session create": "session_create",
    "session list": "session_list",
    "session get": "session_get",
    "session attach": "session_attach",
    "session delete": "session_delete",
    "session ui": "session_ui",
    "session logs": "session_logs",
    "fetch": ("no method", "the init-container's download step inside a driver pod"),
}


def _paths() -> list[str]:
    found = []

    def walk(cmd: object, path: list[str]) -> None:
        found.append(" ".join(path))
        commands = getattr(cmd, "commands", None)
        if isinstance(commands, dict):
            for name, sub in commands.items():
                walk(sub, [*path, name])

    for name in COMMANDS:
        walk(_load(name), [name])
    return found


def test_every_cli_command_is_listed() -> None:
    paths = _paths()
    # a group is listed when it runs bare (history) or when it has no listed sub-commands
    missing = [p for p in paths if p not in API and not any(k.startswith(p + " ") for k in API)]
    assert not missing, f"CLI commands without an API entry: {missing}"
    stale = [k for k in API if k not in paths]
    assert not stale, f"entries for commands the CLI does not have: {stale}"


def test_each_listed_method_exists_in_both_apis() -> None:
    methods = {m for m in API.values() if isinstance(m, str)}
    assert not [m for m in methods if not callable(getattr(SparkPlane, m, None))]
    assert not [m for m in methods if not callable(getattr(AsyncSparkPlane, m, None))]
