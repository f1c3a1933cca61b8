"""The zero-copy transfer paths: spliced uploads, chunked fallbacks, redirects, cut-off bodies."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from sparkplane.staging.client import _download, download_bundle, localize_uris, upload_bundle
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.process import staging_server
from sparkplane.staging.server import DB, STORE, create_app
from sparkplane.staging.settings import StagingSettings
from tests.staging_server import loop_thread, serving_app

from .conftest import AUTH, TOKEN, running, with_

OWNER = ResourceOwner("spark-jobs", {"spark-app-selector": "spark-1"})
RESOURCES = "/api/v0/resources"


def stored_bytes(app: web.Application, rid: str) -> bytes:
    path = app[STORE].local_path(rid)
    assert path is not None
    return path.read_bytes()


def test_large_upload_is_spliced_and_round_trips(settings: StagingSettings, tmp_path: Path) -> None:
    data = os.urandom(9 * 1024 * 1024 + 123)  # far more than aiohttp buffers with the headers
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    app = create_app(settings)

    async def two_posts(url: str) -> None:
        # one aiohttp session: the spliced upload closes its connection, the next
        # request simply opens another
        async with aiohttp.ClientSession() as session:
            for _ in range(2):
                async with session.post(
                    url + RESOURCES,
                    data=data[:3_000_000],
                    headers={**OWNER.to_headers(), **AUTH},
                ) as r:
                    assert r.status == 201
                    body = await r.json()
                assert stored_bytes(app, body["resourceId"]) == data[:3_000_000]

    with serving_app(app) as url:
        rid, secret = upload_bundle(url, source, OWNER, token=TOKEN)
        assert stored_bytes(app, rid) == data
        assert app[DB].get(rid) is not None
        download_bundle(url, rid, secret, tmp_path / "back.bin")
        asyncio.run(two_posts(url))
    assert hashlib.sha256((tmp_path / "back.bin").read_bytes()).digest() == (
        hashlib.sha256(data).digest()
    )


def test_chunked_upload_is_refused_before_its_body(settings: StagingSettings) -> None:
    """Quotas are checked against the declared size, so a body must declare it (411)."""
    parts = [os.urandom(300_000) for _ in range(7)]
    app = create_app(with_(settings, chunk_bytes=256 * 1024))

    async def body() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    async def scenario() -> None:
        async with (
            running(app) as url,
            aiohttp.ClientSession() as session,
            session.post(url + RESOURCES, data=body(), headers={**OWNER.to_headers(), **AUTH}) as r,
        ):
            assert r.status == 411
            assert "Content-Length" in (await r.json())["message"]
            assert app[DB].all() == []

    asyncio.run(scenario())


def test_download_follows_redirects_and_decodes_chunked_bodies(tmp_path: Path) -> None:
    payload = os.urandom(2_500_000)
    seen_auth: list[str | None] = []

    async def chunked(request: web.Request) -> web.StreamResponse:
        seen_auth.append(request.headers.get("Authorization"))
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(payload), 100_000):
            await response.write(payload[start : start + 100_000])
        await response.write_eof()
        return response

    async def hop(request: web.Request) -> web.Response:
        seen_auth.append(request.headers.get("Authorization"))
        raise web.HTTPFound("/chunked")

    app = web.Application()
    app.router.add_get("/chunked", chunked)
    app.router.add_get("/hop", hop)

    with serving_app(app) as url:
        _download(f"{url}/hop", tmp_path / "out", headers={"Authorization": "Bearer s"})
    assert (tmp_path / "out").read_bytes() == payload
    assert seen_auth == ["Bearer s", "Bearer s"]  # same origin: the credentials follow


@contextlib.contextmanager
def raw_server(answer: bytes) -> Iterator[str]:
    """A TCP server (on a thread) that reads a request's headers, sends ``answer`` and closes."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        writer.close()

    with loop_thread() as runner:
        server = runner.run(asyncio.start_server(handle, "127.0.0.1", 0))
        port = server.sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.close()


