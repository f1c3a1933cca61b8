"""The command lines and config files of each component (pure: paths and ports in, text out).

Flag choices and why:
- apiserver: ``--advertise-address=127.0.0.1`` (sandboxes may have no default route) with
  ``--endpoint-reconciler-type=none`` (a loopback endpoint would be rejected); default admission,
  so ``Priority`` resolves priorityClassName and ``ServiceAccount`` injects tokens;
  ``--authorization-mode=Node,RBAC``; the service-account trio enables the TokenRequest API.
- controller-manager: every default controller (garbage collector, job, cronjob, namespace,
  service-account, node-lifecycle which removes the not-ready taint from new nodes...), each with
  its own service-account credentials; a short node monitor period so nodes turn Ready quickly.
- scheduler: short back-off so preemption and retries are quick in tests.
- kwok: manages the nodes annotated ``kwok.x-k8s.io/node=fake`` (never a real node); its server
  gives the apiserver pod logs over TLS the apiserver verifies; a wide pod CIDR.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from sparkplane_devcluster.build import Binaries
from sparkplane_devcluster.pki import Pki

SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
NODE_LEASE_SECONDS = 40


@dataclass(frozen=True)
class Ports:
    """Loopback ports, derived from one base so a second cluster only needs another base."""

    base: int

    @property
    def apiserver(self) -> int:
        return self.base

    @property
    def etcd(self) -> int:
        return self.base + 1

    @property
    def etcd_peer(self) -> int:
        return self.base + 2

    @property
    def controller_manager(self) -> int:
        return self.base + 3

    @property
    def scheduler(self) -> int:
        return self.base + 4

    @property
    def kwok(self) -> int:
        return self.base + 5

    @property
    def spark_ui(self) -> int:
        """The simulated Spark UI every pod's port 4040 is forwarded to."""
        return self.base + 6

    @property
    def seaweedfs(self) -> list[int]:
        """SeaweedFS's master, volume, filer and S3 ports, http then gRPC each."""
        return [self.base + 7 + i for i in range(8)]

    @property
    def s3(self) -> int:
        """The S3 gateway (SeaweedFS's)."""
        return self.seaweedfs[6]

    @property
    def kueue_webhook(self) -> int:
        """Kueue's webhook server (started only by ``dev-cluster kueue up``)."""
        return self.base + 15

    @property
    def kueue_health(self) -> int:
        """Kueue's health probes (``/readyz``)."""
        return self.base + 16

    @property
    def traefik(self) -> int:
        """Traefik's TLS entry point and ping (``traefik up``, real-node cluster only); base + 17
        stays free: tests/realnode/test_kubeflow_clients.py runs an Airflow there."""
        return self.base + 18

    def named(self) -> dict[str, int]:
        """Every port with the component that binds it (for "port in use" errors)."""
        return {
            "kube-apiserver": self.apiserver,
            "etcd (client)": self.etcd,
            "etcd (peer)": self.etcd_peer,
            "kube-controller-manager": self.controller_manager,
            "kube-scheduler": self.scheduler,
            "kwok": self.kwok,
            "spark-ui-simulator": self.spark_ui,
            **{
                f"seaweedfs ({part})": port
                for part, port in zip(
                    ("master", "master gRPC", "volume", "volume gRPC", "filer", "filer gRPC"),
                    self.seaweedfs,
                    strict=False,
                )
            },
            "seaweedfs (S3)": self.s3,
            "seaweedfs (S3 gRPC)": self.seaweedfs[7],
            "kueue (webhooks)": self.kueue_webhook,
            "kueue (health)": self.kueue_health,
            "traefik (TLS)": self.traefik,
        }


def etcd_argv(bins: Binaries, ports: Ports, data_dir: Path) -> list[str]:
    client = f"http://127.0.0.1:{ports.etcd}"
    peer = f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        str(bins.etcd),
        "--name=node0",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=node0={peer}",
        "--auto-compaction-retention=1",
        "--quota-backend-bytes=4294967296",
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def apiserver_argv(bins: Binaries, ports: Ports, pki: Pki, state: Path) -> list[str]:
    return [
        str(bins.kube_apiserver),
        f"--etcd-servers=http://127.0.0.1:{ports.etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        "--endpoint-reconciler-type=none",
        f"--tls-cert-file={pki.file('apiserver.crt')}",
        f"--tls-private-key-file={pki.file('apiserver.key')}",
        f"--client-ca-file={pki.file('ca.crt')}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.file('sa.pub')}",
        f"--service-account-signing-key-file={pki.file('sa.key')}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--kubelet-client-certificate={pki.file('apiserver-kubelet-client.crt')}",
        f"--kubelet-client-key={pki.file('apiserver-kubelet-client.key')}",
        f"--kubelet-certificate-authority={pki.file('ca.crt')}",
        f"--cert-dir={state / 'apiserver-certs'}",
        "--max-requests-inflight=1000",
        "--max-mutating-requests-inflight=500",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager_argv(bins: Binaries, ports: Ports, pki: Pki, kubeconfig: Path) -> list[str]:
    return [
        str(bins.kube_controller_manager),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.controller_manager}",
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.file('sa.key')}",
        f"--root-ca-file={pki.file('ca.crt')}",
        "--controllers=*",
        "--node-monitor-period=5s",
        "--node-monitor-grace-period=60s",
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--concurrent-gc-syncs=40",
        "--v=1",
    ]


