"""Idle and slow connections cannot starve health checks or real uploads.

A real server on 127.0.0.1 behind its connection guard (``server.start``). The attack of the
issue (thousands of idle uploads exhausting descriptors and stalling clients for ~30 s) is
replayed at a smaller scale with a smaller cap, so eviction and idle timeouts really act.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from sparkplane.staging.bundle import pack_bundle
from sparkplane.staging.client import fetch, upload_bundle
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.server import create_app
from sparkplane.staging.settings import StagingSettings
from tests.staging_server import served

from .conftest import TOKEN, with_

OWNER = ResourceOwner("jobs", {"spark-app-selector": "spark-1"})
IDLE = 300
SLOW_HEADERS = 150
HEADERS_ONLY = 100  # upload headers (no credential), then nothing


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (an answer, e.g. a 401, may come first)."""
    try:
        while sock.recv(65536):
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.close()
    return True


def _open_idle_connections(port: int) -> list[socket.socket]:
    held: list[socket.socket] = []
    for _ in range(IDLE):  # connect, send nothing
        held.append(_connect(port))
    for _ in range(SLOW_HEADERS):  # half a request line, then nothing
        sock = _connect(port)
        sock.send(b"POST /api/v0/resources HTTP/1.1\r\nHost: x\r\n")
        held.append(sock)
    head = "".join(f"{k}: {v}\r\n" for k, v in OWNER.to_headers().items())
    for _ in range(HEADERS_ONLY):  # an anonymous upload that never sends its body
        sock = _connect(port)
        request = f"POST /api/v0/resources HTTP/1.1\r\nHost: x\r\n{head}"
        sock.send(f"{request}Content-Length: 100000000\r\n\r\n".encode())
        held.append(sock)
    return held


def test_idle_connections_do_not_stall_health_checks_or_uploads(
    settings: StagingSettings, tmp_path: Path
) -> None:
    settings = with_(settings, max_connections=200, idle_timeout_seconds=2.0)
    (tmp_path / "app.jar").write_bytes(b"jar" * 10_000)
    bundle = tmp_path / "b.tar.gz"
    pack_bundle({"app.jar": tmp_path / "app.jar"}, bundle)

    async def health(url: str) -> int:
        async with (
            aiohttp.ClientSession() as s,
            s.get(url + "/healthz", timeout=aiohttp.ClientTimeout(total=10)) as r,
        ):
            return r.status

    with served(create_app(settings)) as url:  # the server's loop accepts on its own thread
        port = int(url.rsplit(":", 1)[1])
        held = _open_idle_connections(port)
        assert len(held) > 500
        time.sleep(0.5)
        started = time.monotonic()
        assert asyncio.run(health(url)) == 200
        staged = upload_bundle(url, bundle, OWNER, token=TOKEN)
        names = fetch(url, staged.resource_id, staged.secret, tmp_path / "out")
        assert names == ["app.jar"]
        assert time.monotonic() - started < 10  # generous: it takes milliseconds
        # the idle ones are closed by the server (cap and idle timeout), not kept
        time.sleep(settings.idle_timeout_seconds + 1.5)
        closed = sum(_closed_by_server(sock) for sock in held)
        assert closed == len(held)


def test_serve_binds_loopback_by_default_and_says_so(tmp_path: Path) -> None:
    """`sparkplane staging serve` without --host: 127.0.0.1 only, with a clear log line."""
    secrets = tmp_path / "secrets"
    secrets.write_text(f"tests:{TOKEN}\n")
    args = [
        *(sys.executable, "-m", "sparkplane.cli", "staging", "serve", "--port", "0"),
        *("--storage-dir", str(tmp_path / "b"), "--db-path", str(tmp_path / "m.sqlite3")),
        *("--upload-secret-file", str(secrets)),
    ]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if "uploads accepted with" in line:
                break
        text = "".join(lines)
        assert "staging server on http://127.0.0.1:" in text, text
        assert "loopback only; --host 0.0.0.0 serves other machines" in text
        assert "1 upload secret(s)" in text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