def test_a_body_cut_short_is_an_error_and_leaves_no_part(tmp_path: Path) -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\n" + b"x" * 70_000

    with (
        raw_server(answer) as url,
        pytest.raises(StagingClientError, match=r"download of .* failed"),
    ):
        _download(f"{url}/f", tmp_path / "out", retries=0)
    assert list(tmp_path.iterdir()) == []


def test_server_errors_are_retried(tmp_path: Path) -> None:
    calls: list[int] = []

    async def flaky(request: web.Request) -> web.Response:
        calls.append(1)
        if len(calls) == 1:
            return web.Response(status=503)
        return web.Response(body=b"JAR")

    app = web.Application()
    app.router.add_get("/lib.jar", flaky)

    with serving_app(app) as url:
        localize_uris([f"{url}/lib.jar"], tmp_path)
    assert (tmp_path / "lib.jar").read_bytes() == b"JAR"
    assert len(calls) == 2


def test_the_client_runs_in_the_calling_thread_even_inside_an_event_loop(tmp_path: Path) -> None:
    """A synchronous upload from a running loop (a notebook cell, an ``async def`` calling the
    sync API) works: no ``asyncio.run`` underneath, no background loop, no worker thread. The
    server is its own process (``sparkplane staging serve``), so every thread here is ours."""
    (tmp_path / "a.jar").write_bytes(b"A" * 10_000)
    secrets = tmp_path / "secrets"
    secrets.write_text(f"tests:{TOKEN}\n")
    threads: list[str] = []

    async def cell(url: str) -> tuple[str, str]:
        before = {t.name for t in threading.enumerate()}
        staged = upload_bundle(url, tmp_path / "a.jar", OWNER, token=TOKEN)
        download_bundle(url, *staged, tmp_path / "back")
        threads.extend(sorted({t.name for t in threading.enumerate()} - before))
        return staged

    args = ["--port", "0", "--storage-dir", str(tmp_path / "b"), "--no-fsync"]
    args += ["--db-path", str(tmp_path / "m.sqlite3"), "--upload-secret-file", str(secrets)]
    with staging_server(*args) as url:
        asyncio.run(cell(url))
    assert (tmp_path / "back").read_bytes() == b"A" * 10_000
    assert threads == []


def test_a_body_shorter_than_declared_stores_nothing(settings: StagingSettings) -> None:
    app = create_app(settings)

    async def scenario() -> None:
        async with running(app) as url:
            host, port = url.removeprefix("http://").split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            head = "".join(f"{k}: {v}\r\n" for k, v in OWNER.to_headers().items())
            writer.write(
                f"POST {RESOURCES} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 3000000\r\n"
                f"{head}\r\n".encode()
                + b"q" * 2_000_000
            )
            await writer.drain()
            writer.write_eof()  # a million bytes short
            answer = await reader.read()  # aiohttp drops a half-closed request unanswered
            assert b" 201 " not in answer
            writer.close()
            for _ in range(500):  # the abort runs on the writer thread, right after
                if not any((settings.storage_dir / ".tmp").iterdir()):
                    break
                await asyncio.sleep(0.02)
            assert not any((settings.storage_dir / ".tmp").iterdir())
            assert app[DB].all() == []

    asyncio.run(scenario())


def test_upload_waits_for_100_continue_and_skips_a_refused_body() -> None:
    """The client sends ``Expect: 100-continue``: a refusal (401, 507...) arrives before the
    body is sent, so a large bundle is not pushed to a server that will not take it."""
    from sparkplane.staging.wire import await_continue

    answers = {
        b"HTTP/1.1 100 Continue\r\n\r\n": True,
        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n": False,
        b"": True,  # a server that ignores Expect: send after the timeout
    }
    for answer, send_body in answers.items():
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.sendall(answer)
            ours.settimeout(2)
            assert await_continue(ours, timeout=0.2) is send_body, answer
            if answer:  # left unread for http.client to parse
                assert ours.recv(100, socket.MSG_PEEK) == answer
    ours, theirs = socket.socketpair()
    with ours:
        theirs.close()
        assert await_continue(ours, timeout=0.2) is False  # closed: nothing to send to
