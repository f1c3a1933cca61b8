"""A TCP relay from the real node's host address to the loopback API server.

The dev cluster's API server listens on 127.0.0.1 only (nothing else on the machine can reach it).
The real node and its pods live in their own network namespace and reach the host through one
veth link: this relay listens on the host end of that link (``10.217.<i>.1:443``, the
``kubernetes`` Service's endpoint) and copies bytes both ways to ``127.0.0.1:<apiserver port>``.
TLS passes through untouched (the API server still authenticates every client).

Every request of every pod and node component to the API server crosses it (request and
response), so on a busy machine its delays are theirs. ``benchmarks/relay_latency.py`` times one
GET direct and through relays, interleaved, with 4 CPU burners on the 2 shared cores (load ~10;
docs/benchmarks.md): on a kept connection p50/p90 direct 4.7/12.8-17.2 ms, this relay
5.4-6.8/13.8-19.6 ms, the earlier asyncio-streams relay at default priority 8.8-10.1/21.9-36.2 ms
(p99 46-95 ms against this one's 35-52). It adds milliseconds, not the 10 s of the Spark
driver's API timeout that a cold, loaded demo run once hit; the rest of that request was the
driver's own cold start (JVM, first TLS handshake) and the loaded API server, so the Spark image
also gives the driver's client 60 s (``images/data/spark-entrypoint.sh``). How it is built:

- **Scheduled before batch work** (nice -10 when allowed: a real node runs as root). It uses
  almost no CPU, but each request waits for it to be scheduled on each pass; behind CPU-bound
  processes each wait can be a whole scheduler slice. Most of the gain above.
- **One thread, asyncio protocols**: bytes go from ``data_received`` straight to the other
  transport's ``write``, reading paused while the other side's buffer is full. Not streams (a
  task, a buffer and a ``drain`` per chunk); not two threads per connection, which measured worst
  under load (p99 76-102 ms against 4-23 ms for protocols, on a plain-HTTP target): a thread
  taking the GIL waits for a descheduled holder.
- ``TCP_NODELAY`` (asyncio's default for TCP: a small request goes out at once), keep-alive probes
  (a vanished peer is noticed), half-closes forwarded (``write_eof``) and a deep listen backlog
  (a burst of new drivers' handshakes is queued, not refused).

Run as a script (``python relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT``) by the dev
cluster, like the simulated Spark UI: importing the sparkplane package would cost memory for
nothing. Only the standard library.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys

BACKLOG = 1024
NICE = -10


class _Half(asyncio.Protocol):
    """One socket of a relayed connection; what it receives is written to ``peer``."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.got_eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)

    def data_received(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)

    def eof_received(self) -> bool:
        self.got_eof = True
        peer = self.peer
        if peer is None or peer.transport is None:
            return False  # close
        if peer.got_eof:  # both directions ended
            peer.transport.close()
            return False
        if peer.transport.can_write_eof():
            peer.transport.write_eof()
        return True  # keep the other direction open (a half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()  # flushes what it still holds first

    # the peer writes into this transport: stop reading the peer while this one is full
    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


class _Client(_Half):
    """The accepted side: not read until the API server's side is connected."""

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__()
        self.target = target
        self.joining: asyncio.Task[None] | None = None  # a reference keeps the task alive

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()
        self.joining = asyncio.get_running_loop().create_task(self._join(transport))

    async def _join(self, transport: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, server = await loop.create_connection(_Half, *self.target)
        except OSError:
            transport.close()
            return
        if transport.is_closing():  # the client left meanwhile
            assert server.transport is not None
            server.transport.close()
            return
        self.peer, server.peer = server, self
        transport.resume_reading()


async def serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    """Relay every connection to ``listen`` to ``target`` until cancelled."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Client(target), *listen, reuse_address=True, backlog=BACKLOG
    )
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> None:
    host, port, target_host, target_port = argv
    try:
        os.setpriority(os.PRIO_PROCESS, 0, NICE)
    except OSError:
        pass  # not root: the default priority
    asyncio.run(serve((host, int(port)), (target_host, int(target_port))))


if __name__ == "__main__":
    main(sys.argv[1:])
