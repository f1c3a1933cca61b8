"""Resource staging: ship submitter-local dependencies to Spark pods (issue 7).

``server`` (HTTP upload/download, clean-up loop) over ``store`` (bundle bytes) and ``metadata``
(SQLite); ``cleanup``, ``owner``, ``tokens`` and ``ratelimit`` are pure rules; ``bundle`` packs
and safely unpacks tar.gz; ``client`` is what the submitter and ``sparkplane fetch`` call;
``cli`` holds the commands. Kubernetes is only reached through an injected owner checker.
"""
