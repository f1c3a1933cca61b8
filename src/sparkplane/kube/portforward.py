"""Port-forward a local TCP port to a pod port through the API server (``kubectl port-forward``).

Each local connection gets its own forwarding stream; bytes are pumped both ways by two threads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from kubernetes.client import CoreV1Api
from kubernetes.stream import portforward

from sparkplane.errors import LocalPortError
from sparkplane.kube.client import Kube


def _pump(src: Any, dst: Any) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def _websocket_ca(cfg: Any) -> Iterator[None]:
    """The client's websocket layer reads the CA only from a file: when the configuration holds
    it as data, hand it a private file just for the handshake and remove it right after."""
    data = getattr(cfg, "ca_cert_data", None)
    if cfg.ssl_ca_cert or not data:
        yield
        return
    with tempfile.NamedTemporaryFile("w", suffix=".crt", prefix="sparkplane-ca-") as handle:
        handle.write(data if isinstance(data, str) else data.decode())
        handle.flush()
        cfg.ssl_ca_cert = handle.name
        try:
            yield
        finally:
            cfg.ssl_ca_cert = None


_PROXY_THREAD = "Kubernetes port forward proxy"
_previous_hook = threading.excepthook


def _quiet_proxy_errors(args: Any) -> None:
    """The client's proxy thread dies with a traceback when either end resets its stream (a
    closed port, a client gone): that is the end of one forwarded connection, not an error."""
    thread = args.thread
    if isinstance(args.exc_value, OSError) and thread and thread.name.startswith(_PROXY_THREAD):
        return
    _previous_hook(args)


def open_stream(kube: Kube, pod: str, namespace: str, port: int) -> Any:
    """A socket-like object connected to ``port`` of ``pod``."""
    if threading.excepthook is not _quiet_proxy_errors:
        threading.excepthook = _quiet_proxy_errors
    api = CoreV1Api(kube.api.api_client())
    with _websocket_ca(kube.api.configuration):
        pf = portforward(
            api.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port)
        )
    return pf.socket(port)


def listen(local_port: int = 0) -> socket.socket:
    """A socket listening on ``127.0.0.1:local_port`` (0: any free port), bound in the
    caller's thread so that a taken port is an error there, never in a worker thread."""
    try:
        server = socket.create_server(("127.0.0.1", local_port))
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise LocalPortError(local_port, os.strerror(exc.errno)) from exc
        raise
    server.settimeout(0.5)
    return server


def forward(
    kube: Kube,
    pod: str,
    namespace: str,
    port: int,
    server: socket.socket,
    *,
    stop: threading.Event | None = None,
) -> None:
    """Serve ``server`` (from :func:`listen`) until ``stop`` is set (or forever): each local
    connection is pumped to ``port`` of ``pod``."""
    with server:
        while stop is None or not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            try:
                remote = open_stream(kube, pod, namespace, port)
            except Exception:  # pod gone or port not yet open: this connection fails, not all
                client.close()
                continue
            threading.Thread(target=_pump, args=(client, remote), daemon=True).start()
            threading.Thread(target=_pump, args=(remote, client), daemon=True).start()


def http_get(kube: Kube, pod: str, namespace: str, port: int, path: str) -> bytes:
    """The body of ``GET path`` (HTTP/1.0) on ``port`` of ``pod``, through a port-forward
    stream: what the Spark UI's REST API answers without a local listener or a Service.
    Raises :class:`OSError` when no answer or a status other than 200 comes back."""
    sock = open_stream(kube, pod, namespace, port)
    try:
        sock.settimeout(30)
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    finally:
        sock.close()
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or status[1] != b"200":
        raise OSError(f"GET {path} on {namespace}/{pod}:{port}: {head[:80]!r}")
    return body
