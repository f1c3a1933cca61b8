"""A TCP relay from the real node's host address to the loopback API server.

The dev cluster's API server listens on 127.0.0.1 only (nothing else on the machine can reach it).
The real node and its pods live in their own network namespace and reach the host through one
veth link: this relay listens on the host end of that link (``10.217.<i>.1:443``, the
``kubernetes`` Service's endpoint) and copies bytes both ways to ``127.0.0.1:<apiserver port>``.
TLS passes through untouched (the API server still authenticates every client).

Run as a script (``python relay.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT``) by the dev
cluster, like the simulated Spark UI: importing the sparkplane package would cost memory for
nothing. Only the standard library.
"""

from __future__ import annotations

import asyncio
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


async def serve(listen: tuple[str, int], target: tuple[str, int]) -> None:
    """Relay every connection to ``listen`` to ``target`` until cancelled."""

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*target)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, server_w), _pipe(server_r, client_w))

    server = await asyncio.start_server(handle, *listen, reuse_address=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> None:
    host, port, target_host, target_port = argv
    asyncio.run(serve((host, int(port)), (target_host, int(target_port))))


if __name__ == "__main__":
    main(sys.argv[1:])
