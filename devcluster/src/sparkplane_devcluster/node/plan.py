"""The real node's plan: names, addresses, paths and config files (pure: settings in, text out).

Layout (one node per dev cluster; every name and subnet derives from the cluster's **node
index** ``<i>``, allotted at ``up`` so that no two clusters on the machine share one
(:mod:`sparkplane_devcluster.alloc`) and kept in the cluster's ``state.json``):

- The node lives in its own **network namespace** and **mount namespace** held by one holder
  process. A veth pair joins it to the host: host side ``spv<i>`` = ``10.217.<i>.1/30``, node side
  ``eth0`` = ``10.217.<i>.2/30`` (the node's IP). Inside, the bridge ``cni0`` =
  ``10.218.<i>.1/24`` is the pods' gateway and the DNS address; pods get ``10.218.<i>.0/24`` from
  host-local with routes only to the service CIDR and the host link — nothing beyond.
- The API server binds loopback only; a relay on ``10.217.<i>.1:443`` carries the node's and the
  pods' connections to it (the ``kubernetes`` Service's endpoint). Forwarding is on inside the
  node's namespace only; the host's sysctls are never written.
- containerd, runc, the CNI plugins, the kubelet, kube-proxy (nftables, inside the namespace) and
  CoreDNS (``kubernetes`` plugin, no upstream: anything outside the cluster is NXDOMAIN).
- Every pod cgroup sits under ``/sparkplane-<i>`` in every cgroup hierarchy, removed by ``down``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sparkplane_devcluster import alloc

NODE_NAME = "sparkplane-real-node"
NODE_LABEL = "sparkplane.io/real-node"
SIMULATED_TAINT = {"key": "sparkplane.io/simulated", "value": "true", "effect": "NoSchedule"}
RELAY_PORT = 443
KUBELET_PORT = 10250
SERVICE_CIDR = "10.96.0.0/16"
CLUSTER_DOMAIN = "cluster.local"
# what the kubelet writes at start (setupKernelTunables); it finds these values in files bound
# over /proc/sys inside the node's mount namespace, so the host's stay as they are
KUBELET_SYSCTLS = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}


@dataclass(frozen=True)
class NodePlan:
    """Everything about one cluster's real node that follows from its node index (1..254, see
    :func:`sparkplane_devcluster.alloc.choose_index`) and state dir. A running cluster's plan is
    ``DevCluster.node_plan`` (the index it was given)."""

    index: int
    state_dir: Path

    def __post_init__(self) -> None:
        if self.index not in alloc.INDEXES:
            raise ValueError(
                f"node index {self.index} is not in 1..254 (a port base is no index: use "
                "DevCluster.node_plan)"
            )

    # -- names and addresses -------------------------------------------------------------
    @property
    def host_veth(self) -> str:
        return f"{alloc.LINK_PREFIX}{self.index}"

    @property
    def host_ip(self) -> str:
        return f"10.217.{self.index}.1"

    @property
    def node_ip(self) -> str:
        return f"10.217.{self.index}.2"

    @property
    def link_cidr(self) -> str:
        return alloc.link_cidr(self.index)

    @property
    def pod_cidr(self) -> str:
        return alloc.pod_cidr(self.index)

    @property
    def bridge_ip(self) -> str:
        return f"10.218.{self.index}.1"

    @property
    def bridge_mac(self) -> str:
        """The pods' bridge's own MAC (locally administered, one per node index). Set once, it
        stays: a Linux bridge without one takes the lowest MAC of its ports, so it changed each
        time a pod with a lower one came or went, and a pod whose neighbour entry still held the
        old one had its packets to the gateway (DNS above all) dropped until ARP noticed, 5 to
        20 seconds (seen as ``UnknownHostException: kubernetes.default.svc`` in drivers)."""
        return f"02:73:70:00:{self.index >> 8:02x}:{self.index & 0xFF:02x}"

    @property
    def cgroup_root(self) -> str:
        return f"{alloc.CGROUP_PREFIX}{self.index}"

    @property
    def api_url(self) -> str:
        """How the node and its pods reach the API server (the relay)."""
        return f"https://{self.host_ip}:{RELAY_PORT}"

    # -- paths ---------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.state_dir / "node"

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    @property
    def containerd_socket(self) -> Path:
        return self.path("run", "containerd.sock")

    # -- config files --------------------------------------------------------------------
    def containerd_config(self, runc: Path, cni_bin: Path, pause_image: str) -> str:
        """containerd 2.x (config version 3): private root/state/socket, runc with cgroupfs,
        negative oom_score_adj clamped (the host lacks CAP_SYS_RESOURCE), netns mounts under
        the state dir."""
        return f"""version = 3
