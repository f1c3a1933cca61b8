"""Client side of staging: upload a bundle, fetch and unpack one, localize remote URIs.

Called by the submitter (:func:`upload_bundle`, with the uploader's credential: a Kubernetes
bearer token or an upload secret) and by the init-container command ``sparkplane fetch``
(:func:`fetch`, :func:`localize_uris`). Every function is synchronous and blocks the calling
thread for its transfer, which runs on :mod:`sparkplane.staging.wire` (``sendfile``/``splice``);
:func:`localize_uris` downloads several URIs at once on a small thread pool. Asynchronous
callers use :class:`sparkplane.api.aio.AsyncSparkPlane`, which runs these on a thread. A bundle
is never held in memory; downloads land in a ``.part`` file renamed once complete, and unpacking
is bounded by ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote, urljoin, urlsplit

from sparkplane.staging.bundle import unpack_bundle
from sparkplane.staging.errors import StagingClientError, StagingError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.wire import await_continue, check, connect, guarded, save, send_file

RESOURCES_PATH = "/api/v0/resources"
MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class StagedResource(NamedTuple):
    """What an upload returns: the id and the secret a download must present."""

    resource_id: str
    secret: str


def _upload(endpoint: str, path: Path, headers: dict[str, str], ca_file: Path | None) -> Any:
    conn, target = connect(endpoint, ca_file)
    try:
        conn.putrequest("POST", target, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        plain = not isinstance(conn.sock, ssl.SSLSocket)  # MSG_PEEK needs a plain socket
        if plain:
            conn.putheader("Expect", "100-continue")
        conn.endheaders()
        if not plain or await_continue(conn.sock):  # a refusal (401, 507...) skips the body
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                send_file(conn.sock, path, int(headers["Content-Length"]))
            # ^ a server refusing mid-body (413) closes early; its answer is read below
        response = conn.getresponse()  # skips the interim 100 Continue
        check(response, f"upload of {path} to {endpoint}")
        return json.loads(response.read())
    finally:
        conn.close()


def upload_bundle(
    url: str,
    path: Path,
    owner: ResourceOwner,
    *,
    ca_file: Path | None = None,
    token: str | None = None,
) -> StagedResource:
    """Stream the file at ``path`` to the staging server at ``url`` (its base URL), as the
    uploader ``token`` proves (a Kubernetes bearer token or an upload secret)."""
    headers = {
        **owner.to_headers(),
        "Content-Type": "application/octet-stream",
        "Content-Length": str(path.stat().st_size),
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    endpoint = url.rstrip("/") + RESOURCES_PATH
    action = f"upload of {path} to {endpoint}"
    body = guarded(action, partial(_upload, endpoint, path, headers, ca_file))
    return StagedResource(str(body["resourceId"]), str(body["resourceSecret"]))


def _delete(endpoint: str, headers: dict[str, str], ca_file: Path | None) -> None:
    conn, target = connect(endpoint, ca_file)
    try:
        conn.request("DELETE", target, headers=headers)
        response = conn.getresponse()
        check(response, f"delete of {endpoint}")
        response.read()
    finally:
        conn.close()


def delete_bundle(url: str, resource_id: str, secret: str, *, ca_file: Path | None = None) -> None:
    """Delete bundle ``resource_id`` now (its secret proves the right to)."""
    endpoint = f"{url.rstrip('/')}{RESOURCES_PATH}/{resource_id}"
    headers = {"Authorization": f"Bearer {secret}"}
    guarded(f"delete of {endpoint}", partial(_delete, endpoint, headers, ca_file))


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def _get(url: str, part: Path, headers: dict[str, str], ca_file: Path | None) -> None:
    """GET ``url`` into ``part``, following redirects (credentials stay with their origin)."""
    location = url
    for _ in range(MAX_REDIRECTS + 1):
        conn, target = connect(location, ca_file)
        try:
            conn.request("GET", target, headers=headers)
            response = conn.getresponse()
            if response.status in _REDIRECTS and response.getheader("Location"):
                following = urljoin(location, response.getheader("Location", ""))
                if _origin(following) != _origin(location):
                    headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
                location = following
                continue
            check(response, f"download of {url}")
            save(conn, response, part)
            return
        finally:
            conn.close()
    raise StagingClientError(f"download of {url} failed: more than {MAX_REDIRECTS} redirects")


def _download(
    url: str,
    dest: Path,
    *,
    headers: dict[str, str] | None = None,
    ca_file: Path | None = None,
    retries: int = 3,
) -> None:
    """GET ``url`` into ``dest`` via ``dest.part``; retries connection errors and 5xx."""
    part = dest.with_name(dest.name + ".part")
    work = partial(_get, url, part, headers or {}, ca_file)
    for attempt in range(retries + 1):
        try:
            guarded(f"download of {url}", work)
            os.replace(part, dest)
            return
        except StagingClientError as exc:
            part.unlink(missing_ok=True)
            if attempt >= retries or 0 < exc.status < 500:
                raise
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        time.sleep(min(2**attempt, 10))


def download_bundle(
    url: str, resource_id: str, secret: str, dest: Path, *, ca_file: Path | None = None
) -> None:
    """Stream bundle ``resource_id`` into the file ``dest`` as is (no unpacking)."""
    endpoint = f"{url.rstrip('/')}{RESOURCES_PATH}/{resource_id}"
    auth = {"Authorization": f"Bearer {secret}"}
    _download(endpoint, dest, headers=auth, ca_file=ca_file)


def fetch(
    url: str,
    resource_id: str,
    secret: str,
    dest_dir: Path,
    *,
    ca_file: Path | None = None,
    max_bytes: int | None = None,
) -> list[str]:
    """Download bundle ``resource_id`` and unpack it safely into ``dest_dir``; returns names."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    part = dest_dir / f".sparkplane-bundle-{resource_id}"
    try:
        download_bundle(url, resource_id, secret, part, ca_file=ca_file)
        return unpack_bundle(part, dest_dir, max_bytes=max_bytes)
    finally:
        part.unlink(missing_ok=True)


