"""Attack the staging server the way the security review did; print attacks / refused / leaked.

Starts ``sparkplane staging serve`` in a subprocess on 127.0.0.1 with small limits, then tries
anonymous and forged uploads, quota and slot exhaustion, idle-connection floods, secret
brute force, hostile archives (unpacked the way ``sparkplane fetch`` does) and, with
``--kubeconfig``, Kubernetes tokens without rights. Every attack must be refused; "bytes leaked"
counts bytes an attacker stored without a right, read from someone else's bundle, or wrote
outside the unpack directory. Figures go to docs/staging.md and docs/reliability.md.

    python benchmarks/staging_attacks.py [--kubeconfig PATH]     # exit 1 if any attack worked
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from sparkplane.staging.client import fetch, upload_bundle
from sparkplane.staging.errors import StagingError
from sparkplane.staging.owner import ResourceOwner

RES = "/api/v0/resources"
A, B = ResourceOwner("team-a", {"app": "a"}), ResourceOwner("team-b", {"app": "b"})
C = ResourceOwner("team-c", {"app": "c"})
Attack = Callable[[], Awaitable[tuple[bool, int]]]  # -> (refused, bytes leaked)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def post(url: str, owner: ResourceOwner, data: bytes, token: str | None = None) -> int:
    return (await post_answer(url, owner, data, token))[0]


async def post_answer(
    url: str, owner: ResourceOwner, data: bytes, token: str | None = None
) -> tuple[int, str]:
    """(status, error code) of an upload."""
    headers = owner.to_headers() | ({"Authorization": f"Bearer {token}"} if token else {})
    async with aiohttp.ClientSession() as s, s.post(url + RES, data=data, headers=headers) as r:
        body = await r.json() if r.content_type == "application/json" else {}
        return r.status, str(body.get("error", ""))


async def get(url: str, rid: str, secret: str | None, method: str = "GET") -> tuple[int, int]:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with (
        aiohttp.ClientSession() as s,
        s.request(method, f"{url}{RES}/{rid}", headers=headers) as r,
    ):
        body = await r.read()
        return r.status, len(body) if r.status == 200 else 0


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


class Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def bomb(size: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=9) as tar:
        info = member("zeros.bin")
        info.size = size
        tar.addfile(info, Zeros(size))
    return buffer.getvalue()


def attacks(
    url: str, port: int, token: str, scoped: str, work: Path, idle: int
) -> dict[str, Attack]:
    victim: dict[str, str] = {}

    async def plant() -> None:
        (work / "victim").write_bytes(b"victim data" * 1000)
        staged = await asyncio.to_thread(upload_bundle, url, work / "victim", A, token=token)
        victim.update(rid=staged.resource_id, secret=staged.secret)

    async def status_in(
        statuses: set[int], coro: Awaitable[int], size: int = 0
    ) -> tuple[bool, int]:
        status = await coro
        return status in statuses, 0 if status in statuses else size

    async def brute() -> tuple[bool, int]:
        await plant()
        seen = [await get(url, victim["rid"], secrets.token_urlsafe(32)) for _ in range(8)]
        codes = {s for s, _ in seen}
        return codes <= {403, 429} and 429 in codes, sum(n for _, n in seen)

    async def idle_flood() -> tuple[bool, int]:
        def open_many() -> list[socket.socket]:
            socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(idle)]
            for sock in socks[::2]:
                sock.sendall(b"POST /api/v0/resources HTTP/1.1\r\nHost: x\r\n")  # slowloris
            return socks

        socks = await asyncio.to_thread(open_many)
        start = time.monotonic()
        async with aiohttp.ClientSession() as s, s.get(url + "/healthz") as r:
            healthy = r.status == 200
        ok = healthy and (await post(url, A, b"legit", token)) == 201
        took = time.monotonic() - start
        await asyncio.sleep(3.5)  # past --idle-timeout: the server closed them
        closed = 0
        for sock in socks:
            sock.setblocking(False)
            try:
                closed += sock.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            sock.close()
        print(f"    healthz + upload during {idle} idle connections: {took * 1000:.0f} ms")
        return ok and took < 10 and closed == len(socks), 0

    async def stall() -> tuple[bool, int]:
        writers = []
        for _ in range(2):
            _, w = await asyncio.open_connection("127.0.0.1", port)
            head = A.to_headers() | {"Authorization": f"Bearer {token}", "Content-Length": "90000"}
            lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
            w.write(f"POST {RES} HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode() + b"z" * 10)
            writers.append(w)
        await asyncio.sleep(0.5)
        third = await post(url, A, b"x", token)
        for w in writers:
            w.close()
        return third == 429, 0

    async def unpack(data: bytes, max_bytes: int | None = None) -> tuple[bool, int]:
        (work / "evil.tgz").write_bytes(data)
        staged = await asyncio.to_thread(upload_bundle, url, work / "evil.tgz", B, token=token)
        dest = work / "unpack" / staged.resource_id
        outside = set((work).rglob("*"))
        try:
            await asyncio.to_thread(
                fetch, url, staged.resource_id, staged.secret, dest, max_bytes=max_bytes
            )
            refused = False
        except StagingError:
            refused = True
        await get(url, staged.resource_id, staged.secret, "DELETE")  # room for the next one
        escaped = [p for p in set(work.rglob("*")) - outside if dest not in p.parents and p != dest]
        files = [p for p in dest.rglob("*") if p.is_file() and not p.is_symlink()]
        over = max(0, sum(p.stat().st_size for p in files) - max_bytes) if max_bytes else 0
        leaked = sum(p.lstat().st_size for p in escaped if not p.is_dir())
        return refused, leaked + over

    out: dict[str, Attack] = {
        "anonymous upload": lambda: status_in({401}, post(url, A, b"x" * 1000), 1000),
        "forged upload secret": lambda: status_in(
            {401}, post(url, A, b"x", "guess-" + "x" * 20), 1
        ),
        "secret of team-b used for team-a": lambda: status_in({403}, post(url, A, b"x", scoped), 1),
        "upload without Content-Length": lambda: status_in({411}, _chunked(url, token)),
        "bundle over --max-bundle-mb": lambda: status_in(
            {413}, post(url, B, b"x" * 2_200_000, token)
        ),
        "stalled bodies over the per-client slots": stall,
        f"{idle} idle + slowloris connections": idle_flood,
        "secret brute force on a bundle": brute,
        "download without secret": lambda: status_in(
            {401, 429}, _status(get(url, victim["rid"], None))
        ),
        "delete with a wrong secret": lambda: status_in(
            {403, 429}, _status(get(url, victim["rid"], "wrong", "DELETE"))
        ),
        "path traversal as resource id": lambda: status_in(
            {404}, _status(get(url, "..%2F..%2Fetc%2Fpasswd", "x"))
        ),
        "empty owner labels": lambda: status_in(
            {400}, post(url, ResourceOwner("team-a", {}), b"x", token)
        ),
        "invalid owner namespace": lambda: status_in(
            {400}, post(url, ResourceOwner("../kube-system", {"a": "b"}), b"x", token)
        ),
        "archive: ../ traversal": lambda: unpack(tar_of((member("../../escape.txt"), b"pwned"))),
        "archive: absolute path": lambda: unpack(tar_of((member("/tmp/sp-attack-abs"), b"pwned"))),
        "archive: symlink out, then write through it": lambda: unpack(
            tar_of(
                (member("l", tarfile.SYMTYPE, "../.."), None), (member("l/escape2.txt"), b"pwned")
            )
        ),
        "archive: device file": lambda: unpack(tar_of((member("dev", tarfile.CHRTYPE), None))),
        "archive: 1 MB -> 1 GiB bomb with --max-bytes": lambda: unpack(bomb(1024**3), 4096),
        "archive: hard-link copies over --max-bytes": lambda: unpack(
            tar_of(
                (member("d"), b"x" * 3000),
                *((member(f"c{i}", tarfile.LNKTYPE, "d"), None) for i in range(5)),
            ),
            4096,
        ),
        # last: they leave the server full
        "namespace quota overflow": lambda: _fill(url, token, A, 3, "namespace_quota_exceeded"),
        "total quota overflow": lambda: _fill(url, token, C, 4, "total_quota_exceeded"),
    }
    return out


async def _spray(url: str, count: int) -> tuple[bool, int]:
    """Last (it brakes this address for unknown credentials): the address backstop ends it."""
    owners = (ResourceOwner(f"spray-{n}", {"app": "x"}) for n in range(count))
    codes = [await post(url, owner, b"x", secrets.token_urlsafe(24)) for owner in owners]
    return set(codes) <= {401, 429} and codes[-10:] == [429] * 10, 0


async def _status(coro: Awaitable[tuple[int, int]]) -> int:
    return (await coro)[0]


async def _chunked(url: str, token: str) -> int:
    async def body():  # type: ignore[no-untyped-def]
        yield b"x" * 1000

    headers = A.to_headers() | {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession() as s, s.post(url + RES, data=body(), headers=headers) as r:
        return r.status


async def _fill(
    url: str, token: str, owner: ResourceOwner, count: int, quota: str
) -> tuple[bool, int]:
    """``count`` uploads of 700 kB (namespace) or 500 kB (total): the last must hit ``quota``."""
    size = 700_000 if quota.startswith("namespace") else 500_000
    answers = [await post_answer(url, owner, os.urandom(size), token) for _ in range(count)]
    accepted = sum(status == 201 for status, _ in answers)
    return answers[-1] == (507, quota) and accepted == count - 1, 0


async def run(
    url: str, port: int, secrets_: tuple[str, str], work: Path, idle: int, kube: dict[str, Attack]
) -> int:
    spray = ("unknown credentials sprayed over 60 namespaces", lambda: _spray(url, 60))
    rows = [*attacks(url, port, *secrets_, work, idle).items(), *kube.items(), spray]
    refused_total, leaked_total = 0, 0
    for name, attack in rows:
        refused, leaked = await attack()
        refused_total += refused
        leaked_total += leaked
        print(f"  {'refused' if refused else 'WORKED '}  {name}  (bytes leaked: {leaked})")
    print(f"attacks: {len(rows)}  refused: {refused_total}  bytes leaked: {leaked_total}")
    return 0 if refused_total == len(rows) and leaked_total == 0 else 1


def kube_section(kubeconfig: Path | None, url: str) -> tuple[dict[str, Attack], Callable[[], None]]:
    if kubeconfig is None:
        return {}, lambda: None
    from sparkplane.kube import Kube, connect
    from sparkplane.usecases.kubeconfig import request_token

    kube = Kube(connect(kubeconfig=kubeconfig))
    ns = f"sp-attack-{secrets.token_hex(4)}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}}, ns)
    nobody, _ = request_token(kube, "nobody", ns, seconds=600)
    owner = ResourceOwner(ns, {"app": "x"})
    out: dict[str, Attack] = {
        "Kubernetes token without rights in the namespace": lambda: _refused(
            {403}, post(url, owner, b"x", nobody)
        ),
        "forged Kubernetes token": lambda: _refused(
            {401}, post(url, owner, b"x", "eyJhbGciOi.forged.token")
        ),
    }
    return out, lambda: (kube.delete("v1", "Namespace", ns), kube.close())  # type: ignore[func-returns-value]


async def _refused(statuses: set[int], coro: Awaitable[int]) -> tuple[bool, int]:
    status = await coro
    return status in statuses, 0 if status in statuses else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, help="also attack with Kubernetes tokens")
    parser.add_argument("--idle", type=int, default=600, help="idle connections to open")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="staging-attacks-"))
    (work / "client").mkdir()
    token, scoped = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    (work / "secrets").write_text(f"ops:{token}\nteam-b:{scoped}:team-b\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "sparkplane.cli", "staging", "serve", "--port", str(port),
        "--storage-dir", str(work / "store"), "--db-path", str(work / "meta.sqlite3"),
        "--upload-secret-file", str(work / "secrets"), "--no-fsync",
        "--max-bundle-mb", "2", "--namespace-quota-mb", "2", "--total-quota-mb", "3",
        "--max-failed-attempts", "5", "--idle-timeout", "2", "--body-timeout", "30",
        "--max-uploads-per-client", "2", "--max-connections", "300",
    ]  # fmt: skip
    if args.kubeconfig:
        command += ["--kubeconfig", str(args.kubeconfig)]
    server = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/healthz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        kube_attacks, cleanup = kube_section(args.kubeconfig, url)
        try:
            client = work / "client"
            return asyncio.run(run(url, port, (token, scoped), client, args.idle, kube_attacks))
        finally:
            cleanup()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
