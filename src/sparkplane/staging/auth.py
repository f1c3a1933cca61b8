"""Who may upload a bundle: upload secrets and Kubernetes identities, checked before the body.

The server calls :meth:`UploadAuth.check` with the request's ``Authorization`` header and the
owner namespace of the upload, before reading a byte of the body. A bearer credential is
accepted when it is

* one of the configured **upload secrets** (``--upload-secret-file``; compared in constant
  time; a secret may be limited to some namespaces), or
* a **Kubernetes token** whose identity the API server confirms (TokenReview) and which may
  ``create pods`` in the owner namespace (SubjectAccessReview): the identities that may submit
  there (``sparkplane rbac client``) may stage files there, and nobody else.

The reviews are an injected :class:`TokenReviewer` (:mod:`sparkplane.staging.kube_owner` wires it
to the gateway); this module does no I/O itself. Confirmed answers are cached for a short time
(keyed by a hash of the token, never the token) so a busy submitter costs few API calls.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sparkplane.staging.errors import StagingError

MIN_SECRET_CHARS = 16


@dataclass(frozen=True)
class UploadSecret:
    """One configured upload secret: ``name`` identifies its users in logs and limits."""

    name: str
    secret: str
    namespaces: tuple[str, ...] = ()
    """Empty: any namespace."""


@dataclass(frozen=True)
class Review:
    """What the cluster says about a token and a namespace."""

    authenticated: bool
    user: str = ""
    allowed: bool = False
    reason: str = ""


class TokenReviewer(Protocol):
    """``(token, namespace) -> Review``; blocking (TokenReview + SubjectAccessReview)."""

    def __call__(self, token: str, namespace: str) -> Review: ...


@dataclass(frozen=True)
class Uploader:
    """An accepted uploader: ``name`` keys quotas, limits and log lines."""

    name: str
    via: str
    """``upload-secret``, ``kubernetes`` or ``anonymous``."""


class Denied(Exception):
    """The upload is refused: ``status`` 401 (who are you?) or 403 (not in that namespace)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def load_upload_secrets(path: Path) -> tuple[UploadSecret, ...]:
    """Read ``name:secret[:ns1,ns2]`` lines (``#`` comments, blank lines ignored)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise StagingError(f"cannot read --upload-secret-file {path}: {exc.strerror}") from exc
    secrets: list[UploadSecret] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, rest = line.partition(":")
        secret, _, spaces = rest.partition(":")
        if not name or len(secret) < MIN_SECRET_CHARS:
            raise StagingError(
                f"--upload-secret-file {path} line {number}: expected 'name:secret[:namespaces]' "
                f"with a secret of at least {MIN_SECRET_CHARS} characters "
                "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)"
            )
        namespaces = tuple(ns.strip() for ns in spaces.split(",") if ns.strip())
        secrets.append(UploadSecret(name, secret, namespaces))
    if not secrets:
        raise StagingError(f"--upload-secret-file {path} holds no secret")
    return tuple(secrets)


class UploadAuth:
    """Decides who may upload into which namespace (see the module docstring)."""

    def __init__(
        self,
        secrets: Iterable[UploadSecret] = (),
        reviewer: TokenReviewer | None = None,
        *,
        allow_anonymous: bool = False,
        cache_seconds: float = 60.0,
        clock: Callable[[], float],
        max_cached: int = 10_000,
    ) -> None:
        self._secrets = [(_digest(s.secret), s) for s in secrets]
        self._reviewer = reviewer
        self.allow_anonymous = allow_anonymous
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._max_cached = max_cached
        self._cache: dict[tuple[bytes, str], tuple[float, Uploader]] = {}

    @property
    def methods(self) -> list[str]:
        """The accepted credentials, for the start-up log line."""
        out = [f"{len(self._secrets)} upload secret(s)"] if self._secrets else []
        if self._reviewer is not None:
            out.append("Kubernetes tokens (TokenReview + SubjectAccessReview 'create pods')")
        if self.allow_anonymous:
            out.append("ANONYMOUS uploads (--allow-anonymous-uploads)")
        return out

    def cached(self, authorization: str, namespace: str) -> Uploader | None:
        """The uploader already confirmed for this credential and namespace, if any."""
        token = _bearer(authorization)
        if not token:
            return None
        hit = self._cache.get((_digest(token), namespace))
        if hit is None or hit[0] < self._clock():
            return None
        return hit[1]

    def match_secret(self, authorization: str, namespace: str) -> Uploader | None:
        """The upload secret presented (constant time per configured secret), or None.

        Raises :class:`Denied` (403) for a secret limited to other namespaces."""
        token = _bearer(authorization)
        if not token:
            return None
        presented = _digest(token)
        found = None
        for digest, secret in self._secrets:
            if hmac.compare_digest(presented, digest):
                found = secret
        if found is None:
            return None
        if found.namespaces and namespace not in found.namespaces:
            raise Denied(
                403,
                "forbidden",
                f"upload secret {found.name!r} may not stage files for namespace {namespace!r} "
                f"(it is limited to {', '.join(found.namespaces)})",
            )
        return Uploader(f"secret:{found.name}", "upload-secret")

    def review(self, authorization: str, namespace: str) -> Uploader:
        """Blocking: the cluster's verdict on the bearer token (run it in a thread)."""
        token = _bearer(authorization)
        if not token:
            if self.allow_anonymous:
                return Uploader("anonymous", "anonymous")
            raise Denied(401, "unauthorized", self._how_to_authenticate("no credentials"))
        if self._reviewer is None:
            raise Denied(401, "unauthorized", self._how_to_authenticate("unknown upload secret"))
        verdict = self._reviewer(token, namespace)
        if not verdict.authenticated:
            detail = f"the cluster did not accept the token ({verdict.reason or 'TokenReview'})"
            raise Denied(401, "unauthorized", self._how_to_authenticate(detail))
        if not verdict.allowed:
            raise Denied(
                403,
                "forbidden",
                f"{verdict.user} may not create pods in namespace {namespace!r}, so it may not "
                "stage files for it (grant it `sparkplane rbac client` there)"
                + (f": {verdict.reason}" if verdict.reason else ""),
            )
        uploader = Uploader(verdict.user, "kubernetes")
        if len(self._cache) >= self._max_cached:
            self._cache.clear()
        self._cache[(_digest(token), namespace)] = (self._clock() + self._cache_seconds, uploader)
        return uploader

    def _how_to_authenticate(self, problem: str) -> str:
        ways = []
        if self._reviewer is not None:
            ways.append("the bearer token of a Kubernetes identity that may create pods there")
        if self._secrets:
            ways.append("an upload secret (SPARKPLANE_STAGING_TOKEN)")
        if not ways:
            return (
                f"{problem}: this server accepts no uploads "
                "(start it with --upload-secret-file or cluster credentials)"
            )
        return f"{problem}: send 'Authorization: Bearer <credential>' with " + " or ".join(ways)


def _bearer(authorization: str) -> str:
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""
