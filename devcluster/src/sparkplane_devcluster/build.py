"""Build the pinned control-plane binaries from Go modules and cache them by version.

Why a wrapper module per component: ``k8s.io/kubernetes`` requires its staging modules at the fake
version v0.0.0 and resolves them with local ``replace`` lines, which ``go install pkg@version``
refuses. A throw-away module that replaces every staging module with its published
``v0.<minor>.<patch>`` builds the real release. etcd's server module has sibling replaces too, but
its siblings are published with matching tags, so a plain requirement suffices. KWOK's module has
no replaces and installs directly.

Binaries land in ``<cache>/bin/<component>-v<version>/`` (written to a temp dir, then renamed, so a
half-finished build is never mistaken for a cached one). Only the first run pays; later runs return
at once. A file lock keeps concurrent runs from building twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import versions

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Binaries:
    """Paths of the five executables the dev cluster runs."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kwok: Path


def binary_dirs(cache_dir: Path) -> dict[str, Path]:
    """Where each component's binaries live for the pinned versions."""
    root = cache_dir / "bin"
    return {
        "kubernetes": root / f"kubernetes-v{versions.KUBERNETES}",
        "etcd": root / f"etcd-v{versions.ETCD}",
        "kwok": root / f"kwok-v{versions.KWOK}",
    }


def cached_binaries(cache_dir: Path) -> Binaries | None:
    """The cached binaries if every one is present, else None."""
    d = binary_dirs(cache_dir)
    bins = Binaries(
        etcd=d["etcd"] / "etcd",
        kube_apiserver=d["kubernetes"] / "kube-apiserver",
        kube_controller_manager=d["kubernetes"] / "kube-controller-manager",
        kube_scheduler=d["kubernetes"] / "kube-scheduler",
        kwok=d["kwok"] / "kwok",
    )
    paths = [bins.etcd, bins.kube_apiserver, bins.kube_controller_manager]
    paths += [bins.kube_scheduler, bins.kwok]
    return bins if all(os.access(p, os.X_OK) for p in paths) else None


def ensure_binaries(cache_dir: Path, progress: Progress = lambda _: None) -> Binaries:
    """Return the binaries, building whichever is missing (the first run takes many minutes)."""
    found = cached_binaries(cache_dir)
    if found:
        return found
    cache_dir.mkdir(parents=True, exist_ok=True)
    with lock(cache_dir / "bin.lock"):
        dirs = binary_dirs(cache_dir)
        go = go_command()
        logs = cache_dir / "logs"
        logs.mkdir(exist_ok=True)
        if not (dirs["etcd"] / "etcd").exists():
            progress(f"building etcd v{versions.ETCD} from Go modules (once)")
            _build_etcd(go, dirs["etcd"], logs / "build-etcd.log")
        if not (dirs["kwok"] / "kwok").exists():
            progress(f"building kwok v{versions.KWOK} from Go modules (once)")
            _build_kwok(go, dirs["kwok"], logs / "build-kwok.log")
        if not all((dirs["kubernetes"] / b).exists() for b in versions.KUBE_BINARIES):
            progress(
                f"building Kubernetes v{versions.KUBERNETES} control plane from Go modules "
                "(once; about 10 minutes on 2 cores)"
            )
            build_kubernetes(go, dirs["kubernetes"], logs / "build-kubernetes.log")
    found = cached_binaries(cache_dir)
    if not found:
        raise DevClusterError(f"build finished but binaries are missing under {cache_dir}/bin")
    return found


