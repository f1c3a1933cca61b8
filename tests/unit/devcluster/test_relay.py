"""The API relay (run as the dev cluster runs it: a script): bytes both ways unchanged, many
connections at once, a half-close passed on, and a target that refuses closes the client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from sparkplane_devcluster import relay


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _echo_server() -> tuple[socket.socket, int]:
    """Echoes each connection until EOF, then sends b"<bye>" and closes (half-close aware)."""
    srv = socket.create_server(("127.0.0.1", 0))

    def handle(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)
            conn.sendall(b"<bye>")

    def loop() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv, int(srv.getsockname()[1])


@pytest.fixture
def relayed() -> Iterator[int]:
    srv, target = _echo_server()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, relay.__file__, "127.0.0.1", str(port), "127.0.0.1", str(target)]
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None, "the relay did not start"
            time.sleep(0.05)
    yield port
    proc.kill()
    proc.wait()
    srv.close()


def _roundtrip(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)  # the half-close reaches the server, which then says bye
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    return got


def test_bytes_pass_both_ways_and_a_half_close_reaches_the_target(relayed: int) -> None:
    payload = os.urandom(3 * 1024 * 1024)
    assert _roundtrip(relayed, payload) == payload + b"<bye>"


def test_many_connections_at_once(relayed: int) -> None:
    results: list[bytes] = []
    payloads = [os.urandom(20_000) + bytes([i]) for i in range(40)]

    def one(p: bytes) -> None:
        results.append(_roundtrip(relayed, p))

    threads = [threading.Thread(target=one, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == sorted(p + b"<bye>" for p in payloads)


def test_a_refusing_target_closes_the_client() -> None:
    port, dead = _free_port(), _free_port()
    proc = subprocess.Popen(
        [sys.executable, relay.__file__, "127.0.0.1", str(port), "127.0.0.1", str(dead)]
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        with sock:
            assert sock.recv(10) == b""  # closed at once, not hung
    finally:
        proc.kill()
        proc.wait()
