"""``DevCluster``: bring the local control plane up, report on it, take it down.

Start order: etcd -> kube-apiserver (/readyz) -> controller-manager + scheduler -> kwok ->
fake nodes -> wait until every node is Ready without the not-ready taint and the ``default``
service account exists -> the namespaces ``default`` (the kubeconfig's) and ``spark-jobs`` (the
docs') made ready for Spark (:func:`ready_namespace`: their ``default`` service account holds
sparkplane's driver role, so a Spark driver can create its executors and ``sparkplane submit -f
examples/spark-pi.yaml`` works as printed) -> with
``real_node``, the real node (:mod:`sparkplane_devcluster.node`) and the fake nodes tainted so
apps land on it. ``up`` is idempotent: a healthy running cluster is
left alone; a partly running one (a component died) has its processes restarted and keeps its
data (etcd). Only ``down(purge=True)`` deletes the data.

Two clusters on one machine never share anything: before starting, ``up`` takes the machine's
registry lock (:mod:`sparkplane_devcluster.registry`), refuses a port range that overlaps another
registered cluster's (naming its state dir), chooses the real node's index among those neither
registered nor in use on the host (:mod:`sparkplane_devcluster.alloc`), writes it in
``state.json`` and registers; ``down`` unregisters.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sparkplane.errors import AlreadyExistsError, DevClusterError, NotFoundError
from sparkplane.security.rbac import bodies, render
from sparkplane_devcluster import (
    alloc,
    components,
    process,
    registry,
    seaweed,
    versions,
    volumes,
)
from sparkplane_devcluster.build import Binaries, ensure_binaries, lock
from sparkplane_devcluster.hostdeps import ensure_debian_packages
from sparkplane_devcluster.node import host, objects, realnode
from sparkplane_devcluster.node.plan import NodePlan
from sparkplane_devcluster.nodebuild import (
    NodeBinaries,
    cached_node_binaries,
    ensure_node_binaries,
)
from sparkplane_devcluster.pki import Pki, ensure_pki

Progress = Callable[[str], None]
SPARK_NAMESPACES = ("default", "spark-jobs")  # made ready for Spark by `up`: kubeconfig's, docs'
FIELD_MANAGER = "sparkplane-dev-cluster"
ORDER = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "spark-ui-simulator",
    "seaweedfs",
)
OPTIONAL = ("kueue", "traefik")
"""Components started only when asked (``dev-cluster kueue up``): not needed for "running",
stopped first by ``down``."""

DRIVER_LOG = """\
INFO SparkContext: Running Spark version 4.0.1 (simulated by the sparkplane dev cluster)
INFO SparkContext: Submitted application: simulated
INFO KubernetesClusterSchedulerBackend: Requesting executors
INFO DAGScheduler: Job 0 finished: reduce at SparkPi.scala:38
Pi is roughly 3.1418
INFO SparkContext: Successfully stopped SparkContext
"""
EXECUTOR_LOG = """\
INFO CoarseGrainedExecutorBackend: Started daemon (simulated by the sparkplane dev cluster)
INFO Executor: Finished task 0.0 in stage 0.0
"""


def default_cache_dir() -> Path:
    return Path(os.environ.get("SPARKPLANE_CACHE_DIR") or Path.home() / ".cache" / "sparkplane")


def default_state_dir() -> Path:
    env = os.environ.get("SPARKPLANE_STATE_DIR")
    return Path(env) if env else default_cache_dir() / "dev-cluster"


PORT_BASE_ENV = "SPARKPLANE_DEV_PORT_BASE"
DEFAULT_PORT_BASE = 16443


def default_port_base() -> int:
    """The one place the port base's environment variable is read (CLI, demo, library)."""
    if os.environ.get("SPARKPLANE_PORT_BASE") and not os.environ.get(PORT_BASE_ENV):
        raise DevClusterError(
            f"SPARKPLANE_PORT_BASE is no longer read: set {PORT_BASE_ENV} instead (or pass "
            "--port-base)"
        )
    text = os.environ.get(PORT_BASE_ENV) or str(DEFAULT_PORT_BASE)
    try:
        return int(text)
    except ValueError:
        raise DevClusterError(
            f"{PORT_BASE_ENV}={text!r} is not a port number: set it to an integer such as "
            f"{DEFAULT_PORT_BASE}"
        ) from None


