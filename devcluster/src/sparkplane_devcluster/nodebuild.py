"""Build the real node's components from Go modules and cache them by version.

A real node is the kubelet and kube-proxy of the pinned Kubernetes release, containerd 2.x with
its runc shim and ``ctr``, runc (with cgo and the ``seccomp`` tag: without seccomp support every
pod sandbox fails), the CNI plugins the node's bridge network needs, and CoreDNS. Each lands in
``<cache>/bin/<component>-v<version>/`` through :mod:`sparkplane_devcluster.build`'s builders (a
temp directory renamed into place; a file lock against a concurrent build). The only host inputs
are Debian build packages (``libseccomp-dev``, ``pkg-config``), installed by
:mod:`sparkplane_devcluster.hostdeps`. Called by the real node's ``up`` and ``dev-cluster build
--real-node``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import versions
from sparkplane_devcluster.build import build_kubernetes, build_module, go_command, lock
from sparkplane_devcluster.hostdeps import ensure_debian_packages

Progress = Callable[[str], None]
RUNC_BUILD_PACKAGES = {
    "libseccomp-dev": "/usr/include/seccomp.h",
    "pkg-config": "pkg-config",
    "gcc": "gcc",
}


@dataclass(frozen=True)
class NodeBinaries:
    """Paths of the real node's executables."""

    kubelet: Path
    kube_proxy: Path
    containerd: Path
    shim: Path
    ctr: Path
    runc: Path
    cni_dir: Path
    coredns: Path

    def all(self) -> list[Path]:
        cni = [self.cni_dir / name for name in versions.CNI_PLUGIN_NAMES]
        rest = [self.kubelet, self.kube_proxy, self.containerd, self.shim, self.ctr, self.runc]
        return [*rest, *cni, self.coredns]


def node_dirs(cache_dir: Path) -> dict[str, Path]:
    """Where each component's binaries live for the pinned versions."""
    root = cache_dir / "bin"
    return {
        "node": root / f"kubernetes-node-v{versions.KUBERNETES}",
        "containerd": root / f"containerd-v{versions.CONTAINERD}",
        "runc": root / f"runc-v{versions.RUNC}",
        "cni": root / f"cni-plugins-v{versions.CNI_PLUGINS}",
        "coredns": root / f"coredns-v{versions.COREDNS}",
    }


def _binaries(cache_dir: Path) -> NodeBinaries:
    d = node_dirs(cache_dir)
    return NodeBinaries(
        kubelet=d["node"] / "kubelet",
        kube_proxy=d["node"] / "kube-proxy",
        containerd=d["containerd"] / "containerd",
        shim=d["containerd"] / "containerd-shim-runc-v2",
        ctr=d["containerd"] / "ctr",
        runc=d["runc"] / "runc",
        cni_dir=d["cni"],
        coredns=d["coredns"] / "coredns",
    )


def cached_node_binaries(cache_dir: Path) -> NodeBinaries | None:
    """The cached binaries if every one is present, else None."""
    bins = _binaries(cache_dir)
    return bins if all(os.access(p, os.X_OK) for p in bins.all()) else None


def ensure_node_binaries(cache_dir: Path, progress: Progress = lambda _: None) -> NodeBinaries:
    """Return the node's binaries, building whichever is missing (the first run takes minutes)."""
    found = cached_node_binaries(cache_dir)
    if found:
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    bins = _binaries(cache_dir)
    with lock(cache_dir / "node-bin.lock"):  # apart from the control plane's lock
        go = go_command()
        logs = cache_dir / "logs"
        logs.mkdir(exist_ok=True)
        d = node_dirs(cache_dir)
        if not (os.access(bins.kubelet, os.X_OK) and os.access(bins.kube_proxy, os.X_OK)):
            progress(f"building kubelet and kube-proxy v{versions.KUBERNETES} (once)")
            build_kubernetes(go, d["node"], logs / "build-node.log", versions.NODE_BINARIES)
        if not all(os.access(p, os.X_OK) for p in (bins.containerd, bins.shim, bins.ctr)):
            progress(f"building containerd v{versions.CONTAINERD} (once; about 4 minutes)")
            base = "github.com/containerd/containerd/v2"
            build_module(
                go,
                f"{base}@v{versions.CONTAINERD}",
                [f"{base}/cmd/{b}" for b in ("containerd", "containerd-shim-runc-v2", "ctr")],
                d["containerd"],
                logs / "build-containerd.log",
                tags=("no_btrfs", "no_devmapper", "no_zfs"),
            )
        if not os.access(bins.runc, os.X_OK):
            ensure_debian_packages(RUNC_BUILD_PACKAGES, "building runc with seccomp", progress)
            progress(f"building runc v{versions.RUNC} with seccomp (once)")
            build_module(
                go,
                f"github.com/opencontainers/runc@v{versions.RUNC}",
                ["github.com/opencontainers/runc"],
                d["runc"],
                logs / "build-runc.log",
                tags=("seccomp",),
                cgo=True,
                binary="runc",
            )
        if not all(os.access(bins.cni_dir / n, os.X_OK) for n in versions.CNI_PLUGIN_NAMES):
            progress(f"building CNI plugins v{versions.CNI_PLUGINS} (once)")
            base = "github.com/containernetworking/plugins"
            where = {"bridge": "main", "loopback": "main", "host-local": "ipam", "portmap": "meta"}
            build_module(
                go,
                f"{base}@v{versions.CNI_PLUGINS}",
                [f"{base}/plugins/{where[n]}/{n}" for n in versions.CNI_PLUGIN_NAMES],
                d["cni"],
                logs / "build-cni.log",
            )
        if not os.access(bins.coredns, os.X_OK):
            progress(f"building CoreDNS v{versions.COREDNS} (once; about 3 minutes)")
            build_module(
                go,
                f"github.com/coredns/coredns@v{versions.COREDNS}",
                ["github.com/coredns/coredns"],
                d["coredns"],
                logs / "build-coredns.log",
                binary="coredns",
            )
    found = cached_node_binaries(cache_dir)
    if not found:
        missing = [str(p) for p in bins.all() if not os.access(p, os.X_OK)]
        raise DevClusterError(f"node build finished but these are missing: {', '.join(missing)}")
    return found
