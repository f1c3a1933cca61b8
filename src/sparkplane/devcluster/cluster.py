"""``DevCluster``: bring the local control plane up, report on it, take it down.

Start order: etcd -> kube-apiserver (/readyz) -> controller-manager + scheduler -> kwok ->
fake nodes -> wait until every node is Ready without the not-ready taint and the ``default``
service account exists. ``up`` is idempotent: a healthy running cluster is left alone; a partly
running one is stopped and started fresh (etcd data is not kept across a ``down``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from sparkplane.devcluster import components, process, versions
from sparkplane.devcluster.build import Binaries, ensure_binaries
from sparkplane.devcluster.pki import Pki, ensure_pki
from sparkplane.errors import DevClusterError, NotFoundError

Progress = Callable[[str], None]
ORDER = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "spark-ui-simulator",
)

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


@dataclass(frozen=True)
class DevClusterSettings:
    """Where the cluster keeps its files, which ports it binds, and its fake nodes."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    state_dir: Path = field(default_factory=default_state_dir)
    port_base: int = 16443
    nodes: int = 3
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    node_pods: int = 250
    start_timeout: float = 120.0


@dataclass(frozen=True)
class ClusterStatus:
    """What ``dev-cluster status`` prints."""

    running: bool
    kubeconfig: Path
    server: str
    components: dict[str, dict[str, Any]]
    nodes: list[dict[str, str]]
    versions: dict[str, str]


class DevCluster:
    """The local control plane of one state directory."""

    def __init__(self, settings: DevClusterSettings | None = None) -> None:
        self.settings = settings or DevClusterSettings()
        self.state_dir = self.settings.state_dir
        self.ports = components.Ports(self.settings.port_base)

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

    def is_running(self) -> bool:
        """Every component alive and the API server ready."""
        pids = self._pids()
        if set(pids) != set(ORDER):
            return False
        if not all(process.alive(pid, binary) for pid, binary in pids.values()):
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
        return ClusterStatus(
            running=running,
            kubeconfig=self.kubeconfig,
            server=self.server,
            components=comps,
            nodes=nodes,
            versions={
                "kubernetes": versions.KUBERNETES,
                "etcd": versions.ETCD,
                "kwok": versions.KWOK,
            },
        )

    # -- commands -------------------------------------------------------------------------
    def up(self, progress: Progress = lambda _: None) -> Path:
        """Start the cluster if it is not running; return the kubeconfig path."""
        if self.is_running():
            progress(f"dev cluster already running at {self.server}")
            return self.kubeconfig
        self.down(quiet=True)  # clear leftovers of a partly running cluster
        self.ports = components.Ports(self.settings.port_base)
        bins = ensure_binaries(self.settings.cache_dir, progress)
        self._check_ports()
        started = time.monotonic()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        pki = ensure_pki(self.state_dir / "pki")
        self.kubeconfig.write_text(components.kubeconfig(self.server, pki))
        self.kubeconfig.chmod(0o600)
        pids: dict[str, dict[str, Any]] = {}
        try:
            self._start_all(bins, pki, pids, progress)
            progress(f"creating {self.settings.nodes} simulated nodes")
            self._create_nodes()
        except BaseException:
            self._save(pids)
            self.down(quiet=True)
            raise
        progress(f"dev cluster ready in {time.monotonic() - started:.1f}s")
        return self.kubeconfig

    def down(self, quiet: bool = False) -> bool:
        """Stop every component (reverse order); return True if something was running."""
        pids = self._pids()
        for name in reversed(ORDER):
            if name in pids:
                pid, binary = pids[name]
                process.stop(pid, binary)
        if self._state_file.exists():
            self._state_file.unlink()
        return bool(pids)

    # -- internals ------------------------------------------------------------------------
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
        }
        self._state_file.write_text(json.dumps(data, indent=2))

    def _launch(
        self, name: str, argv: list[str], pids: dict[str, dict[str, Any]]
    ) -> tuple[int, str, Path]:
        log = self.log_path(name)
        pid = process.start(name, argv, log)
        pids[name] = {"pid": pid, "binary": argv[0]}
        self._save(pids)
        return pid, argv[0], log

    def _start_all(
        self, bins: Binaries, pki: Pki, pids: dict[str, dict[str, Any]], progress: Progress
    ) -> None:
        state, ports, timeout = self.state_dir, self.ports, self.settings.start_timeout
        etcd_dir = state / "etcd"
        if etcd_dir.exists():
            import shutil

            shutil.rmtree(etcd_dir)
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
        stages = resources.files("sparkplane.devcluster").joinpath("data/stages.yaml").read_text()
        driver_log, executor_log = state / "driver.log", state / "executor.log"
        driver_log.write_text(_cri_log(DRIVER_LOG))
        executor_log.write_text(_cri_log(EXECUTOR_LOG))
        kwok_cfg = state / "kwok.yaml"
        kwok_cfg.write_text(
            components.kwok_config(stages, driver_log, executor_log, ports.spark_ui)
        )
        pid, binary, log = self._launch(
            "kwok", components.kwok_argv(bins, ports, kwok_cfg, self.kubeconfig), pids
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

    def _kube(self) -> Any:
        from sparkplane.kube import Kube, connect

        return Kube(connect(kubeconfig=self.kubeconfig))

    def _create_nodes(self) -> None:
        kube = self._kube()
        try:
            names = [f"sparkplane-node-{i}" for i in range(self.settings.nodes)]
            for name in names:
                s = self.settings
                kube.create(components.node_manifest(name, s.node_cpu, s.node_memory, s.node_pods))
            wait_nodes_ready(kube, names, timeout=self.settings.start_timeout)
            process.wait_until(
                "the default service account (kube-controller-manager)",
                lambda: _exists(kube, "v1", "ServiceAccount", "default", "default"),
                timeout=self.settings.start_timeout,
            )
        finally:
            kube.close()


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