@dataclass(frozen=True)
class DevClusterSettings:
    """Where the cluster keeps its files, which ports it binds, and its fake nodes."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    state_dir: Path = field(default_factory=default_state_dir)
    port_base: int = field(default_factory=default_port_base)
    nodes: int = 3
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    node_pods: int = 250
    start_timeout: float = 120.0
    real_node: bool = False

    def __post_init__(self) -> None:
        try:
            alloc.check_port_base(self.port_base, "the port base")
        except ValueError as exc:
            raise DevClusterError(f"{exc}: pass another --port-base / {PORT_BASE_ENV}") from None


@dataclass(frozen=True)
class ClusterStatus:
    """What ``dev-cluster status`` prints."""

    running: bool
    kubeconfig: Path
    server: str
    components: dict[str, dict[str, Any]]
    nodes: list[dict[str, str]]
    versions: dict[str, str]
    node_images: list[dict[str, str]] = field(default_factory=list)
    pods_memory_mib: int | None = None


class DevCluster:
    """The local control plane of one state directory."""

    def __init__(self, settings: DevClusterSettings | None = None) -> None:
        self.settings = settings or DevClusterSettings()
        self.state_dir = self.settings.state_dir
        self.ports = components.Ports(self.settings.port_base)
        self._extra: dict[str, Any] = {}  # saved with the pids: real_node, node_namespace

    # -- paths ----------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    def log_path(self, component: str) -> Path:
        return self.state_dir / "logs" / f"{component}.log"

    @property
    def _state_file(self) -> Path:
        return self.state_dir / "state.json"

    def _read_state(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self._state_file.read_text())
        except (OSError, ValueError):
            return {}
        if "port_base" in data:
            self.ports = components.Ports(int(data["port_base"]))
        return data

    # -- queries --------------------------------------------------------------------------
    def _pids(self) -> dict[str, tuple[int, str]]:
        state = self._read_state()
        return {k: (int(v["pid"]), v["binary"]) for k, v in state.get("processes", {}).items()}

    def component_pid(self, name: str) -> int | None:
        """The pid of a running component (``kubelet``, ``node-holder``...), None if not started."""
        found = self._pids().get(name)
        return found[0] if found else None

    @property
    def node_plan(self) -> NodePlan:
        """The real node's names and addresses: the index this cluster was given at ``up``
        (a state written by an older sparkplane has none: its index followed the port base)."""
        state = self._read_state()
        index = state.get("node_index") or alloc.legacy_index(self.ports.base)
        return NodePlan(int(index), self.state_dir)

    @property
    def _index_file(self) -> Path:
        """The last index given, preferred at the next ``up`` (stable addresses)."""
        return self.state_dir / "node" / "index"

    def has_real_node(self) -> bool:
        """True if the running (or last started) cluster has a real node."""
        return bool(self._read_state().get("real_node"))

    def is_running(self) -> bool:
        """Every component alive and the API server ready."""
        pids = self._pids()
        expected = set(ORDER) | (set(realnode.COMPONENTS) if self.has_real_node() else set())
        if set(pids) - set(OPTIONAL) != expected:
            return False
        if not all(process.alive(*pids[name]) for name in expected):
            return False
        ca = Pki(self.state_dir / "pki").file("ca.crt")
        return process.http_ok(f"{self.server}/readyz", ca)

    def status(self) -> ClusterStatus:
        """Component pids, liveness and memory, and the nodes (if the API answers)."""
        comps: dict[str, dict[str, Any]] = {}
        for name, (pid, binary) in self._pids().items():
            up = process.alive(pid, binary)
            comps[name] = {"pid": pid, "alive": up, "rss_mib": process.rss_kib(pid) // 1024}
        running = self.is_running()
        nodes: list[dict[str, str]] = []
        if running:
            kube = self._kube()
            for node in kube.list("v1", "Node"):
                ready = next(
                    (
                        c["status"]
                        for c in node.get("status", {}).get("conditions", [])
                        if c["type"] == "Ready"
                    ),
                    "Unknown",
                )
                cap = node.get("status", {}).get("allocatable", {})
                nodes.append(
                    {
                        "name": node["metadata"]["name"],
                        "ready": ready,
                        "cpu": str(cap.get("cpu", "")),
                        "memory": str(cap.get("memory", "")),
                        "pods": str(cap.get("pods", "")),
                    }
                )
            kube.close()
        images: list[dict[str, str]] = []
        pods_mib = None
        if running and self.has_real_node():
            node_bins = cached_node_binaries(self.settings.cache_dir)
            if node_bins is not None:
                images = realnode.images(node_bins, self.node_plan)
            pods_mib = host.pods_memory_bytes(self.node_plan) // (1 << 20)
        return ClusterStatus(
            node_images=images,
            pods_memory_mib=pods_mib,
            running=running,
            kubeconfig=self.kubeconfig,
            server=self.server,
            components=comps,
            nodes=nodes,
            versions={
                "kubernetes": versions.KUBERNETES,
                "etcd": versions.ETCD,
                "kwok": versions.KWOK,
                "seaweedfs": seaweed.SEAWEEDFS,
                **(
                    {
                        "containerd": versions.CONTAINERD,
                        "runc": versions.RUNC,
                        "coredns": versions.COREDNS,
                    }
                    if self.has_real_node()
                    else {}
                ),
            },
        )

    # -- commands -------------------------------------------------------------------------
    def up(self, progress: Progress = lambda _: None) -> Path:
        """Start the cluster if it is not running; return the kubeconfig path."""
        real = self.settings.real_node
        if self.is_running():
            if real and not self.has_real_node():
                raise DevClusterError(
                    f"the dev cluster at {self.server} runs without a real node: stop it "
                    "(`sparkplane dev-cluster down`) and run `up --real-node` again"
                )
            progress(f"dev cluster already running at {self.server}")
            self._ready_namespaces()  # a cluster started by an older sparkplane
            registry.register(self.state_dir)  # one started by an older sparkplane, too
            if self.has_real_node():  # images whose inputs changed since it started
                realnode.import_images(*self._node_inputs(progress), self.node_plan, progress)
            return self.kubeconfig
        if real:
            problems = host.preflight()
            if problems:
                raise DevClusterError(
                    "--real-node needs " + "; ".join(problems) + ". Without them, "
                    "`sparkplane dev-cluster up` (no --real-node) runs the simulated cluster."
                )
        self._refuse_overlap(registry.claims(exclude=self.state_dir))  # before any build
        if self._pids():
            progress("restarting the cluster's processes (its data is kept)")
        self.down(quiet=True)  # stop what is left of a partly running cluster; data stays
        self.ports = components.Ports(self.settings.port_base)
        bins = ensure_binaries(self.settings.cache_dir, progress)
        weed = seaweed.ensure_weed(self.settings.cache_dir, progress)
        node_bins, archives = self._node_inputs(progress) if real else (None, [])
        started = time.monotonic()
        pids: dict[str, dict[str, Any]] = {}
        self._claim(real, progress)
        try:
            pki = ensure_pki(self.state_dir / "pki")
            self.kubeconfig.write_text(components.kubeconfig(self.server, pki))
            self.kubeconfig.chmod(0o600)
            self._start_all(bins, pki, pids, progress)
            self._start_s3(weed, real, pids, progress)
            progress(f"creating {self.settings.nodes} simulated nodes")
            self._create_nodes()
            self._ready_namespaces()
            if node_bins is not None:
                self._start_node(node_bins, archives, pki, pids, progress)
        except BaseException:
            self._save(pids)
            self.down(quiet=True)
            raise
        progress(f"dev cluster ready in {time.monotonic() - started:.1f}s")
        return self.kubeconfig

    def down(self, quiet: bool = False, purge: bool = False) -> bool:
        """Stop every component (the real node first, then the control plane in reverse order)
        and remove everything the real node made on the host; with ``purge`` also delete the
        cluster's data (etcd, the node's files). Return True if something was running."""
        state = self._read_state()
        pids = self._pids()
        if state.get("real_node") or state.get("node_namespace"):
            realnode.stop(self.node_plan, pids, state.get("node_namespace"))
        for name in (*OPTIONAL, *reversed(ORDER)):
            if name in pids:
                pid, binary = pids[name]
                process.stop(pid, binary)
        if self._state_file.exists():
            self._state_file.unlink()
        registry.unregister(self.state_dir)
        if purge:
            for sub in ("etcd", "node", "seaweedfs", "kueue", "traefik"):
                shutil.rmtree(self.state_dir / sub, ignore_errors=True)
        return bool(pids)

    def _node_inputs(self, progress: Progress) -> tuple[NodeBinaries, list[tuple[str, Path, str]]]:
        """The real node's binaries and image archives (built once, then cached)."""
        from sparkplane_devcluster.images import ensure_images

        node_bins = ensure_node_binaries(self.settings.cache_dir, progress)
        ensure_debian_packages(realnode.NODE_PACKAGES, "the real node's kube-proxy", progress)
        built = ensure_images(self.settings.cache_dir, progress)
        return node_bins, [(i.ref, i.archive, i.key) for i in built]

    def _start_node(
        self,
        node_bins: NodeBinaries,
        archives: list[tuple[str, Path, str]],
        pki: Pki,
        pids: dict[str, dict[str, Any]],
        progress: Progress,
    ) -> None:
        kube = self._kube()
        try:
            ns = realnode.start(
                self.node_plan,
                pki,
                node_bins,
                archives,
                self.ports.apiserver,
                self.ports.s3,
                kube,
                lambda name, argv, env: self._launch(name, argv, pids, env),
                progress,
                self.settings.start_timeout,
            )
            self._extra["node_namespace"] = ns
            self._save(pids)
            objects.taint_simulated(kube)
        finally:
            kube.close()

    def kueue_up(self, progress: Progress = lambda _: None) -> bool:
        """Start Kueue (:mod:`.kueue`) on the running cluster: its CRDs, webhooks and manager;
        False if it already runs. Fails (never skips) if the cluster is down or Kueue does not
        become ready."""
        from sparkplane_devcluster import kueue

        if not self.is_running():
            raise DevClusterError(
                f"the dev cluster at {self.server} is not running: start it first "
                "(`sparkplane dev-cluster up`, or `up --kueue`)"
            )
        binary = kueue.ensure_kueue(self.settings.cache_dir, progress)
        with lock(self.state_dir / "kueue.lock"):  # two `kueue up` at once start one Kueue
            found = self._pids().get(kueue.PROCESS)
            if found and process.alive(*found):
                progress("kueue already running")
                return False
            self._start_kueue(binary, progress)
        return True

    def _start_kueue(self, binary: Path, progress: Progress) -> None:
        from sparkplane_devcluster import kueue

        root = self.state_dir / "kueue"
        certs = root / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        url = f"https://127.0.0.1:{self.ports.kueue_webhook}"
        timeout = self.settings.start_timeout
        kube = self._kube()
        try:
            progress(f"installing Kueue v{kueue.KUEUE}'s CRDs and webhooks (webhooks at {url})")
            source = kueue.module_dir(self.log_path("kueue-module"))
            kueue.install(kube, source, url, certs, timeout)
            cfg = root / "config.yaml"
            cfg.write_text(
                yaml.safe_dump(
                    kueue.config(self.ports.kueue_webhook, self.ports.kueue_health, certs)
                )
            )
            progress("starting kueue")
            state = self._read_state()
            pids: dict[str, dict[str, Any]] = dict(state.get("processes", {}))
            # kept as written by `up` (its settings too: _save writes _extra last)
            self._extra = {k: v for k, v in state.items() if k not in ("port_base", "processes")}
            pid, name, log = self._launch(
                kueue.PROCESS, kueue.argv(binary, cfg, self.kubeconfig), pids
            )
            try:
                kueue.wait_ready(self.ports.kueue_health, pid, name, log, timeout)
                kueue.wait_webhooks(kube, timeout)
            except BaseException:
                process.stop(pid, name)
                raise
        finally:
            kube.close()

    def traefik_up(self, progress: Progress = lambda _: None) -> bool:
        """Start Traefik (:mod:`.traefik`) on the running real-node cluster: its identity, its
        IngressClass and the controller; False if it already runs. Fails (never skips) if the
        cluster is down, has no real node, or Traefik does not answer."""
        from sparkplane_devcluster import traefik

        if not self.is_running() or not self.has_real_node():
            raise DevClusterError(
                f"the dev cluster at {self.server} is not running with a real node: Traefik "
                "proxies to pod IPs only the real node's route reaches (`up --real-node`)"
            )
        binary = traefik.ensure_traefik(self.settings.cache_dir, progress)
        with lock(self.state_dir / "traefik.lock"):
            found = self._pids().get(traefik.PROCESS)
            if found and process.alive(*found):
                progress("traefik already running")
                return False
            kube = self._kube()
            try:
                progress(f"installing Traefik v{traefik.TRAEFIK}'s identity and IngressClass")
                config = self.state_dir / "traefik" / "kubeconfig"
                traefik.install(kube, config)
            finally:
                kube.close()
            state = self._read_state()
            pids: dict[str, dict[str, Any]] = dict(state.get("processes", {}))
            self._extra = {k: v for k, v in state.items() if k not in ("port_base", "processes")}
            argv = traefik.argv(binary, self.ports.traefik)
            pid, name, log = self._launch(traefik.PROCESS, argv, pids, traefik.env(config))
            try:
                process.wait_until(
                    "traefik",
                    lambda: process.http_ok(f"https://127.0.0.1:{self.ports.traefik}/ping"),
                    timeout=self.settings.start_timeout,
                    pid=pid,
                    binary=name,
                    log=log,
                )
            except BaseException:
                process.stop(pid, name)
                raise
        return True

    # -- internals ------------------------------------------------------------------------
    def _claim(self, real: bool, progress: Progress) -> None:
        """Under the machine's registry lock: refuse ports another cluster holds, choose a free
        node index, write ``state.json`` and register (so the next ``up`` anywhere sees it)."""
        with registry.locked():
            others = registry.claims(exclude=self.state_dir)
            self._refuse_overlap(others)
            self._check_ports()
            self._extra = {"real_node": real}
            if real:
                in_use = host.indexes_in_use()
                taken = set(in_use) | {c.node_index for c in others if c.node_index}
                try:
                    previous = int(self._index_file.read_text())
                except (OSError, ValueError):
                    previous = None
                try:
                    index = alloc.choose_index(previous, self.ports.base, taken)
                except LookupError as exc:
                    raise DevClusterError(str(exc)) from None
                if previous is not None and index != previous:
                    why = in_use.get(previous) or next(
                        (
                            f"the dev cluster in {c.state_dir}"
                            for c in others
                            if c.node_index == previous
                        ),
                        "",
                    )
                    progress(f"real node index {previous} is taken ({why}): using {index}")
                self._extra["node_index"] = index
                self._index_file.parent.mkdir(parents=True, exist_ok=True)
                self._index_file.write_text(str(index))
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._save({})
            registry.register(self.state_dir)

    def _refuse_overlap(self, others: list[alloc.Claim]) -> None:
        overlap = alloc.port_overlap(self.settings.port_base, others)
        if overlap is not None:
            raise DevClusterError(
                alloc.port_overlap_message(self.state_dir, self.settings.port_base, overlap)
            )

    def _check_ports(self) -> None:
        for component, port in self.ports.named().items():
            if process.port_in_use(port):
                raise DevClusterError(
                    f"port {port} (for {component}) is already in use on 127.0.0.1: stop what "
                    f"listens there (`ss -ltnp 'sport = :{port}'`) or choose other ports with "
                    "--port-base / SPARKPLANE_DEV_PORT_BASE"
                )

    def _save(self, pids: dict[str, dict[str, Any]]) -> None:
        data = {
            "port_base": self.ports.base,
            "processes": pids,
            "settings": {k: str(v) for k, v in asdict(self.settings).items()},
            **self._extra,
        }
        self._state_file.write_text(json.dumps(data, indent=2))

    def _launch(
        self,
        name: str,
        argv: list[str],
        pids: dict[str, dict[str, Any]],
        env: dict[str, str] | None = None,
    ) -> tuple[int, str, Path]:
        log = self.log_path(name)
        pid = process.start(name, argv, log, env)
        # nsenter/unshare exec the command after "--": that is the process to recognise
        binary = argv[argv.index("--") + 1] if "--" in argv else argv[0]
        pids[name] = {"pid": pid, "binary": binary}
        self._save(pids)
        return pid, binary, log

    def _start_all(
        self, bins: Binaries, pki: Pki, pids: dict[str, dict[str, Any]], progress: Progress
    ) -> None:
        state, ports, timeout = self.state_dir, self.ports, self.settings.start_timeout
        etcd_dir = state / "etcd"  # kept across restarts; `down --purge` deletes it
        progress("starting etcd")
        pid, binary, log = self._launch("etcd", components.etcd_argv(bins, ports, etcd_dir), pids)
        process.wait_until(
            "etcd",
            lambda: process.http_ok(f"http://127.0.0.1:{ports.etcd}/health"),
            timeout=timeout,
            pid=pid,
            binary=binary,
            log=log,
        )
        progress("starting kube-apiserver")
        argv = components.apiserver_argv(bins, ports, pki, state)
        pid, binary, log = self._launch("kube-apiserver", argv, pids)
        ca = pki.file("ca.crt")
        process.wait_until(
            "kube-apiserver",
            lambda: process.http_ok(f"{self.server}/readyz", ca),
            timeout=timeout,
            pid=pid,
            binary=binary,
            log=log,
        )
        progress("starting kube-controller-manager and kube-scheduler")
        kcm = self._launch(
            "kube-controller-manager",
            components.controller_manager_argv(bins, ports, pki, self.kubeconfig),
            pids,
        )
        sched_cfg = state / "scheduler.yaml"
        sched_cfg.write_text(components.scheduler_config(self.kubeconfig))
        sched = self._launch(
            "kube-scheduler",
            components.scheduler_argv(bins, ports, sched_cfg, self.kubeconfig),
            pids,
        )
        for (pid, binary, log), port, name in (
            (kcm, ports.controller_manager, "kube-controller-manager"),
            (sched, ports.scheduler, "kube-scheduler"),
        ):
            process.wait_until(
                name,
                lambda port=port: process.http_ok(f"https://127.0.0.1:{port}/healthz"),  # type: ignore[misc]
                timeout=timeout,
                pid=pid,
                binary=binary,
                log=log,
            )
        progress("starting kwok (simulated kubelets)")
        stages = resources.files("sparkplane_devcluster").joinpath("data/stages.yaml").read_text()
        driver_log, executor_log = state / "driver.log", state / "executor.log"
        driver_log.write_text(_cri_log(DRIVER_LOG))
        executor_log.write_text(_cri_log(EXECUTOR_LOG))
        kwok_cfg = state / "kwok.yaml"
        kwok_cfg.write_text(
            components.kwok_config(stages, driver_log, executor_log, ports.spark_ui)
        )
        pid, binary, log = self._launch(
            "kwok", components.kwok_argv(bins, ports, kwok_cfg, self.kubeconfig, pki), pids
        )
        ui = self._launch("spark-ui-simulator", components.fake_ui_argv(ports.spark_ui), pids)
        process.wait_until(
            "spark-ui-simulator",
            lambda: process.http_ok(f"http://127.0.0.1:{ports.spark_ui}/"),
            timeout=timeout,
            pid=ui[0],
            binary=ui[1],
            log=ui[2],
        )
        process.wait_until(
            "kwok",
            lambda: process.http_ok(f"http://127.0.0.1:{ports.kwok}/healthz"),
            timeout=timeout,
            pid=pid,
            binary=binary,
            log=log,
        )

    @property
    def s3_access_file(self) -> Path:
        """The S3 gateway's endpoints, bucket and keys (:class:`seaweed.S3Access`)."""
        return self.state_dir / "seaweedfs" / "s3.json"

    def s3_access(self) -> seaweed.S3Access:
        """How to reach the cluster's S3 (SeaweedFS), as written by ``up``."""
        try:
            return seaweed.S3Access.load(self.s3_access_file)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DevClusterError(
                f"no S3 settings in {self.s3_access_file} ({exc}): run `sparkplane dev-cluster up`"
            ) from None

    def _start_s3(
        self, weed: Path, real: bool, pids: dict[str, dict[str, Any]], progress: Progress
    ) -> None:
        """SeaweedFS's master, volume server, filer and S3 gateway (one process), the bucket."""
        progress(f"starting SeaweedFS (S3 on 127.0.0.1:{self.ports.s3})")
        pod_endpoint = f"http://{self.node_plan.host_ip}:{self.ports.s3}" if real else None
        root, access = seaweed.prepare(
            self.state_dir, f"http://127.0.0.1:{self.ports.s3}", pod_endpoint
        )
        pid, binary, log = self._launch(
            "seaweedfs", seaweed.argv(weed, root, self.ports.seaweedfs), pids
        )
        process.wait_until(
            "seaweedfs",
            lambda: process.http_ok(f"http://127.0.0.1:{self.ports.s3}/healthz"),
            timeout=self.settings.start_timeout,
            pid=pid,
            binary=binary,
            log=log,
        )
        seaweed.create_bucket(access, self.settings.start_timeout)

    def _kube(self) -> Any:
        from sparkplane.kube import Kube, connect

        return Kube(connect(kubeconfig=self.kubeconfig))

    def _ready_namespaces(self) -> None:
        """The Spark namespaces, and the static volumes claims bind to (:mod:`.volumes`)."""
        kube = self._kube()
        try:
            for namespace in SPARK_NAMESPACES:
                ready_namespace(kube, namespace, timeout=self.settings.start_timeout)
            for pv in volumes.volumes(self.state_dir):
                volumes.make_dir(pv)
                found = kube.get_or_none("v1", "PersistentVolume", pv["metadata"]["name"])
                if found is not None and volumes.released(found):
                    kube.delete("v1", "PersistentVolume", pv["metadata"]["name"])
                    found = None
                if found is None:
                    try:
                        kube.create(pv)
                    except AlreadyExistsError:
                        pass  # still being deleted: the next `up` makes it
        finally:
            kube.close()

    def _create_nodes(self) -> None:
        kube = self._kube()
        try:
            names = [f"sparkplane-node-{i}" for i in range(self.settings.nodes)]
            for name in names:
                s = self.settings
                node = components.node_manifest(name, s.node_cpu, s.node_memory, s.node_pods)
                try:
                    kube.create(node)
                except AlreadyExistsError:
                    pass  # the data was kept: the node is still registered
            wait_nodes_ready(kube, names, timeout=self.settings.start_timeout)
            process.wait_until(
                "the default service account (kube-controller-manager)",
                lambda: _exists(kube, "v1", "ServiceAccount", "default", "default"),
                timeout=self.settings.start_timeout,
            )
        finally:
            kube.close()


