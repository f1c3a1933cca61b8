"""Start, probe and stop the dev cluster's processes.

Components run detached (their own session) so they outlive the ``sparkplane dev-cluster up``
command; their pids are kept in the state file and checked against ``/proc/<pid>/cmdline`` before
any signal is sent, so a recycled pid is never killed by mistake.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from sparkplane.errors import DevClusterError


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def start(name: str, argv: Sequence[str], log: Path, env: dict[str, str] | None = None) -> int:
    """Start ``argv`` detached, appending its output to ``log``; return its pid."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(env if env is not None else os.environ)
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    with log.open("ab") as out:
        out.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {name}\n".encode())
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    return proc.pid


def alive(pid: int, binary: str) -> bool:
    """True if ``pid`` runs and is ours (its executable or command line is ``binary``)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    if state in ("Z", "X"):
        return False
    try:
        if os.readlink(f"/proc/{pid}/exe") == binary:
            return True
    except OSError:
        pass
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return False
    return argv0 == binary.encode() or argv0.endswith(b"/" + Path(binary).name.encode())


def stop(pid: int, binary: str, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; no-op if it is gone or not ours."""
    if not alive(pid, binary):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not alive(pid, binary):
            _reap(pid)
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` in KiB (0 if unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def http_ok(url: str, ca_file: Path | None = None, timeout: float = 2.0) -> bool:
    """True if GET ``url`` answers 2xx (TLS verified with ``ca_file``, or unverified if None)."""
    if url.startswith("https"):
        ctx = ssl.create_default_context(cafile=str(ca_file)) if ca_file else _insecure()
    else:
        ctx = None
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=ctx) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _alive_after(pid: int, binary: str, delay: float = 0.3) -> bool:
    """A second look before declaring a process dead (a /proc read can race an exec)."""
    time.sleep(delay)
    return alive(pid, binary)


def tail(log: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file (for error messages)."""
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_until(
    what: str,
    check: Callable[[], bool],
    *,
    timeout: float,
    pid: int | None = None,
    binary: str = "",
    log: Path | None = None,
    interval: float = 0.2,
) -> None:
    """Poll ``check`` until true; fail fast (with the log tail) if the process dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if pid is not None and not alive(pid, binary) and not _alive_after(pid, binary):
            raise DevClusterError(
                f"{what} exited during start-up; last lines of {log}:\n{tail(log) if log else ''}"
            )
        time.sleep(interval)
    hint = f"; last lines of {log}:\n{tail(log)}" if log else ""
    raise DevClusterError(f"{what} was not ready after {timeout:.0f}s{hint}")
