"""Command-line interface: commands only, no domain logic.

Importing it makes the ``kubernetes`` package load its sub-packages on first use
(:mod:`sparkplane.cli.startup`): only the command-line process pays for what it uses.
"""

from sparkplane.cli.startup import lazy_kubernetes

lazy_kubernetes()
