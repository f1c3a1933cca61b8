"""``sparkplane dev-cluster``: the embedded local control plane (etcd, apiserver, KWOK...).

A plugin of the ``sparkplane`` command: this distribution's entry point in the ``sparkplane.cli``
group names :data:`app`, which ``sparkplane.cli.main`` mounts as ``dev-cluster`` when it is
installed. ``simulate`` is the driver simulator (:mod:`sparkplane_devcluster.simulator`).
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from pathlib import Path
from typing import Annotated

import typer

from sparkplane.cli.console import note, progress, table, write
from sparkplane.cli.options import Context, Kubeconfig, make_kube
from sparkplane.errors import DevClusterError
from sparkplane_devcluster import DevCluster, DevClusterSettings

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
    int | None,
    typer.Option(
        "--port-base",
        help="First of seventeen loopback ports (apiserver = base); default "
        "$SPARKPLANE_DEV_PORT_BASE or 16443. Refused if another dev cluster's ports overlap.",
        show_default=False,
    ),
]


def _cluster(state_dir: Path | None, port_base: int | None = None, **kw: object) -> DevCluster:
    """The cluster of ``state_dir``; the port base, when not given, comes from the settings
    (the one reader of SPARKPLANE_DEV_PORT_BASE)."""
    if state_dir is not None:
        kw["state_dir"] = state_dir
    if port_base is not None:
        kw["port_base"] = port_base
    return DevCluster(DevClusterSettings(**kw))  # type: ignore[arg-type]


@app.command()
def up(
    state_dir: StateDir = None,
    port_base: PortBase = None,
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
    kueue: Annotated[
        bool,
        typer.Option(
            "--kueue",
            help="Also start Kueue (its CRDs, webhooks and manager; `dev-cluster kueue up`).",
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
    if kueue:
        cluster.kueue_up(progress)
    write(str(path))


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
    kueue: Annotated[
        bool, typer.Option("--kueue", help="Also Kueue's manager (`up --kueue`, `kueue up`).")
    ] = False,
    traefik: Annotated[
        bool, typer.Option("--traefik", help="Also Traefik, the ingress controller (`traefik up`).")
    ] = False,
) -> None:
    """Build the pinned binaries from Go modules unless cached (the control plane, KWOK and
    SeaweedFS; more with the options, as `up` needs them); print where they are."""
    from sparkplane_devcluster.build import ensure_binaries
    from sparkplane_devcluster.cluster import default_cache_dir
    from sparkplane_devcluster.kueue import ensure_kueue
    from sparkplane_devcluster.seaweed import ensure_weed

    cache = cache_dir or default_cache_dir()
    bins = ensure_binaries(cache, progress)
    ensure_weed(cache, progress)
    if kueue:
        ensure_kueue(cache, progress)
    if real_node:
        from sparkplane_devcluster.images import ensure_images
        from sparkplane_devcluster.nodebuild import ensure_node_binaries

        ensure_node_binaries(cache, progress)
        ensure_images(cache, progress)
    if traefik:
        from sparkplane_devcluster.traefik import ensure_traefik

        ensure_traefik(cache, progress)
    write(str(bins.kube_apiserver.parent.parent))


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
    from sparkplane_devcluster.cluster import default_cache_dir
    from sparkplane_devcluster.images import cached_images

    rows = [
        [i.ref, f"{i.size / (1 << 20):.0f}MiB", i.key[:12], str(i.archive)]
        for i in cached_images(cache_dir or default_cache_dir())
    ]
    write(table(["IMAGE", "SIZE", "KEY", "ARCHIVE"], rows))


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
    note("dev cluster stopped" if stopped else "dev cluster was not running")
    if purge:
        note("its data was deleted")


@app.command()
def status(state_dir: StateDir = None) -> None:
    """Show components (pid, memory) and nodes; exit code 1 if the cluster is not running."""
    st = _cluster(state_dir).status()
    write(f"dev cluster {st.server}")
    comps = [
        [name, str(i["pid"]), "yes" if i["alive"] else "NO", str(i["rss_mib"])]
        for name, i in st.components.items()
    ]
    write(table(["COMPONENT", "PID", "ALIVE", "RSS MiB"], comps))
    if st.nodes:
        rows = [[n["name"], n["ready"], n["cpu"], n["memory"], n["pods"]] for n in st.nodes]
        write("\n" + table(["NODE", "READY", "CPU", "MEMORY", "PODS"], rows))
    if st.node_images:
        rows = [[i["name"], i["size"]] for i in st.node_images]
        write("\n" + table(["NODE IMAGE", "SIZE"], rows))
    if st.pods_memory_mib is not None:
        write(f"real node: pods use {st.pods_memory_mib} MiB")
    total = sum(int(i["rss_mib"]) for i in st.components.values())
    write(
        f"running: {'yes' if st.running else 'no'}; processes' RSS {total} MiB; "
        "versions: " + ", ".join(f"{k} {v}" for k, v in st.versions.items())
    )
    if not st.running:
        raise typer.Exit(1)


@app.command()
def kubeconfig(state_dir: StateDir = None) -> None:
    """Print the path of the admin kubeconfig."""
    write(str(_cluster(state_dir).kubeconfig))


@app.command()
def env(state_dir: StateDir = None) -> None:
    """Print `export KUBECONFIG=...` (use: eval "$(sparkplane dev-cluster env)")."""
    path = _cluster(state_dir).kubeconfig
    write(f"export KUBECONFIG={os.fspath(path)}")


@app.command("s3-env")
def s3_env(
    state_dir: StateDir = None,
    tenant: Annotated[
        str | None,
        typer.Option(help="A namespace whose scoped identity to use (default: the admin's)."),
    ] = None,
) -> None:
    """Print the AWS variables of the cluster's S3 (SeaweedFS) and SPARKPLANE_LOG_ARCHIVE (use:
    eval "$(sparkplane dev-cluster s3-env)")."""
    access = _cluster(state_dir).s3_access()
    if tenant is not None and tenant not in access.tenants:
        raise DevClusterError(
            f"--tenant {tenant}: no identity for that namespace; choose one of "
            + ", ".join(sorted(access.tenants))
        )
    env = {**access.env(tenant), "SPARKPLANE_LOG_ARCHIVE": access.archive}
    write("\n".join(f"export {k}={shlex.quote(v)}" for k, v in env.items()))


@app.command()
def simulate(
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    namespace: Annotated[
        str | None, typer.Option("-n", "--namespace", help="Only this namespace (default: all).")
    ] = None,
) -> None:
    """SIMULATOR: create executor pods for running driver pods, as a Spark driver would.

    For the dev cluster only (KWOK runs no containers). Runs until interrupted.
    """
    from sparkplane_devcluster.simulator import DriverSimulator

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sim = DriverSimulator(make_kube(kubeconfig, context), namespace).start()
    progress(f"simulating Spark drivers in {namespace or 'all namespaces'} (Ctrl-C stops)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


kueue_app = typer.Typer(
    help="Kueue (quotas and queues) on the dev cluster, started only when asked.",
    no_args_is_help=True,
)
app.add_typer(kueue_app, name="kueue")


@kueue_app.command("up")
def kueue_up(state_dir: StateDir = None) -> None:
    """Start Kueue on the running dev cluster (built once, cached): its CRDs from the Go
    module, its webhooks served on 127.0.0.1, its manager; idempotent. `down` stops it."""
    from sparkplane_devcluster.kueue import KUEUE

    started = _cluster(state_dir).kueue_up(progress)
    note(f"kueue v{KUEUE} {'started' if started else 'already running'}")


traefik_app = typer.Typer(
    help="Traefik (a real ingress controller) on the real-node dev cluster, started only when "
    "asked.",
    no_args_is_help=True,
)
app.add_typer(traefik_app, name="traefik")


@traefik_app.command("up")
def traefik_up(state_dir: StateDir = None) -> None:
    """Start Traefik on the running real-node dev cluster (built once, cached): its least-
    privilege identity, the default IngressClass `traefik`, TLS on 127.0.0.1; idempotent."""
    from sparkplane_devcluster.traefik import TRAEFIK

    cluster = _cluster(state_dir)
    started = cluster.traefik_up(progress)
    note(f"traefik v{TRAEFIK} {'started' if started else 'already running'}")
    write(f"https://127.0.0.1:{cluster.ports.traefik}")


@kueue_app.command("queues")
def kueue_queues(
    state_dir: StateDir = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "-n",
            "--namespace",
            help="A namespace given a LocalQueue (repeatable; default: "
            "default and spark-jobs); made ready for Spark if absent.",
        ),
    ] = None,
    cluster_queue: Annotated[str, typer.Option(help="The ClusterQueue's name.")] = "spark",
    local_queue: Annotated[
        str, typer.Option(help="Each LocalQueue's name (what `kueue.x-k8s.io/queue-name` names).")
    ] = "spark",
    cpu: Annotated[str, typer.Option(help="The ClusterQueue's cpu quota.")] = "8",
    memory: Annotated[str, typer.Option(help="The ClusterQueue's memory quota.")] = "32Gi",
) -> None:
    """Set up a ResourceFlavor, a ClusterQueue with a cpu/memory quota and a LocalQueue in each
    namespace (server-side apply: rerun to change the quota); prints what it applied."""
    from sparkplane_devcluster.cluster import ready_namespace
    from sparkplane_devcluster.kueue import Quota, apply_queues, check_quota, names

    cluster = _cluster(state_dir)
    namespaces = tuple(namespace or Quota.namespaces)
    quota = Quota(cluster_queue, local_queue, cpu=cpu, memory=memory, namespaces=namespaces)
    check_quota(quota)
    kube = cluster._kube()
    try:
        for ns in namespaces:
            ready_namespace(kube, ns)
        objs = apply_queues(kube, quota, cluster.settings.start_timeout)
    finally:
        kube.close()
    write("\n".join(names(objs)))
