"""The shared base layer: a Debian bookworm root filesystem made by ``mmdebstrap``, built once.

``mmdebstrap --variant=apt`` installs :data:`PACKAGES` (a JRE, tini, python3, procps,
ca-certificates, nss_wrapper for arbitrary uids) on a merged /usr without recommends, documentation
(copyright files kept), man pages, info pages or translations. Excluding man pages breaks the JRE's
``postinst`` (``update-alternatives`` wants ``/usr/share/man/man1``), so an essential hook creates
that directory. mmdebstrap's tar is rewritten as a deterministic layer (device nodes dropped; the
runtime supplies ``/dev``); ``/etc/passwd`` and ``/etc/group`` are kept beside it so upper layers
can add their users. The layer's key is its recipe: the package list, options and mirrors, not the
day it was built. Called by the builder; it needs root (or mmdebstrap's unshare mode) and the
Debian mirror.
"""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sparkplane.errors import DevClusterError
from sparkplane_devcluster.hostdeps import ensure_debian_packages
from sparkplane_devcluster.images import cache
from sparkplane_devcluster.images.layers import (
    Entry,
    LayerBlob,
    Opener,
    data_file,
    write_layer,
)

Progress = Callable[[str], None]

SUITE = "bookworm"
PACKAGES = (
    "openjdk-17-jre-headless",
    "tini",
    "python3",
    "procps",
    "ca-certificates",
    "libnss-wrapper",
)
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
DPKG_OPTIONS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
ESSENTIAL_HOOK = 'mkdir -p "$1/usr/share/man/man1"'
MERGED_USR_HOOKS = "/usr/share/mmdebstrap/hooks/merged-usr"
"""mmdebstrap's own hooks: /usr merged up front and ``usr-is-merged`` installed, so apt does not
pull ``usrmerge`` (and with it a full perl, ~50 MB) into the image."""
HOST_FILES = {
    "etc/hostname": b"localhost\n",
    "etc/hosts": b"127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "etc/resolv.conf": b"",
}
"""Files mmdebstrap copies from the build host, replaced by neutral ones (the runtime mounts its
own in a pod): the layer must not carry the host's name or DNS settings."""


@dataclass(frozen=True)
class BaseLayer:
    """The base layer and the account files upper layers extend."""

    blob: LayerBlob
    passwd: str
    group: str
    key: str


def recipe() -> dict[str, object]:
    return {
        "suite": SUITE,
        "variant": "apt",
        "packages": PACKAGES,
        "mirrors": MIRRORS,
        "dpkg": DPKG_OPTIONS,
        "hook": ESSENTIAL_HOOK,
        "hook_dir": MERGED_USR_HOOKS,
        "host_files": {name: cache.hash_bytes(data) for name, data in HOST_FILES.items()},
    }


def base_dir(cache_dir: Path) -> Path:
    return cache.entry_dir(cache_dir, "layers/debian", cache.content_key(recipe()))


def cached_base(cache_dir: Path) -> BaseLayer | None:
    directory = base_dir(cache_dir)
    blob = cache.load_layer(directory)
    if blob is None:
        return None
    passwd = (directory / "etc-passwd").read_text()
    group = (directory / "etc-group").read_text()
    return BaseLayer(blob, passwd, group, cache.content_key(recipe()))


def ensure_base(cache_dir: Path, progress: Progress) -> BaseLayer:
    """The base layer, running mmdebstrap the first time (about two minutes with downloads)."""
    found = cached_base(cache_dir)
    if found:
        return found
    ensure_debian_packages({"mmdebstrap": "mmdebstrap"}, "the image builder", progress)
    log = cache_dir / "logs" / "image-debian.log"
    log.parent.mkdir(parents=True, exist_ok=True)

    def build(temp: Path) -> None:
        progress(f"building the Debian {SUITE} base layer with mmdebstrap (once, ~2 minutes)")
        rootfs = temp / "rootfs.tar"
        _mmdebstrap(rootfs, log)
        progress("writing the base layer")
        with tarfile.open(rootfs) as tar:
            blob = write_layer(_entries(tar), temp / "layer.tar.gz", gzip_level=6)
            for name in ("passwd", "group"):
                member = tar.extractfile(f"./etc/{name}")
                assert member is not None
                (temp / f"etc-{name}").write_bytes(member.read())
        rootfs.unlink()
        cache.save_layer(temp, blob)

    cache.ensure_dir(base_dir(cache_dir), build)
    found = cached_base(cache_dir)
    if found is None:
        raise DevClusterError(f"the base layer is missing after its build (log: {log})")
    return found


def mmdebstrap_argv(out: Path) -> list[str]:
    argv = ["mmdebstrap", "--variant=apt", "--include=" + ",".join(PACKAGES)]
    argv += ["--aptopt=APT::Install-Recommends false", *(f"--dpkgopt={o}" for o in DPKG_OPTIONS)]
    argv += [f"--hook-dir={MERGED_USR_HOOKS}", f"--essential-hook={ESSENTIAL_HOOK}"]
    argv += [SUITE, str(out), *MIRRORS]
    return argv


def _mmdebstrap(out: Path, log: Path) -> None:
    argv = mmdebstrap_argv(out)
    with log.open("w") as handle:
        handle.write(f"$ {' '.join(argv)}\n")
        handle.flush()
        proc = subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-12:])
        raise DevClusterError(
            f"mmdebstrap failed to build the {SUITE} base layer (log: {log}); it needs root and "
            f"the Debian mirror:\n{tail}"
        )


def _entries(tar: tarfile.TarFile) -> list[Entry]:
    """mmdebstrap's members as layer entries: names without ``./``, no device nodes."""
    members = {_name(m.name): m for m in tar.getmembers() if _name(m.name) not in ("", *HOST_FILES)}
    linked = {_name(m.linkname) for m in members.values() if m.islnk()}
    out: list[Entry] = []
    for name, member in members.items():
        mode, uid, gid = member.mode, member.uid, member.gid
        if member.isdir():
            out.append(Entry(name, "dir", mode, uid, gid))
        elif member.issym():
            out.append(Entry(name, "symlink", 0o777, uid, gid, target=member.linkname))
        elif member.isreg() or member.islnk():
            data = members[_name(member.linkname)] if member.islnk() else member
            key = _name(data.name) if (member.islnk() or name in linked) else None
            out.append(
                Entry(name, "file", mode, uid, gid, data.size, _opener(tar, data), inode=key)
            )
    return out + [data_file(name, data) for name, data in HOST_FILES.items()]


def _name(raw: str) -> str:
    """``./usr/bin`` -> ``usr/bin``; the root itself (``.``, ``./``) -> ``""``."""
    name = raw.removeprefix("./").strip("/")
    return "" if name == "." else name


def _opener(tar: tarfile.TarFile, member: tarfile.TarInfo) -> Opener:
    def open_member() -> IO[bytes]:
        handle = tar.extractfile(member)
        assert handle is not None
        return handle

    return open_member