def scheduler_config(kubeconfig: Path) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 500, "burst": 1000},
            "leaderElection": {"leaderElect": False},
            "podInitialBackoffSeconds": 1,
            "podMaxBackoffSeconds": 2,
        }
    )


def scheduler_argv(bins: Binaries, ports: Ports, config: Path, kubeconfig: Path) -> list[str]:
    return [
        str(bins.kube_scheduler),
        f"--config={config}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={ports.scheduler}",
        "--v=1",
    ]


#: KWOK plays pod stages (Pending -> Running -> Succeeded, deletion) 4 at a time by default, which
#: caps the dev cluster at ~30 pod transitions/s when each PATCH takes ~120 ms on a loaded
#: machine: the operator benchmark (36 000 pods) measured pods waiting ~40 s to be marked Running.
KWOK_OPTIONS = {
    "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
    "kind": "KwokConfiguration",
    "options": {  # a KwokConfiguration given is not defaulted: KWOK's defaults, but pods 32
        "podPlayStageParallelism": 32,
        "nodePlayStageParallelism": 4,
        "nodeLeaseParallelism": 8,
        "podsOnNodeSyncParallelism": 1,
        "enableDebuggingHandlers": True,
        "enableProfilingHandler": True,
        "enableContentionProfiling": False,
        "enablePodsOnNodeSyncListPager": True,
        "enablePodsOnNodeSyncStreamWatch": False,
    },
}


def kwok_config(stages_yaml: str, driver_log: Path, executor_log: Path, ui_port: int) -> str:
    """The stages, ClusterLogs (so ``kubectl logs`` of simulated pods returns text) and a
    ClusterPortForward sending every pod's port 4040 to the simulated Spark UI."""
    logs = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "sparkplane-simulated-logs"},
        "spec": {
            "selector": {},
            "logs": [
                {"containers": ["spark-kubernetes-executor"], "logsFile": str(executor_log)},
                {"logsFile": str(driver_log)},
            ],
        },
    }
    forward = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterPortForward",
        "metadata": {"name": "sparkplane-simulated-spark-ui"},
        "spec": {
            "selector": {},
            "forwards": [{"ports": [4040], "target": {"port": ui_port, "address": "127.0.0.1"}}],
        },
    }
    return "\n---\n".join(
        [
            stages_yaml.rstrip(),
            yaml.safe_dump(KWOK_OPTIONS),
            yaml.safe_dump(logs),
            yaml.safe_dump(forward),
        ]
    )


def kwok_argv(bins: Binaries, ports: Ports, config: Path, kubeconfig: Path, pki: Pki) -> list[str]:
    """KWOK manages only the fake nodes (a real node beside them stays the kubelet's), and
    serves logs/port-forward with a certificate the API server verifies."""
    return [
        str(bins.kwok),
        f"--kubeconfig={kubeconfig}",
        f"--config={config}",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        f"--tls-cert-file={pki.file('kwok-serving.crt')}",
        f"--tls-private-key-file={pki.file('kwok-serving.key')}",
        "--node-ip=127.0.0.1",
        "--node-name=localhost",
        f"--node-port={ports.kwok}",
        f"--server-address=127.0.0.1:{ports.kwok}",
        f"--node-lease-duration-seconds={NODE_LEASE_SECONDS}",
        f"--cidr={POD_CIDR}",
    ]


def fake_ui_argv(port: int) -> list[str]:
    """Run the file as a script: importing the sparkplane package would cost ~40 MiB more."""
    import sys

    from sparkplane_devcluster import fakeui

    return [sys.executable, str(Path(fakeui.__file__)), str(port)]


def kubeconfig(server: str, pki: Pki, name: str = "sparkplane-dev") -> str:
    """An admin kubeconfig with the certificates embedded (it can be copied anywhere)."""
    import base64

    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode()

    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": name,
                    "cluster": {
                        "server": server,
                        "certificate-authority-data": b64(pki.file("ca.crt")),
                    },
                }
            ],
            "users": [
                {
                    "name": f"{name}-admin",
                    "user": {
                        "client-certificate-data": b64(pki.file("admin.crt")),
                        "client-key-data": b64(pki.file("admin.key")),
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
            "current-context": name,
        },
        sort_keys=False,
    )


def node_manifest(name: str, cpu: str, memory: str, pods: int) -> dict[str, object]:
    """A fake node; KWOK keeps the capacity given here (``pods`` must be present)."""
    capacity = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "sparkplane.io/simulated": "true",
            },
        },
        "spec": {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