@contextmanager
def lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def go_command() -> str:
    go = shutil.which("go") or (
        "/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists() else None
    )
    if not go:
        raise DevClusterError(
            "Go is not installed (or not on PATH): the dev cluster builds etcd, Kubernetes and "
            f"KWOK from Go modules. Install Go {'.'.join(map(str, versions.GO_MINIMUM))} or newer "
            "and make sure `go` is on PATH; the Go module proxy must be reachable."
        )
    out = subprocess.run([go, "version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"go(\d+)\.(\d+)", out)
    if not match or (int(match[1]), int(match[2])) < versions.GO_MINIMUM:
        raise DevClusterError(
            f"{out.strip() or 'go'} is too old: Kubernetes v{versions.KUBERNETES} needs Go "
            f"{'.'.join(map(str, versions.GO_MINIMUM))} or newer"
        )
    return go


def _env(cgo: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="1" if cgo else "0", GOFLAGS="-mod=mod")
    return env


def run(cmd: list[str], cwd: Path, log: Path, cgo: bool = False) -> str:
    """Run a build command, appending its output to ``log``; DevClusterError with the tail."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(
            cmd, cwd=cwd, env=_env(cgo), stdout=subprocess.PIPE, stderr=out, text=True, check=False
        )
        out.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise DevClusterError(f"`{' '.join(cmd[:4])}...` failed (log: {log}):\n{tail}")
    return proc.stdout


def _wrapper(go: str, name: str, log: Path) -> Path:
    work = Path(tempfile.mkdtemp(prefix=f"sparkplane-{name}-"))
    run([go, "mod", "init", f"sparkplane.local/{name}"], work, log)
    return work


def _install(built: Path, final: Path) -> None:
    """Move a finished build into place atomically."""
    if final.exists():
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    built.rename(final)


def build_module(
    go: str,
    module: str,
    packages: list[str],
    dest: Path,
    log: Path,
    *,
    tags: tuple[str, ...] = (),
    cgo: bool = False,
    binary: str | None = None,
    replaces: tuple[str, ...] = (),
) -> None:
    """Build ``packages`` of a module into ``dest`` (one binary each, named as Go names it, or
    ``binary`` for a single package; etcd, KWOK, containerd, runc, CNI plugins, CoreDNS,
    SeaweedFS). ``replaces`` (``old=new@version``): the module's own replace lines, which a
    requiring module must repeat."""
    work = _wrapper(go, Path(packages[0]).name, log)
    try:
        for line in replaces:
            run([go, "mod", "edit", f"-replace={line}"], work, log)
        run([go, "get", module], work, log)
        out = dest.parent / f".{dest.name}.tmp"
        out.mkdir(parents=True, exist_ok=True)
        target = str(out / binary) if binary else f"{out}/"
        cmd = [go, "build", "-trimpath", "-ldflags", "-s -w", "-o", target]
        if tags:
            cmd += ["-tags", ",".join(tags)]
        run([*cmd, *packages], work, log, cgo=cgo)
        _install(out, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_etcd(go: str, dest: Path, log: Path) -> None:
    module = f"go.etcd.io/etcd/server/v3@v{versions.ETCD}"
    build_module(go, module, ["go.etcd.io/etcd/server/v3"], dest, log, binary="etcd")


def _build_kwok(go: str, dest: Path, log: Path) -> None:
    module = f"sigs.k8s.io/kwok@v{versions.KWOK}"
    build_module(go, module, ["sigs.k8s.io/kwok/cmd/kwok"], dest, log)


def build_kubernetes(
    go: str, dest: Path, log: Path, binaries: tuple[str, ...] = versions.KUBE_BINARIES
) -> None:
    """Build ``binaries`` (``cmd/<name>``) of the pinned Kubernetes release into ``dest``."""
    version = versions.KUBERNETES
    minor = version.split(".")[1]
    staging = "0." + version.split(".", 1)[1]
    work = _wrapper(go, "kubernetes", log)
    try:
        info = json.loads(
            run([go, "mod", "download", "-json", f"k8s.io/kubernetes@v{version}"], work, log)
        )
        gomod = Path(info["GoMod"]).read_text()
        go_line = re.search(r"^go (\S+)", gomod, re.M)
        if go_line:
            run([go, "mod", "edit", f"-go={go_line[1]}"], work, log)
        godebug = re.search(r"^godebug (\S+)", gomod, re.M)
        if godebug:
            run([go, "mod", "edit", f"-godebug={godebug[1]}"], work, log)
        # every staging module that k8s.io/kubernetes requires at the fake version v0.0.0
        for module in sorted(set(re.findall(r"^\s+(k8s\.io/[\w.-]+) v0\.0\.0$", gomod, re.M))):
            run([go, "mod", "edit", f"-replace={module}={module}@v{staging}"], work, log)
        packages = [f"k8s.io/kubernetes/cmd/{b}" for b in binaries]
        run([go, "get", *(f"{p}@v{version}" for p in packages)], work, log)
        stamp = ["-s", "-w"]
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            stamp += [f"-X {pkg}.gitVersion=v{version}", f"-X {pkg}.gitMajor=1"]
            stamp += [f"-X {pkg}.gitMinor={minor}", f"-X {pkg}.gitTreeState=clean"]
        out = dest.parent / f".{dest.name}.tmp"
        out.mkdir(parents=True, exist_ok=True)
        cmd = [go, "build", "-trimpath", "-ldflags", " ".join(stamp), "-o", f"{out}/"]
        run([*cmd, *packages], work, log)
        _install(out, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
