"""spark-submit's rule on the command line: the primary resource ends the options.

``sparkplane submit|render`` take their own options and spark-submit's; the option parser must
not see the application's arguments (``… app.jar -n 5 -h`` belongs to the app) nor read a value
such as ``--driver-java-options "-Dx=file:/y"`` as clustered short options. :func:`split`
moves every spark-submit argument (and everything from the primary resource on) behind ``--``,
where the parser passes it through untouched. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

SUBMIT_COMMANDS = frozenset({"submit", "render"})
# sparkplane's own options of submit/render that take a value, and those that do not
OWN_VALUE = frozenset(
    {
        "-f",
        "--file",
        "--template",
        "--set",
        "--values",
        "-n",
        "--namespace",
        "--mode",
        "--submission-id",
        "--queue",  # Kueue's LocalQueue (spark-submit's own --queue is YARN's, ignored on k8s)
        "--ttl",
        "--timeout",
        "-o",
        "--output",
        "--staging-server",
        "--staging-internal-server",
        "--staging-ca-file",
        "--kubeconfig",
        "--context",
    }
)
OWN_FLAGS = frozenset({"--dry-run", "--wait", "-h", "--help", "--debug"})
SPARK_FLAGS = frozenset({"--verbose", "-v", "--supervise", "--version"})


def split(args: Sequence[str]) -> list[str]:
    """``args`` (after the command name) with spark-submit's part moved behind ``--``."""
    own: list[str] = []
    spark: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, _ = arg.partition("=")
        if arg == "--":
            spark += args[i + 1 :]
            break
        if flag in OWN_VALUE:
            own.append(arg)
            if not eq and i + 1 < len(args):
                i += 1
                own.append(args[i])
        elif flag in OWN_FLAGS:
            own.append(arg)
        elif arg.startswith("-") and arg != "-":
            spark.append(arg)
            if not eq and flag not in SPARK_FLAGS and i + 1 < len(args):
                i += 1
                spark.append(args[i])
        else:  # the primary resource: it and everything after it
            spark += args[i:]
            break
        i += 1
    return [*own, "--", *spark] if spark else own


def prepare(argv: Sequence[str]) -> list[str]:
    """The whole command line (without the program name), ready for the option parser."""
    args = list(argv)
    if args and args[0] in SUBMIT_COMMANDS:
        return [args[0], *split(args[1:])]
    return args
