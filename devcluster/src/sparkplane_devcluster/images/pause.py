"""The sandbox (pause) image: one static binary compiled from the Kubernetes module's source.

containerd pins ``registry.k8s.io/pause:<PAUSE>`` as its sandbox image and no registry is
reachable, so the image is made here: ``build/pause/linux/pause.c`` from the pinned
``k8s.io/kubernetes`` module (already in the Go module cache after the control-plane build;
``go mod download`` fetches it otherwise) compiled with ``gcc -static``, as ``/pause`` in a single
layer, run as 65535 like the upstream image. Called by the builder; the key is the Kubernetes and
pause versions and the compiler flags, so it never needs Go just to find a cached image.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import versions
from sparkplane_devcluster.images.layers import Entry, data_file

CFLAGS = ("-Os", "-Wall", "-Werror", "-static", f'-DVERSION="{versions.PAUSE}-sparkplane"')
USER = "65535:65535"


def recipe() -> dict[str, object]:
    return {"kubernetes": versions.KUBERNETES, "pause": versions.PAUSE, "cflags": CFLAGS}


def layer(log: Path) -> list[Entry]:
    """``/pause``, compiled now."""
    return [data_file("pause", compile_pause(pause_source(log), log), 0o755)]


def pause_source(log: Path) -> Path:
    """``pause.c`` of the pinned Kubernetes module (``go mod download`` in a scratch module)."""
    go = shutil.which("go") or "/usr/local/go/bin/go"
    module = f"k8s.io/kubernetes@v{versions.KUBERNETES}"
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=mod")
    with tempfile.TemporaryDirectory(prefix="sparkplane-pause-") as work:
        try:
            subprocess.run(
                [go, "mod", "init", "sparkplane.local/pause"],
                cwd=work, env=env, capture_output=True, check=True,
            )  # fmt: skip
            proc = subprocess.run(
                [go, "mod", "download", "-json", module],
                cwd=work, env=env, capture_output=True, text=True, check=False, timeout=900,
            )  # fmt: skip
        except (OSError, subprocess.CalledProcessError) as exc:
            raise DevClusterError(
                f"the pause image needs Go to find {module} in the module cache: {exc}"
            ) from exc
    with log.open("a") as out:
        out.write(f"$ go mod download -json {module}\n{proc.stdout}{proc.stderr}")
    try:
        source = Path(json.loads(proc.stdout)["Dir"]) / "build" / "pause" / "linux" / "pause.c"
    except (ValueError, KeyError) as exc:
        raise DevClusterError(f"`go mod download {module}` failed (log: {log})") from exc
    if not source.is_file():
        raise DevClusterError(f"{source} is missing from the {module} module (log: {log})")
    return source


def compile_pause(source: Path, log: Path) -> bytes:
    """A static, stripped pause binary (glibc's static libc is part of libc6-dev)."""
    with tempfile.TemporaryDirectory(prefix="sparkplane-pause-") as work:
        out = Path(work, "pause")
        argv = ["gcc", *CFLAGS, "-o", str(out), str(source)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        except FileNotFoundError as exc:
            raise DevClusterError(
                "gcc is not installed: the pause image is compiled from C "
                "(`apt-get install gcc libc6-dev`)"
            ) from exc
        with log.open("a") as handle:
            handle.write(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            raise DevClusterError(f"compiling pause.c failed (log: {log}):\n{proc.stderr[-1500:]}")
        subprocess.run(["strip", str(out)], capture_output=True, check=False)
        return out.read_bytes()
