"""A TCP relay from the real node's host address to the loopback API server.

The dev cluster's API server listens on 127.0.0.1 only (nothing else on the machine can reach it).
The real node and its pods live in their own network namespace and reach the host through one
veth link: this relay listens on the host end of that link (``10.217.<i>.1:443``, the
``kubernetes`` Service's endpoint) and copies bytes both ways to ``127.0.0.1:<apiserver port>``.
TLS passes through untouched (the API server still authenticates every client).

Every request of every pod and node component to the API server crosses it, so on a busy
machine its latency is theirs (a cold, loaded demo run once failed when a Spark driver's GET of
its own pod timed out through it). How it is built, and why (figures from
``benchmarks/relay_latency.py``, docs/benchmarks.md):

- **Threads with blocking sockets**, two per connection (one per direction), not an asyncio
  loop: a chunk costs one ``recv_into`` and one ``sendall`` in the thread the kernel wakes,
  instead of a selector wake-up, a stream buffer, a task switch and a ``drain``; connections are
  few (the kubelet, kube-proxy, CoreDNS and each driver keep theirs open).
- **Scheduled before batch work**: the process asks for nice -10 when it may (root, which a real
  node needs anyway). It uses almost no CPU, but each request waits for it to be scheduled up to
  four times (request and response, each way through it); behind CPU-bound processes every wait
  can be a whole scheduler slice.
- ``TCP_NODELAY`` on both sides (TLS records are written whole: no Nagle delay for a small
  request), keep-alive probes (a vanished peer frees its threads), half-closes forwarded
  (``shutdown``), a 256 KiB buffer and a deep listen backlog (a burst of new drivers' handshakes
  is queued, not refused).

Run as a script (``python relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT``) by the dev
cluster, like the simulated Spark UI: importing the sparkplane package would cost memory for
nothing. Only the standard library.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

BUFFER = 256 * 1024
BACKLOG = 1024
NICE = -10


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)


def _pipe(src: socket.socket, dst: socket.socket, done: threading.Semaphore) -> None:
    """Copy ``src`` to ``dst`` until EOF, then half-close ``dst``; the second direction to
    finish closes both sockets."""
    buf = bytearray(BUFFER)
    view = memoryview(buf)
    try:
        while n := src.recv_into(buf):
            dst.sendall(view[:n])
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    if not done.acquire(blocking=False):  # the other direction already ended
        src.close()
        dst.close()


def _relay(client: socket.socket, target: tuple[str, int]) -> None:
    try:
        server = socket.create_connection(target, timeout=10)
    except OSError:
        client.close()
        return
    server.settimeout(None)
    _tune(client)
    _tune(server)
    done = threading.Semaphore(1)
    threading.Thread(target=_pipe, args=(server, client, done), daemon=True).start()
    _pipe(client, server, done)


def serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    """Relay every connection to ``listen`` to ``target``, forever."""
    with socket.create_server(listen, backlog=BACKLOG) as sock:
        while True:
            client, _ = sock.accept()
            threading.Thread(target=_relay, args=(client, target), daemon=True).start()


def main(argv: list[str]) -> None:
    host, port, target_host, target_port = argv
    try:
        os.setpriority(os.PRIO_PROCESS, 0, NICE)
    except OSError:
        pass  # not root: the default priority
    threading.stack_size(256 * 1024)
    serve((host, int(port)), (target_host, int(target_port)))


if __name__ == "__main__":
    main(sys.argv[1:])
