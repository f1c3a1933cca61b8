"""The sparkplane exception tree.

Every error a user can see derives from :class:`SparkplaneError`. Messages say what failed,
on which object, why, and what to try. Lower layers raise these; the CLI maps them to exit codes
(see docs/cli.md) without inspecting messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class SparkplaneError(Exception):
    """Base class of every error sparkplane raises on purpose."""

    exit_code: int = 1


@dataclass(frozen=True)
class Problem:
    """One validation problem: where it is (a dotted field path), what is wrong, how to fix it."""

    path: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}" if self.path else self.message
        return f"{text} ({self.hint})" if self.hint else text


class ValidationError(SparkplaneError):
    """Input was rejected before anything touched the cluster. Carries every problem found."""

    exit_code = 2

    def __init__(self, problems: Iterable[Problem], *, subject: str = "spec") -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.subject = subject
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"invalid {subject}: {count} {noun}; nothing was created\n{lines}")


class ConfigError(SparkplaneError):
    """Cluster credentials or sparkplane settings could not be loaded."""

    exit_code = 3


class DevClusterError(SparkplaneError):
    """The local dev control plane could not be built, started or reached."""

    exit_code = 4


class KubeError(SparkplaneError):
    """The Kubernetes API answered with an error.

    ``status`` is the parsed Kubernetes ``Status`` body when there was one; ``reason`` its
    machine-readable reason (``NotFound``, ``AlreadyExists``, ``Forbidden``, ``Conflict``...).
    """

    exit_code = 5

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        reason: str = "",
        status: dict[str, object] | None = None,
        obj: str = "",
    ) -> None:
        self.code = code
        self.reason = reason
        self.status = status or {}
        self.obj = obj
        super().__init__(message)


class NotFoundError(KubeError):
    """The object does not exist (HTTP 404)."""


class AlreadyExistsError(KubeError):
    """An object of that name already exists (HTTP 409, reason AlreadyExists)."""


class ConflictError(KubeError):
    """A write lost a race on resourceVersion (HTTP 409, reason Conflict)."""


class ForbiddenError(KubeError):
    """RBAC refused the request (HTTP 403)."""

    exit_code = 6


class QuotaExceededError(ForbiddenError):
    """A ResourceQuota refused the request (HTTP 403 "exceeded quota"): not RBAC."""

    exit_code = 5


class SessionLimitError(QuotaExceededError):
    """The namespace already runs as many Spark Connect sessions as its ResourceQuota allows."""


class AdmissionDeniedError(ForbiddenError):
    """An admission policy or webhook refused the request (HTTP 403 that is not RBAC)."""

    exit_code = 5


class TooLargeError(KubeError):
    """The request or object is larger than the API server accepts (413, etcd limit)."""


class TransportError(KubeError):
    """No HTTP answer: the API server is down or unreachable (network, TLS, DNS, timeout)."""

    exit_code = 11


class GoneError(KubeError):
    """A watch asked for a resourceVersion that etcd has compacted (HTTP 410): relist."""


class SubmissionError(SparkplaneError):
    """A submission failed part-way; what was created has been rolled back."""

    exit_code = 7

    def __init__(
        self, message: str, *, rolled_back: Sequence[str] = (), leaked: Sequence[str] = ()
    ):
        self.rolled_back = tuple(rolled_back)
        self.leaked = tuple(leaked)
        super().__init__(message)


class LocalPortError(SparkplaneError):
    """A local port to listen on (a port-forward's) is taken or not allowed: exit 2, as for
    any bad command-line value; the message names the port and how to choose another."""

    exit_code = 2

    def __init__(self, port: int, reason: str) -> None:
        self.port = port
        super().__init__(
            f"cannot listen on local port {port}: {reason.lower()} (another program or "
            "port-forward holds it?); choose another with --port N, or --port 0 for any free one"
        )


class AppNotFoundError(SparkplaneError):
    """No Spark application of that name in that namespace (native or operator mode)."""

    exit_code = 8


class NotSuspendableError(SparkplaneError):
    """``suspend``/``resume`` of an application that cannot be held: a native submission (no
    object keeps its spec to start it again) or one that has finished. Exit 12; the message
    says what to do instead."""

    exit_code = 12


class TimeoutExpired(SparkplaneError):
    """A wait ran out of time before the application reached the wanted state."""

    exit_code = 9
