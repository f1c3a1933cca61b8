"""Resource staging: ship submitter-local dependencies to Spark pods (issue 7).

``server`` (HTTP upload/download, clean-up loop; asyncio, run as its own process by
``sparkplane staging serve``, whose command lives in :mod:`sparkplane.cli.staging`) over
``store`` (bundle bytes) and ``metadata`` (SQLite); ``cleanup``, ``owner``, ``tokens`` and
``ratelimit`` are pure rules; ``bundle`` packs and safely unpacks tar.gz; ``client`` (over
``wire``) is the synchronous side the submitter and ``sparkplane fetch`` call; ``process``
starts the server as a child process. Kubernetes is only reached through an injected owner
checker (``kube_owner``).
"""