root = "{self.path("containerd", "root")}"
state = "{self.path("containerd", "state")}"

[grpc]
  address = "{self.containerd_socket}"

[ttrpc]
  address = "{self.path("run", "containerd.sock.ttrpc")}"

[plugins."io.containerd.cri.v1.images"]
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{pause_image}"

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{cni_bin}"]
    conf_dir = "{self.path("cni", "net.d")}"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      BinaryName = "{runc}"
      SystemdCgroup = false
"""

    def cni_config(self) -> str:
        """The bridge network: pods on ``cni0``, routes to services and the host link only."""
        import json

        return json.dumps(
            {
                "cniVersion": "1.0.0",
                "name": "sparkplane",
                "plugins": [
                    {
                        "type": "bridge",
                        "bridge": "cni0",
                        "isGateway": True,
                        "ipMasq": False,
                        "hairpinMode": True,
                        "ipam": {
                            "type": "host-local",
                            "ranges": [[{"subnet": self.pod_cidr, "gateway": self.bridge_ip}]],
                            "routes": [{"dst": SERVICE_CIDR}, {"dst": self.link_cidr}],
                            "dataDir": str(self.path("cni", "ipam")),
                        },
                    },
                    {"type": "portmap", "capabilities": {"portMappings": True}},
                ],
            },
            indent=2,
        )

    def kubelet_config(self, ca: Path, cert: Path, key: Path) -> str:
        """Webhook authn/authz (no anonymous access), cgroupfs on the v1 host, every path private,
        low eviction thresholds (the disk is shared) and no negative oom_score_adj."""
        config: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"/{self.cgroup_root}",
            "cgroupsPerQOS": True,
            "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
            "imageServiceEndpoint": f"unix://{self.containerd_socket}",
            "address": self.node_ip,
            "port": KUBELET_PORT,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(ca)},
            },
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": str(cert),
            "tlsPrivateKeyFile": str(key),
            "clusterDNS": [self.bridge_ip],
            "clusterDomain": CLUSTER_DOMAIN,
            "resolvConf": str(self.path("resolv.conf")),
            "podLogsDir": str(self.path("pod-logs")),
            "evictionHard": {
                "memory.available": "200Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "failSwapOn": False,
            "protectKernelDefaults": False,
            "oomScoreAdj": 0,
            "maxPods": 110,
            "serializeImagePulls": False,
            "nodeStatusUpdateFrequency": "5s",
            "syncFrequency": "10s",
            "fileCheckFrequency": "60s",
            "enforceNodeAllocatable": ["pods"],
            "shutdownGracePeriod": "0s",
        }
        return yaml.safe_dump(config, sort_keys=False)

    def kube_proxy_config(self, kubeconfig: Path) -> str:
        """nftables mode inside the node's namespace; conntrack sysctls left alone."""
        config: dict[str, Any] = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "nftables",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "hostnameOverride": NODE_NAME,
            "bindAddress": self.node_ip,
            "healthzBindAddress": f"{self.node_ip}:10256",
            "metricsBindAddress": f"{self.node_ip}:10249",
            "nodePortAddresses": [f"{self.node_ip}/32"],
            "clusterCIDR": self.pod_cidr,
            "oomScoreAdj": 0,
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
            "nftables": {"masqueradeAll": True},
        }
        return yaml.safe_dump(config, sort_keys=False)

    def corefile(self, kubeconfig: Path) -> str:
        """Cluster names only; there is no upstream (nothing outside the cluster resolves)."""
        return f""".:53 {{
    bind {self.bridge_ip}
    errors
    health {self.bridge_ip}:8080
    ready {self.bridge_ip}:8181
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 10
}}
"""

    def kubeconfig(self, ca: Path, cert: Path, key: Path, user: str) -> str:
        """A kubeconfig for a node component, through the relay (the server certificate names
        ``kubernetes``, which the relay address is not: ``tls-server-name`` says so)."""
        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "dev",
                        "cluster": {
                            "server": self.api_url,
                            "certificate-authority": str(ca),
                            "tls-server-name": "kubernetes",
                        },
                    }
                ],
                "users": [
                    {
                        "name": user,
                        "user": {"client-certificate": str(cert), "client-key": str(key)},
                    }
                ],
                "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": user}}],
                "current-context": "dev",
            },
            sort_keys=False,
        )
