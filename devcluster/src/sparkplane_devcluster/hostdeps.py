"""Debian packages the dev cluster's builds need on the host (build inputs only, never services).

The real node's builds need a few things a fresh machine of this kind lacks: ``libseccomp-dev``
and ``pkg-config`` (runc with seccomp), ``mmdebstrap`` (the images' root filesystem), ``nftables``
(kube-proxy's nftables mode). :func:`ensure_debian_packages` installs the missing ones with
apt-get when running as root on Debian, and otherwise fails at once naming each package and why.
Called by the real-node build and the image builder; it does nothing when all are present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from sparkplane.errors import DevClusterError

Progress = Callable[[str], None]


def _present(probe: str) -> bool:
    """``probe`` is a command name or an absolute path (a header or library file)."""
    return Path(probe).exists() if probe.startswith("/") else shutil.which(probe) is not None


def missing_packages(packages: Mapping[str, str]) -> list[str]:
    """The Debian packages whose probe (command name or absolute path) is absent."""
    return [pkg for pkg, probe in packages.items() if not _present(probe)]


def ensure_debian_packages(
    packages: Mapping[str, str], why: str, progress: Progress = lambda _: None
) -> None:
    """Install the packages of ``{package: probe}`` whose probe is absent (apt-get, as root).

    ``why`` says what needs them, for the message when they cannot be installed.
    """
    missing = missing_packages(packages)
    if not missing:
        return
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or apt is None:
        raise DevClusterError(
            f"{why} needs the Debian packages {', '.join(missing)}: install them "
            f"(`sudo apt-get install -y {' '.join(missing)}`) and run the command again"
        )
    progress(f"installing Debian packages {', '.join(missing)} (build inputs for {why})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    wait = "DPkg::Lock::Timeout=600"  # another build (a second cluster) may hold dpkg's lock
    for cmd in (
        [apt, "-o", wait, "update", "-qq"],
        [apt, "-o", wait, "install", "-y", "-qq", *missing],
    ):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0 and "install" in cmd:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-10:])
            raise DevClusterError(f"`apt-get install {' '.join(missing)}` failed:\n{tail}")
    still = missing_packages(packages)
    if still:
        raise DevClusterError(
            f"installed {', '.join(missing)} but {', '.join(still)} still missing"
        )
