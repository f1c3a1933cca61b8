"""Build a pinned ``helm`` from Go modules, on demand, and cache it by version.

Owns :func:`ensure_helm`: the Helm chart's tests (install, upgrade, uninstall of
``deploy/helm/sparkplane``) need a real ``helm``, built like the control plane
(:mod:`sparkplane_devcluster.build`): ``helm.sh/helm/v4`` has no ``replace`` lines, so a
throw-away module requiring it builds ``cmd/helm`` as released. Helm 4, because it applies
manifests server-side, so an upgrade applies changed CRDs the way ``sparkplane operator
install`` does. The binary lands in
``<cache>/bin/helm-v<version>/helm``; only the first call pays (a few minutes on 2 cores).
Called by the Helm integration tests and ``make helm``. Must not touch the control-plane
binaries, which :mod:`build` owns.
"""

from __future__ import annotations

import os
from pathlib import Path

from sparkplane_devcluster import build

HELM = "4.3.1"
MAJOR = HELM.split(".", 1)[0]


def helm_path(cache_dir: Path) -> Path:
    """Where the pinned helm lives (whether or not it is built yet)."""
    return cache_dir / "bin" / f"helm-v{HELM}" / "helm"


def ensure_helm(cache_dir: Path, progress: build.Progress = lambda _: None) -> Path:
    """The cached helm binary, building it first if missing."""
    path = helm_path(cache_dir)
    if os.access(path, os.X_OK):
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    with build.lock(cache_dir / "helm.lock"):
        if not os.access(path, os.X_OK):
            progress(f"building helm v{HELM} from Go modules (once)")
            logs = cache_dir / "logs"
            logs.mkdir(exist_ok=True)
            build.build_module(
                build.go_command(),
                f"helm.sh/helm/v{MAJOR}@v{HELM}",
                [f"helm.sh/helm/v{MAJOR}/cmd/helm"],
                path.parent,
                logs / "build-helm.log",
                binary="helm",
            )
    return path


def main() -> int:
    """``python -m sparkplane_devcluster.helmbin``: build (if needed) and print the path."""
    from sparkplane_devcluster.cluster import default_cache_dir

    cache = default_cache_dir()
    print(ensure_helm(cache, progress=print))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
