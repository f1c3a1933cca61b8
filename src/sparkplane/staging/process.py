"""Run the staging server as its own process, for a script, a notebook, a demo.

``sparkplane staging serve`` is the server, an asyncio program in its own process.
:func:`staging_server` starts that command as a child process with the flags a user would type,
waits until the server says where it listens (its log line ``staging server on URL``), yields
the base URL and stops the server when the block ends. The caller stays synchronous: none of
the server's event loop runs in it. The server's log goes to a file (``log``; by default a
temporary one, whose end is quoted if the server stops early).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from sparkplane.staging.errors import StagingError

LISTENING = re.compile(r"staging server on (https?)://(.*):(\d+) \(")
STOP_TIMEOUT = 30.0
_WILDCARD = ("", "0.0.0.0", "::")


@contextlib.contextmanager
def staging_server(
    *args: str,
    log: Path | None = None,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """``sparkplane staging serve ARGS`` as a child process until the block ends; yields its
    base URL (``--port 0``: a free port; a wildcard ``--host`` is reached on 127.0.0.1).

    Raises :class:`StagingError`, quoting the end of the log, if the server exits or does not
    listen within ``timeout`` seconds."""
    with contextlib.ExitStack() as stack:
        if log is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sparkplane-staging-"))
            log = Path(tmp) / "server.log"
        sink = stack.enter_context(open(log, "wb"))
        command = [sys.executable, "-m", "sparkplane.cli", "staging", "serve", *args]
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=env
        )
        stack.callback(_stop, proc)
        yield _wait_listening(proc, log, timeout)


def _wait_listening(proc: subprocess.Popen[bytes], log: Path, timeout: float) -> str:
    """The base URL the server's log announces, once it does."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace")
        if found := LISTENING.search(text):
            scheme, host, port = found.groups()
            host = "127.0.0.1" if host in _WILDCARD else host
            return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"
        if (code := proc.poll()) is not None:
            raise StagingError(f"the staging server exited with {code}:\n{_tail(text)}")
        if time.monotonic() > deadline:
            raise StagingError(f"the staging server did not listen in {timeout:g}s:\n{_tail(text)}")
        time.sleep(0.05)


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:]) or "(no output)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the server cleans up and exits), then SIGKILL if it does not."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
