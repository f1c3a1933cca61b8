"""The staging server over real HTTP on 127.0.0.1: round trips, limits, errors, clean-up."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from sparkplane.staging.bundle import pack_bundle
from sparkplane.staging.client import fetch, upload_bundle
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.server import DB, STORE, create_app
from sparkplane.staging.settings import StagingSettings
from tests.staging_server import served

from .conftest import AUTH, TOKEN, running, serve_app, with_

OWNER = ResourceOwner("spark-jobs", {"spark-app-selector": "spark-1"})
RESOURCES = "/api/v0/resources"


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def upload_bytes(
    url: str, data: bytes, owner: ResourceOwner = OWNER
) -> aiohttp.ClientResponse:
    async with (
        aiohttp.ClientSession() as s,
        s.post(url + RESOURCES, data=data, headers={**owner.to_headers(), **AUTH}) as r,
    ):
        await r.read()
        return r


async def get(url: str, rid: str, secret: str | None) -> tuple[int, Any, Any]:
    headers = {"Authorization": f"Bearer {secret}"} if secret is not None else {}
    async with aiohttp.ClientSession() as s, s.get(f"{url}{RESOURCES}/{rid}", headers=headers) as r:
        if r.content_type == "application/json":
            return r.status, await r.json(), r.headers
        return r.status, await r.read(), r.headers


def test_bundle_round_trip_with_client(settings: StagingSettings, tmp_path: Path) -> None:
    (tmp_path / "app.jar").write_bytes(os.urandom(300_000))
    (tmp_path / "dep.py").write_text("X = 1\n")
    bundle = tmp_path / "bundle.tgz"
    pack_bundle({"jars/app.jar": tmp_path / "app.jar", "py/dep.py": tmp_path / "dep.py"}, bundle)

    with served(create_app(settings)) as url:
        rid, secret = upload_bundle(url, bundle, OWNER, token=TOKEN)
        names = fetch(url, rid, secret, tmp_path / "out")
        assert sorted(names) == ["jars/app.jar", "py/dep.py"]
        status, body, _ = run(get(url, "0" * 32, "x"))
        assert status == 404
        assert body["error"] == "not_found"
    assert (tmp_path / "out/jars/app.jar").read_bytes() == (tmp_path / "app.jar").read_bytes()
    assert [p.name for p in (tmp_path / "out").iterdir()] != []
    assert not any(p.name.startswith(".sparkplane-bundle") for p in (tmp_path / "out").iterdir())


def test_concurrent_uploads_are_isolated(settings: StagingSettings) -> None:
    payloads = [os.urandom(200_000 + i) for i in range(12)]

    async def scenario() -> None:
        async with serve_app(
            with_(settings, chunk_bytes=64 * 1024, max_uploads_per_client=len(payloads))
        ) as url:

            async def one(data: bytes) -> tuple[bytes, str, str]:
                async with (
                    aiohttp.ClientSession() as s,
                    s.post(url + RESOURCES, data=data, headers={**OWNER.to_headers(), **AUTH}) as r,
                ):
                    assert r.status == 201
                    body = await r.json()
                return data, body["resourceId"], body["resourceSecret"]

            results = await asyncio.gather(*(one(p) for p in payloads))
            assert len({rid for _, rid, _ in results}) == len(payloads)
            for data, rid, secret in results:
                status, body, _ = await get(url, rid, secret)
                assert status == 200
                assert hashlib.sha256(body).digest() == hashlib.sha256(data).digest()

    run(scenario())


def test_interrupted_upload_leaves_nothing(settings: StagingSettings) -> None:
    settings = with_(settings, chunk_bytes=64 * 1024)
    app = create_app(settings)
    tmp_dir = settings.storage_dir / ".tmp"

    async def scenario() -> None:
        async with running(app) as url:
            host, port = url.removeprefix("http://").split(":")
            _reader, writer = await asyncio.open_connection(host, int(port))
            head = "".join(f"{k}: {v}\r\n" for k, v in {**OWNER.to_headers(), **AUTH}.items())
            writer.write(
                f"POST {RESOURCES} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 50000000\r\n"
                f"{head}\r\n".encode()
            )
            for _ in range(16):
                writer.write(b"z" * 65536)
                await writer.drain()
            await eventually(lambda: any(tmp_dir.iterdir()))  # the upload really started
            writer.transport.abort()  # the client vanishes mid-body
            await eventually(lambda: not any(tmp_dir.iterdir()))
            assert app[DB].all() == []
            assert list(app[STORE].list_ids()) == []

    run(scenario())


def test_auth_errors_and_rate_limit(settings: StagingSettings) -> None:
    now = [1000.0]
    settings = with_(settings, max_failed_attempts=3, failed_attempts_window_seconds=60.0)

    async def scenario() -> None:
        async with running(create_app(settings, clock=lambda: now[0])) as url:
            r = await upload_bytes(url, b"bytes")
            assert r.status == 201
            async with (
                aiohttp.ClientSession() as s,
                s.post(url + RESOURCES, data=b"x", headers={**OWNER.to_headers(), **AUTH}) as r,
            ):
                body = await r.json()
            rid, secret = body["resourceId"], body["resourceSecret"]

            status, body, headers = await get(url, rid, None)
            assert status == 401
            assert body["error"] == "unauthorized"
            assert "Bearer" in headers["WWW-Authenticate"]
            for _ in range(3):
                status, body, _ = await get(url, rid, "wrong")
                assert status == 403
                assert body["error"] == "forbidden"
            status, body, headers = await get(url, rid, secret)  # blocked even when right
            assert status == 429
            assert body["error"] == "too_many_attempts"
            assert int(headers["Retry-After"]) == 60
            now[0] += 61
            status, body, _ = await get(url, rid, secret)
            assert (status, body) == (200, b"x")

    run(scenario())


def test_size_limit(settings: StagingSettings) -> None:
    settings = with_(settings, max_bundle_bytes=100_000, chunk_bytes=16 * 1024)

    async def chunked() -> Any:
        for _ in range(20):
            yield b"y" * 10_000

    async def scenario() -> None:
        async with serve_app(settings) as url:
            r = await upload_bytes(url, b"x" * 100_001)
            assert r.status == 413
            async with (
                aiohttp.ClientSession() as s,
                s.post(
                    url + RESOURCES, data=chunked(), headers={**OWNER.to_headers(), **AUTH}
                ) as r,
            ):  # no Content-Length: refused before the body (quotas need the size)
                assert r.status == 411
                assert (await r.json())["error"] == "length_required"
            assert (await upload_bytes(url, b"x" * 100_000)).status == 201

    run(scenario())
    assert not any((settings.storage_dir / ".tmp").iterdir())
    assert len(list(settings.storage_dir.glob("*.bundle"))) == 1


def test_invalid_owner_is_a_400_listing_problems(settings: StagingSettings) -> None:
    async def scenario() -> None:
        async with serve_app(settings) as url, aiohttp.ClientSession() as s:
            async with s.post(
                url + RESOURCES, data=b"x", headers={"X-Sparkplane-Owner-Namespace": "NS"}
            ) as r:
                assert r.status == 400
                body = await r.json()
            assert body["error"] == "invalid_request"
            assert {p["path"] for p in body["problems"]} == {"owner.namespace", "owner.labels"}
            async with s.get(url + "/healthz") as r:
                assert (r.status, await r.json()) == (200, {"status": "ok"})
            async with s.get(url + "/nope") as r:
                assert r.status == 404
                assert (await r.json())["error"] == "not_found"

    run(scenario())


def test_metadata_survives_restart(settings: StagingSettings) -> None:
    async def scenario() -> None:
        async with (
            serve_app(settings) as url,
            aiohttp.ClientSession() as s,
            s.post(
                url + RESOURCES, data=b"persist me", headers={**OWNER.to_headers(), **AUTH}
            ) as r,
        ):
            body = await r.json()
        async with serve_app(settings) as url:  # a new process would see the same files
            status, data, _ = await get(url, body["resourceId"], body["resourceSecret"])
            assert (status, data) == (200, b"persist me")

    run(scenario())


def test_cleanup_loop_expires_and_follows_owners(settings: StagingSettings) -> None:
    now = [0.0]
    alive = {"spark-1"}
    settings = with_(
        settings,
        cleanup_interval_seconds=0.02,
        unused_expiry_seconds=100.0,
        owner_grace_seconds=10.0,
    )

    def checker(namespace: str, labels: dict[str, str]) -> bool:
        return labels["spark-app-selector"] in alive

    app = create_app(settings, checker, clock=lambda: now[0])

    async def post(s: aiohttp.ClientSession, url: str) -> tuple[str, str]:
        async with s.post(url + RESOURCES, data=b"d", headers={**OWNER.to_headers(), **AUTH}) as r:
            body = await r.json()
        return body["resourceId"], body["resourceSecret"]

    async def scenario() -> None:
        async with running(app) as url, aiohttp.ClientSession() as s:
            unused, _ = await post(s, url)
            used, secret = await post(s, url)
            assert (await get(url, used, secret))[0] == 200  # first download at t=0
            now[0] = 50.0
            await asyncio.sleep(0.1)
            assert {r.resource_id for r in app[DB].all()} == {unused, used}
            now[0] = 100.0  # unused expires; used is downloaded and its owner is alive
            await eventually(lambda: {r.resource_id for r in app[DB].all()} == {used})
            assert not app[STORE].exists(unused)
            alive.clear()  # the driver and executors are gone
            await eventually(lambda: app[DB].all() == [])
            assert not app[STORE].exists(used)
            assert (await get(url, used, secret))[0] == 404

    run(scenario())


def test_client_reports_server_errors(settings: StagingSettings, tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 30_000_000)  # far beyond socket buffers: refused before the body

    with served(create_app(with_(settings, max_bundle_bytes=1000))) as url:
        with pytest.raises(StagingClientError) as info:
            upload_bundle(url, big, OWNER, token=TOKEN)
        assert (info.value.status, info.value.code) == (413, "too_large")
        with pytest.raises(StagingClientError) as info:
            fetch(url, "0" * 32, "secret", tmp_path / "out")
        assert info.value.status == 404
