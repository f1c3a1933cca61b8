"""``sparkplane dev-cluster``: the embedded local control plane (etcd, apiserver, KWOK...)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sparkplane.cli.console import err, out, progress
from sparkplane.devcluster import DevCluster, DevClusterSettings

app = typer.Typer(
    help="A real local Kubernetes control plane built from Go modules; KWOK plays the kubelets "
    "of simulated nodes, and with --real-node a real kubelet + containerd + runc runs pods.",
    no_args_is_help=True,
)

StateDir = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="Where the cluster keeps PKI, logs and state.",
        envvar="SPARKPLANE_STATE_DIR",
    ),
]
PortBase = Annotated[
    int,
    typer.Option(
        "--port-base",
        help="First of six loopback ports (apiserver = base).",
        envvar="SPARKPLANE_DEV_PORT_BASE",
    ),
]


def _cluster(state_dir: Path | None, port_base: int = 16443, **kw: object) -> DevCluster:
    settings = DevClusterSettings(port_base=port_base, **kw)  # type: ignore[arg-type]
    if state_dir is not None:
        settings = DevClusterSettings(state_dir=state_dir, port_base=port_base, **kw)  # type: ignore[arg-type]
    return DevCluster(settings)


@app.command()
def up(
    state_dir: StateDir = None,
    port_base: PortBase = 16443,
    nodes: Annotated[int, typer.Option(help="Number of simulated nodes.")] = 3,
    node_cpu: Annotated[str, typer.Option(help="CPU capacity of each node.")] = "32",
    node_memory: Annotated[str, typer.Option(help="Memory capacity of each node.")] = "128Gi",
    node_pods: Annotated[int, typer.Option(help="Pod capacity of each node.")] = 250,
    real_node: Annotated[
        bool,
        typer.Option(
            "--real-node",
            help="Also run a real node (kubelet, containerd, runc; needs root on Linux) where "
            "Spark really runs; the simulated nodes are then tainted sparkplane.io/simulated.",
        ),
    ] = False,
) -> None:
    """Build (first run only) and start the cluster; idempotent; a cluster whose component died
    is restarted with its data. Last line: the kubeconfig."""
    cluster = _cluster(
        state_dir,
        port_base,
        nodes=nodes,
        node_cpu=node_cpu,
        node_memory=node_memory,
        node_pods=node_pods,
        real_node=real_node,
    )
    path = cluster.up(progress)
    out.print(str(path), markup=False)


@app.command()
def build(
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Binary cache (default ~/.cache/sparkplane).", envvar="SPARKPLANE_CACHE_DIR"
        ),
    ] = None,
    real_node: Annotated[
        bool, typer.Option("--real-node", help="Also the real node's binaries and images.")
    ] = False,
) -> None:
    """Build the pinned binaries from Go modules unless cached; print where they are."""
    from sparkplane.devcluster.build import ensure_binaries
    from sparkplane.devcluster.cluster import default_cache_dir

    cache = cache_dir or default_cache_dir()
    bins = ensure_binaries(cache, progress)
    if real_node:
        from sparkplane.devcluster.images import ensure_images
        from sparkplane.devcluster.nodebuild import ensure_node_binaries

        ensure_node_binaries(cache, progress)
        ensure_images(cache, progress)
    out.print(str(bins.kube_apiserver.parent.parent), markup=False)


@app.command()
def images(
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Binary cache (default ~/.cache/sparkplane).", envvar="SPARKPLANE_CACHE_DIR"
        ),
    ] = None,
) -> None:
    """List the images built for the real node (reference, size, content key, archive)."""
    from sparkplane.devcluster.cluster import default_cache_dir
    from sparkplane.devcluster.images import cached_images

    table = Table("IMAGE", "SIZE", "KEY", "ARCHIVE", box=None, pad_edge=False)
    for image in cached_images(cache_dir or default_cache_dir()):
        size = f"{image.size / (1 << 20):.0f}MiB"
        table.add_row(image.ref, size, image.key[:12], str(image.archive))
    out.print(table, markup=False, overflow="ignore", crop=False)


@app.command()
def down(
    state_dir: StateDir = None,
    purge: Annotated[
        bool, typer.Option("--purge", help="Also delete the cluster's data (etcd, the node).")
    ] = False,
) -> None:
    """Stop every component (a real node leaves nothing on the host); the data is kept for the
    next `up` unless --purge."""
    stopped = _cluster(state_dir).down(purge=purge)
    err.print("dev cluster stopped" if stopped else "dev cluster was not running", markup=False)
    if purge:
        err.print("its data was deleted", markup=False)


@app.command()
def status(state_dir: StateDir = None) -> None:
    """Show components (pid, memory) and nodes; exit code 1 if the cluster is not running."""
    st = _cluster(state_dir).status()
    table = Table("component", "pid", "alive", "RSS MiB", title=f"dev cluster {st.server}")
    for name, info in st.components.items():
        table.add_row(
            name, str(info["pid"]), "yes" if info["alive"] else "NO", str(info["rss_mib"])
        )
    out.print(table)
    if st.nodes:
        nodes = Table("node", "ready", "cpu", "memory", "pods")
        for n in st.nodes:
            nodes.add_row(n["name"], n["ready"], n["cpu"], n["memory"], n["pods"])
        out.print(nodes)
    if st.node_images:
        imgs = Table("node image", "size")
        for image in st.node_images:
            imgs.add_row(image["name"], image["size"])
        out.print(imgs)
    if st.pods_memory_mib is not None:
        out.print(f"real node: pods use {st.pods_memory_mib} MiB", markup=False)
    total = sum(int(i["rss_mib"]) for i in st.components.values())
    out.print(
        f"running: {'yes' if st.running else 'no'}; control plane RSS {total} MiB; "
        f"versions: " + ", ".join(f"{k} {v}" for k, v in st.versions.items())
    )
    if not st.running:
        raise typer.Exit(1)


@app.command()
def kubeconfig(state_dir: StateDir = None) -> None:
    """Print the path of the admin kubeconfig."""
    out.print(str(_cluster(state_dir).kubeconfig), markup=False)


@app.command()
def env(state_dir: StateDir = None) -> None:
    """Print `export KUBECONFIG=...` (use: eval "$(sparkplane dev-cluster env)")."""
    path = _cluster(state_dir).kubeconfig
    out.print(f"export KUBECONFIG={os.fspath(path)}", markup=False)
