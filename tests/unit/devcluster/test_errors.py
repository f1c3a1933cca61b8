"""The dev cluster's errors name the missing tool, the busy port, the dead component."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import DevCluster, DevClusterSettings, build, process


def test_missing_go_says_what_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(build.Path, "exists", lambda self: False)
    with pytest.raises(DevClusterError, match=r"Go is not installed.*Install Go 1\.26"):
        build.go_command()


def test_port_in_use_names_port_and_component(tmp_path: Path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        cluster = DevCluster(DevClusterSettings(state_dir=tmp_path, port_base=port))
        with pytest.raises(DevClusterError, match=rf"port {port} \(for kube-apiserver\)"):
            cluster._check_ports()


def test_dead_component_reports_name_and_last_log_lines(tmp_path: Path):
    log = tmp_path / "comp.log"
    pid = process.start("comp", ["/bin/sh", "-c", "echo 'fatal: bad flag --x'; exit 3"], log)
    with pytest.raises(DevClusterError) as err:
        process.wait_until(
            "kube-scheduler", lambda: False, timeout=10, pid=pid, binary="/bin/sh", log=log
        )
    assert "kube-scheduler exited" in str(err.value)
    assert "fatal: bad flag --x" in str(err.value)


def test_stop_only_signals_our_own_process(tmp_path: Path):
    sleep = os.path.realpath(shutil.which("sleep") or "/bin/sleep")
    proc = subprocess.Popen([sleep, "30"])
    try:
        process.stop(proc.pid, "/usr/bin/not-sleep", grace=0.1)  # not ours: left alone
        assert proc.poll() is None
        process.stop(proc.pid, sleep, grace=2)
        assert proc.wait(timeout=5) is not None
    finally:
        proc.kill()