def ready_namespace(
    kube: Any, namespace: str, service_account: str = "default", timeout: float = 60.0
) -> None:
    """Make ``namespace`` ready for Spark: created if absent, its ``service_account`` holding
    sparkplane's driver role (what a Spark driver does: create and watch its executors, their
    ConfigMaps and Services; ``sparkplane rbac driver -n NS --service-account SA --apply``).
    Server-side apply: idempotent."""
    if kube.get_or_none("v1", "Namespace", namespace) is None:
        try:
            kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except AlreadyExistsError:
            pass
    if service_account == "default":  # made by the service-account controller, not by us
        process.wait_until(
            f"the service account {namespace}/default (kube-controller-manager)",
            lambda: _exists(kube, "v1", "ServiceAccount", "default", namespace),
            timeout=timeout,
        )
    for obj in bodies(render("driver", namespace, service_account=service_account)):
        if obj["kind"] == "ServiceAccount" and service_account == "default":
            continue  # the controller's own object: leave its fields alone
        kube.apply(obj, field_manager=FIELD_MANAGER)


def _cri_log(text: str) -> str:
    """KWOK serves logs in the CRI file format: ``<RFC3339Nano> <stream> F <line>``."""
    now = time.time()
    lines = []
    for i, line in enumerate(text.splitlines()):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now + i))
        lines.append(f"{stamp}.000000000Z stdout F {line}")
    return "\n".join(lines) + "\n"


def node_ready(node: dict[str, Any]) -> bool:
    """Ready=True and no not-ready / unreachable taint left (the scheduler would skip it)."""
    conditions = node.get("status", {}).get("conditions", [])
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
    taints = {t["key"] for t in node.get("spec", {}).get("taints", []) or []}
    blocking = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    return ready and not (taints & blocking)


def wait_nodes_ready(kube: Any, names: list[str], timeout: float) -> None:
    """Wait until each named node is schedulable."""

    def check() -> bool:
        nodes = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
        return all(name in nodes and node_ready(nodes[name]) for name in names)

    process.wait_until(f"nodes {', '.join(names)} to become Ready", check, timeout=timeout)


def _exists(kube: Any, api_version: str, kind: str, name: str, namespace: str) -> bool:
    try:
        kube.get(api_version, kind, name, namespace)
    except NotFoundError:
        return False
    return True