def _local_name(uri: str) -> str:
    parts = urlsplit(uri)
    name = unquote(parts.fragment) or unquote(parts.path.rsplit("/", 1)[-1])
    if not name or name in (".", "..") or "/" in name:
        raise StagingError(f"cannot derive a file name from {uri!r}; add '#name' to the URI")
    return name


def localize_uris(
    uris: Iterable[str], dest_dir: Path, *, ca_file: Path | None = None, parallel: int = 4
) -> dict[str, Path]:
    """Download http(s) URIs into ``dest_dir`` (named by ``#alias`` or the last path segment).

    ``local:`` URIs are already in the image and map to their own path. Other schemes are
    refused: Spark fetches ``hdfs:``/``s3a:`` itself, and ``file:`` must go through staging.
    """
    dest_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Path] = {}
    remote: dict[str, Path] = {}
    for uri in uris:
        scheme = urlsplit(uri).scheme.lower()
        if scheme == "local":
            result[uri] = Path(urlsplit(uri).path)
        elif scheme in ("http", "https"):
            target = dest_dir / _local_name(uri)
            if target in remote.values():
                raise StagingError(f"two URIs would both be saved as {target.name}: use '#alias'")
            remote[uri] = result[uri] = target
        else:
            raise StagingError(
                f"cannot localize {uri!r}: the init-container fetches http(s) and local: URIs; "
                "upload submitter-local files through the staging server"
            )
    _download_all(remote, ca_file, parallel)
    return result


def _download_all(targets: dict[str, Path], ca_file: Path | None, parallel: int) -> None:
    """Download each URI into its path, ``parallel`` at a time; the first failure is raised
    once the downloads already running have ended (nothing new starts after it)."""
    if not targets:
        return
    with ThreadPoolExecutor(max(1, parallel), thread_name_prefix="sparkplane-fetch") as pool:
        futures = [
            pool.submit(_download, uri, target, ca_file=ca_file) for uri, target in targets.items()
        ]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in pending:
            future.cancel()
    for future in futures:
        if future in done and (exc := future.exception()) is not None:
            raise exc
