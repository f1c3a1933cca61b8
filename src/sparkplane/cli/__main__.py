"""``python -m sparkplane.cli``: the same as the ``sparkplane`` command."""

from sparkplane.cli.main import main

main()
