"""Who may do what on the staging server, decided before a body byte moves.

:func:`admit_upload` (and :func:`upload_expect`, its ``Expect: 100-continue`` form) checks an
upload's owner, declared size, uploader (upload secret or Kubernetes identity,
:mod:`sparkplane.staging.auth`) and quotas; :func:`check_secret` checks a bundle's
download/delete secret. Failed attempts are rate-limited per *client and resource*:
``(address, namespace)`` for uploads and ``(address, resource id)`` for secrets, so clients
behind one NAT or Ingress working on other namespaces or bundles never lock each other out; a
valid upload secret, or an uploader the cluster confirmed recently, passes even while its
address is braked (only unknown credentials are braked: they cost a TokenReview each). Called by
:mod:`sparkplane.staging.server` only; Kubernetes is reached through the injected reviewer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from sparkplane.errors import ForbiddenError
from sparkplane.staging import tokens
from sparkplane.staging.answers import HTTPFail, fail_response
from sparkplane.staging.auth import Denied, UploadAuth, Uploader
from sparkplane.staging.limits import Quotas
from sparkplane.staging.metadata import Metadata, ResourceRecord
from sparkplane.staging.owner import ResourceOwner, owner_from_headers
from sparkplane.staging.ratelimit import FailureLimiter
from sparkplane.staging.settings import StagingSettings

log = logging.getLogger(__name__)

SETTINGS = web.AppKey("settings", StagingSettings)
DB: web.AppKey[Metadata] = web.AppKey("db")
LIMITER = web.AppKey("limiter", FailureLimiter)
ADDRESS_LIMITER = web.AppKey("address_limiter", FailureLimiter)
"""A backstop over all namespaces of one address, at 10x the limit: unknown tokens sprayed
over many namespaces still cost a bounded number of TokenReviews."""
REVIEWS = web.AppKey("reviews", asyncio.Semaphore)
"""Token reviews in flight at once (the API server's load is bounded too)."""
AUTH = web.AppKey("auth", UploadAuth)
QUOTAS = web.AppKey("quotas", Quotas)
Clock = Callable[[], float]
CLOCK: web.AppKey[Clock] = web.AppKey("clock")


def _now(request: web.Request) -> float:
    return request.app[CLOCK]()


def _braked(
    request: web.Request, key: str, what: str, limiter: web.AppKey[FailureLimiter] = LIMITER
) -> None:
    wait = request.app[limiter].retry_after(key, _now(request))
    if wait > 0:
        raise HTTPFail(
            429,
            "too_many_attempts",
            f"too many failed attempts on {what} from {request.remote}; retry in {wait:.0f}s",
            headers={"Retry-After": str(max(1, round(wait)))},
        )


async def admit_upload(request: web.Request) -> tuple[ResourceOwner, int, Uploader]:
    """Owner, declared size and uploader of an upload, or the refusal (before the body)."""
    app = request.app
    owner = owner_from_headers(request.headers)
    declared = request.content_length
    if declared is None:
        raise HTTPFail(
            411,
            "length_required",
            "send Content-Length: quotas are checked before the body is read",
        )
    limit = app[SETTINGS].max_bundle_bytes
    if declared > limit:
        raise HTTPFail(
            413, "too_large", f"bundle of {declared} bytes exceeds limit {limit} (--max-bundle-mb)"
        )
    uploader = await _uploader(request, owner.namespace)
    with app[QUOTAS].reserve(owner.namespace, declared, app[DB].usage(owner.namespace)):
        pass  # a dry check here; the handler holds the reservation while receiving
    return owner, declared, uploader


async def _uploader(request: web.Request, namespace: str) -> Uploader:
    """A valid upload secret or a recently confirmed identity passes at once; anything else
    is braked per (address, namespace) and reviewed. A request without credentials is not a
    guess: it is refused (401) without counting."""
    auth, header = request.app[AUTH], request.headers.get("Authorization", "")
    known = auth.match_secret(header, namespace) or auth.cached(header, namespace)
    if known is not None:
        return known
    key, address = f"upload:{request.remote}:{namespace}", f"upload:{request.remote}"
    if header:
        _braked(request, key, f"uploads to namespace {namespace!r}")
        _braked(request, address, "uploads", ADDRESS_LIMITER)
    try:
        async with request.app[REVIEWS]:
            return await asyncio.to_thread(auth.review, header, namespace)
    except Denied:
        if header:
            request.app[LIMITER].record_failure(key, _now(request))
            request.app[ADDRESS_LIMITER].record_failure(address, _now(request))
        raise
    except Exception as exc:
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        log.warning("token review failed: %s", first)
        why = f"cannot verify the uploader with the API server right now ({type(exc).__name__})"
        if isinstance(exc, ForbiddenError):
            why = (
                "the staging server may not ask the API server who an uploader is (its identity "
                "needs create on tokenreviews and subjectaccessreviews: `sparkplane rbac staging`)"
            )
        raise HTTPFail(
            503, "auth_unavailable", f"{why}; retry shortly", headers={"Retry-After": "5"}
        ) from exc


async def check_secret(request: web.Request, resource_id: str) -> ResourceRecord:
    """The record for ``resource_id`` if the bearer secret matches; failures count per
    (client address, resource)."""
    key = f"secret:{request.remote}:{resource_id}"
    _braked(request, key, f"resource {resource_id}")
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise HTTPFail(
            401,
            "unauthorized",
            "missing credentials: send 'Authorization: Bearer <resourceSecret>'",
            headers={"WWW-Authenticate": 'Bearer realm="sparkplane-staging"'},
        )
    record = request.app[DB].get(resource_id) if tokens.is_resource_id(resource_id) else None
    if record is None:
        request.app[LIMITER].record_failure(key, _now(request))
        raise HTTPFail(404, "not_found", f"no staged resource {resource_id} (expired or deleted?)")
    if not await asyncio.to_thread(tokens.verify_secret, secret.strip(), record.secret_hash):
        request.app[LIMITER].record_failure(key, _now(request))
        raise HTTPFail(403, "forbidden", f"wrong secret for resource {resource_id}")
    return record


async def upload_expect(request: web.Request) -> web.StreamResponse | None:
    """``Expect: 100-continue``: refuse a bad upload before the client sends the body."""
    if request.headers.get("Expect", "").lower() != "100-continue":
        return fail_response(HTTPFail(417, "expectation_failed", "only 100-continue is known"))
    try:
        await admit_upload(request)
    except Exception as exc:
        response = fail_response(exc)
        if response is None:
            raise
        response.force_close()
        return response
    if request.version >= (1, 1):
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0
    return None
