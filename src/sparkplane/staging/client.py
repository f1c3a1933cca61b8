"""Client side of staging: upload a bundle, fetch and unpack one, localize remote URIs.

Called by the submitter (:func:`upload_bundle`) and by the init-container command
``sparkplane fetch`` (:func:`fetch`, :func:`localize_uris`). One async implementation with
plain-function facades for synchronous callers. Streams both ways in fixed chunks: a bundle is
never held in memory. Downloads land in a ``.part`` file that is unpacked and then removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import aiohttp

from sparkplane.staging.bundle import unpack_bundle
from sparkplane.staging.errors import StagingClientError, StagingError
from sparkplane.staging.owner import ResourceOwner

CHUNK = 1024 * 1024
RESOURCES_PATH = "/api/v0/resources"
_TIMEOUT = aiohttp.ClientTimeout(total=None, connect=30, sock_read=300)


class StagedResource(NamedTuple):
    """What an upload returns: the id and the secret a download must present."""

    resource_id: str
    secret: str


def _ssl(ca_file: Path | None) -> ssl.SSLContext | bool:
    return ssl.create_default_context(cafile=str(ca_file)) if ca_file else True


async def _raise_for(response: aiohttp.ClientResponse, action: str) -> None:
    if response.status < 400:
        return
    code, message = "", response.reason or ""
    with contextlib.suppress(aiohttp.ContentTypeError, ValueError):
        body = await response.json()
        code, message = str(body.get("error", "")), str(body.get("message", message))
    raise StagingClientError(
        f"{action} failed: HTTP {response.status} {code}: {message}",
        status=response.status,
        code=code,
    )


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    with open(path, "rb", buffering=0) as source:
        while chunk := await asyncio.to_thread(source.read, CHUNK):
            yield chunk


async def upload_bundle_async(
    url: str, path: Path, owner: ResourceOwner, *, ca_file: Path | None = None
) -> StagedResource:
    """Stream the file at ``path`` to the staging server at ``url`` (its base URL)."""
    headers = {
        **owner.to_headers(),
        "Content-Type": "application/octet-stream",
        "Content-Length": str(path.stat().st_size),
    }
    endpoint = url.rstrip("/") + RESOURCES_PATH
    try:
        async with (
            aiohttp.ClientSession(timeout=_TIMEOUT, read_bufsize=CHUNK) as session,
            session.post(
                endpoint, data=_file_chunks(path), headers=headers, ssl=_ssl(ca_file)
            ) as r,
        ):
            await _raise_for(r, f"upload of {path} to {endpoint}")
            body = await r.json()
    except aiohttp.ClientError as exc:
        raise StagingClientError(f"upload of {path} to {endpoint} failed: {exc}") from exc
    return StagedResource(str(body["resourceId"]), str(body["resourceSecret"]))


async def delete_bundle_async(
    url: str, resource_id: str, secret: str, *, ca_file: Path | None = None
) -> None:
    """Delete bundle ``resource_id`` now (its secret proves the right to)."""
    endpoint = f"{url.rstrip('/')}{RESOURCES_PATH}/{resource_id}"
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        async with (
            aiohttp.ClientSession(timeout=_TIMEOUT) as session,
            session.delete(endpoint, headers=headers, ssl=_ssl(ca_file)) as r,
        ):
            await _raise_for(r, f"delete of {endpoint}")
    except aiohttp.ClientError as exc:
        raise StagingClientError(f"delete of {endpoint} failed: {exc}") from exc


def _write_all(fd: int, chunks: list[bytes]) -> None:
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]


async def _save(response: aiohttp.ClientResponse, path: Path) -> None:
    """Stream a response body to ``path``, handing the disk writes to a thread per MiB."""
    with open(path, "wb", buffering=0) as out:
        pending: list[bytes] = []
        buffered = 0
        while chunk := await response.content.readany():
            pending.append(chunk)
            buffered += len(chunk)
            if buffered >= CHUNK:
                await asyncio.to_thread(_write_all, out.fileno(), pending)
                pending, buffered = [], 0
        await asyncio.to_thread(_write_all, out.fileno(), pending)


async def _download(
    session: aiohttp.ClientSession,
    url: str,
    dest: Path,
    *,
    headers: dict[str, str] | None = None,
    ca_file: Path | None = None,
    retries: int = 3,
) -> None:
    """GET ``url`` into ``dest`` via ``dest.part``; retries connection errors and 5xx."""
    part = dest.with_name(dest.name + ".part")
    for attempt in range(retries + 1):
        try:
            async with session.get(url, headers=headers, ssl=_ssl(ca_file)) as response:
                if response.status >= 500 and attempt < retries:
                    raise aiohttp.ClientResponseError(
                        response.request_info, (), status=response.status
                    )
                await _raise_for(response, f"download of {url}")
                await _save(response, part)
            os.replace(part, dest)
            return
        except aiohttp.ClientError as exc:
            part.unlink(missing_ok=True)
            if attempt >= retries:
                raise StagingClientError(f"download of {url} failed: {exc}") from exc
            await asyncio.sleep(min(2**attempt, 10))


async def download_bundle_async(
    url: str, resource_id: str, secret: str, dest: Path, *, ca_file: Path | None = None
) -> None:
    """Stream bundle ``resource_id`` into the file ``dest`` as is (no unpacking)."""
    endpoint = f"{url.rstrip('/')}{RESOURCES_PATH}/{resource_id}"
    async with aiohttp.ClientSession(timeout=_TIMEOUT, read_bufsize=CHUNK) as session:
        auth = {"Authorization": f"Bearer {secret}"}
        await _download(session, endpoint, dest, headers=auth, ca_file=ca_file)


async def fetch_async(
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
        await download_bundle_async(url, resource_id, secret, part, ca_file=ca_file)
        return await asyncio.to_thread(unpack_bundle, part, dest_dir, max_bytes=max_bytes)
    finally:
        part.unlink(missing_ok=True)


def _local_name(uri: str) -> str:
    parts = urlsplit(uri)
    name = unquote(parts.fragment) or unquote(parts.path.rsplit("/", 1)[-1])
    if not name or name in (".", "..") or "/" in name:
        raise StagingError(f"cannot derive a file name from {uri!r}; add '#name' to the URI")
    return name


async def localize_uris_async(
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
    gate = asyncio.Semaphore(parallel)
    async with aiohttp.ClientSession(timeout=_TIMEOUT, read_bufsize=CHUNK) as session:

        async def one(uri: str, target: Path) -> None:
            async with gate:
                await _download(session, uri, target, ca_file=ca_file)

        await asyncio.gather(*(one(uri, target) for uri, target in remote.items()))
    return result


def upload_bundle(
    url: str, path: Path, owner: ResourceOwner, *, ca_file: Path | None = None
) -> StagedResource:
    """Synchronous :func:`upload_bundle_async`."""
    return asyncio.run(upload_bundle_async(url, path, owner, ca_file=ca_file))


def delete_bundle(url: str, resource_id: str, secret: str, *, ca_file: Path | None = None) -> None:
    """Synchronous :func:`delete_bundle_async`."""
    asyncio.run(delete_bundle_async(url, resource_id, secret, ca_file=ca_file))


def fetch(
    url: str,
    resource_id: str,
    secret: str,
    dest_dir: Path,
    *,
    ca_file: Path | None = None,
    max_bytes: int | None = None,
) -> list[str]:
    """Synchronous :func:`fetch_async`."""
    return asyncio.run(
        fetch_async(url, resource_id, secret, dest_dir, ca_file=ca_file, max_bytes=max_bytes)
    )


def localize_uris(
    uris: Iterable[str], dest_dir: Path, *, ca_file: Path | None = None
) -> dict[str, Path]:
    """Synchronous :func:`localize_uris_async`."""
    return asyncio.run(localize_uris_async(uris, dest_dir, ca_file=ca_file))
