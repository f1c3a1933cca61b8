"""Errors of the resource staging area (server, store, bundles, client).

Owned here so the CLI can map them to exit codes through the shared tree in ``sparkplane.errors``;
raised by the staging modules only. Nothing here does I/O.
"""

from __future__ import annotations

from sparkplane.errors import SparkplaneError


class StagingError(SparkplaneError):
    """A staging operation (store, upload, download, unpack) failed."""

    exit_code = 10


class UnsafeArchiveError(StagingError):
    """A bundle member would escape the target directory or is not a plain file, dir or link.

    ``member`` is the offending name inside the archive, so the message can point at it.
    """

    def __init__(self, member: str, reason: str) -> None:
        self.member = member
        self.reason = reason
        super().__init__(f"refusing to unpack bundle member {member!r}: {reason}")


class StagingClientError(StagingError):
    """The staging server answered with an error, or could not be reached.

    ``status`` is the HTTP status (0 when there was no answer); ``code`` the server's
    machine-readable ``error`` field (``unauthorized``, ``too_large``...).
    """

    def __init__(self, message: str, *, status: int = 0, code: str = "") -> None:
        self.status = status
        self.code = code
        super().__init__(message)
