"""Kueue in the dev cluster: its controller manager as a host process, on demand.

Build: ``cmd/kueue`` of ``sigs.k8s.io/kueue`` at :data:`KUEUE` (the newest version the Go module
proxy serves here, v0.17.0; its go.mod has no ``replace`` lines, so a plain requirement builds
it), cached in ``<cache>/bin/kueue-v<version>/kueue`` like the control plane
(:func:`.build.build_module`, a file lock, a temp dir renamed into place) and built by
``dev-cluster build``. Only the manager is built, never kueuectl or the visibility UI.

Run (only when asked: ``dev-cluster up --kueue`` or ``dev-cluster kueue up``, so runs that do
not use queues never pay for it): the CRDs come from the module's own ``config/components/crd``
(its kustomization's resources with its conversion-webhook patches), read at run time from the
Go module cache (``go mod download -json``; nothing fetched is committed), applied server-side.
The manager runs with the admin kubeconfig (it is cluster infrastructure, like KWOK), no leader
election, metrics off, the visibility API off (it needs an APIService and a port of its own),
and the ``batch/job`` (Kueue refuses an empty list; its Job webhook is not registered, so
Jobs are never held by Kueue here) and ``pod`` integrations (natively submitted Spark apps
naming a queue: docs/queues.md).

Webhooks: **served**, not disabled, because Kueue's own webhooks default and validate what
its clients write (a ClusterQueue's or Workload's defaults, immutability rules) and sparkplane
writes Workloads, so they must see what a real installation says. They are served the way a
host process can be reached: every webhook configuration and CRD conversion webhook points at
``https://127.0.0.1:<port>`` (``clientConfig.url``, the webhook port of :class:`.components.Ports`)
instead of a Service, which the API server could not route to without kube-proxy. Kueue's own
certificate management (cert-controller) keeps running and injects the CA bundle, but the
serving certificate it would mint names only ``kueue-webhook-service.kueue-system.svc``; so
``up`` first writes the Secret it manages with a certificate of a throw-away CA that names that
service *and* ``127.0.0.1`` (:func:`.pki.webhook_ca_and_serving`): cert-controller finds it
valid, keeps it, writes it to the cert directory and injects its CA. The webhooks of Kueue's
own API (``kueue.x-k8s.io``) are registered, and its Pod integration's with an
``objectSelector`` matching only pods labelled ``kueue.x-k8s.io/queue-name`` (and not in
``kube-system`` or ``kueue-system``); the other integrations' (Jobs, ...) are not, so a stopped
Kueue never blocks the creation of a Job or of a pod that names no queue.

Queues: :func:`queues` sets up one ResourceFlavor, one ClusterQueue with a cpu/memory quota and a
LocalQueue in each given namespace (``dev-cluster kueue queues``), server-side applied.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sparkplane.errors import DevClusterError
from sparkplane.vocab import QUEUE_NAME_LABEL
from sparkplane_devcluster import build, process
from sparkplane_devcluster.pki import webhook_ca_and_serving

KUEUE = "0.17.0"
MODULE = "sigs.k8s.io/kueue"
GROUP = "kueue.x-k8s.io"
API = f"{GROUP}/v1beta2"
NAMESPACE = "kueue-system"
SERVICE = "kueue-webhook-service"
SECRET = "kueue-webhook-server-cert"
CA_NAME = "kueue-ca"  # cert-controller checks the CA for this name (kueue's pkg/util/cert)
WEBHOOK_PREFIX = (
    "kueue-"  # the configurations cert-controller injects: kueue-{validating,mutating}-…
)
FIELD_MANAGER = "sparkplane-dev-cluster"
PROCESS = "kueue"
Progress = Callable[[str], None]


def binary_path(cache_dir: Path) -> Path:
    return cache_dir / "bin" / f"kueue-v{KUEUE}" / "kueue"


def ensure_kueue(cache_dir: Path, progress: Progress = lambda _: None) -> Path:
    """The cached Kueue manager, built first if missing (``cmd/kueue`` only)."""
    path = binary_path(cache_dir)
    if os.access(path, os.X_OK):
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    with build.lock(cache_dir / "kueue.lock"):
        if not os.access(path, os.X_OK):
            progress(f"building Kueue v{KUEUE} from Go modules (once)")
            logs = cache_dir / "logs"
            logs.mkdir(exist_ok=True)
            build.build_module(
                build.go_command(),
                f"{MODULE}@v{KUEUE}",
                [f"{MODULE}/cmd/kueue"],
                path.parent,
                logs / "build-kueue.log",
                binary="kueue",
                ldflags=(f"-X {MODULE}/pkg/version.GitVersion=v{KUEUE}",),
            )
    return path


def module_dir(log: Path) -> Path:
    """Kueue's module source in the Go module cache (downloaded if absent)."""
    go = build.go_command()
    out = build.run([go, "mod", "download", "-json", f"{MODULE}@v{KUEUE}"], Path(os.getcwd()), log)
    return Path(json.loads(out)["Dir"])


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crds(source: Path, url: str) -> list[dict[str, Any]]:
    """Kueue's CRDs as its kustomization lists them, with its conversion-webhook patches
    pointed at ``url`` (cert-controller injects their CA bundle)."""
    root = source / "config" / "components" / "crd"
    kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
    by_name = {
        d["metadata"]["name"]: d for r in kustomization["resources"] for d in _load(root / r)
    }
    for patch in kustomization.get("patches") or []:
        for doc in _load(root / patch["path"]):
            conversion = doc["spec"]["conversion"]
            conversion["webhook"]["clientConfig"] = {"url": f"{url}/convert"}
            by_name[doc["metadata"]["name"]]["spec"]["conversion"] = conversion
    return list(by_name.values())


#: the Pod integration's webhooks (Kueue's config/components/webhook/manifests.yaml)
POD_WEBHOOKS = ("mpod.kb.io", "vpod.kb.io")
#: the pods they see: only those naming a queue, outside Kueue's and the system's namespaces
#: (as Kueue's own kustomization excludes them), so a pod without the label is never sent to
#: Kueue and never blocked, even while Kueue is down
POD_OBJECT_SELECTOR = {"matchExpressions": [{"key": QUEUE_NAME_LABEL, "operator": "Exists"}]}
POD_NAMESPACE_SELECTOR = {
    "matchExpressions": [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", NAMESPACE],
        }
    ]
}


def _registered(hook: dict[str, Any]) -> bool:
    own = all(g == GROUP for rule in hook.get("rules") or [] for g in rule["apiGroups"])
    return own or hook.get("name") in POD_WEBHOOKS


def webhook_configurations(source: Path, url: str) -> list[dict[str, Any]]:
    """Kueue's webhook configurations, each pointing at ``url`` + its path, named as Kueue's
    certificate manager expects: the webhooks of its own API group, and its Pod integration's
    limited to pods labelled with a queue (:data:`POD_OBJECT_SELECTOR`)."""
    out = []
    for doc in _load(source / "config" / "components" / "webhook" / "manifests.yaml"):
        hooks = [h for h in doc.get("webhooks") or [] if _registered(h)]
        for hook in hooks:
            hook["clientConfig"] = {"url": url + hook["clientConfig"]["service"]["path"]}
            if hook["name"] in POD_WEBHOOKS:
                hook["objectSelector"] = POD_OBJECT_SELECTOR
                hook["namespaceSelector"] = POD_NAMESPACE_SELECTOR
        name = WEBHOOK_PREFIX + doc["metadata"]["name"]
        out.append({**doc, "metadata": {"name": name}, "webhooks": hooks})
    return out


def config(webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """The manager's Configuration (see the module docstring for each choice)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {
            "enable": True,
            "webhookServiceName": SERVICE,
            "webhookSecretName": SECRET,
        },
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": ["batch/job", "pod"]},
        "featureGates": {"VisibilityOnDemand": False},
    }


def argv(binary: Path, config_file: Path, kubeconfig: Path) -> list[str]:
    return [str(binary), f"--config={config_file}", f"--kubeconfig={kubeconfig}"]


def cert_secret() -> dict[str, Any]:
    """The Secret cert-controller manages, pre-filled with a certificate valid for the service
    name it checks and for 127.0.0.1, which the API server dials."""
    data = webhook_ca_and_serving(CA_NAME, (f"{SERVICE}.{NAMESPACE}.svc",), ("127.0.0.1",))
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }


def _established(kube: Any, name: str) -> bool:
    crd = kube.get_or_none("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    conditions = (crd or {}).get("status", {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _secret_serves_loopback(kube: Any) -> bool:
    secret = kube.get_or_none("v1", "Secret", SECRET, NAMESPACE)
    if not secret or "tls.crt" not in (secret.get("data") or {}):
        return False
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]


def install(kube: Any, source: Path, url: str, cert_dir: Path, timeout: float) -> None:
    """Namespace, the pre-filled certificate Secret, CRDs and webhook configurations
    (idempotent: a Secret that already names 127.0.0.1 is kept, as cert-controller keeps it);
    the Secret's files written to ``cert_dir``, as the kubelet mounts it into Kueue's pod
    (cert-controller only updates the Secret and waits for the files to appear)."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    kube.apply(ns, field_manager=FIELD_MANAGER)
    if not _secret_serves_loopback(kube):
        if kube.get_or_none("v1", "Secret", SECRET, NAMESPACE) is not None:
            kube.delete("v1", "Secret", SECRET, NAMESPACE)
        kube.create(cert_secret())
    secret = kube.get("v1", "Secret", SECRET, NAMESPACE)
    cert_dir.mkdir(parents=True, exist_ok=True)
    for key, value in secret["data"].items():
        path = cert_dir / key
        path.write_bytes(base64.b64decode(value))
        path.chmod(0o600)
    for crd in crds(source, url):
        kube.apply(crd, field_manager=FIELD_MANAGER)
    for crd in crds(source, url):
        name = crd["metadata"]["name"]
        process.wait_until(
            f"CRD {name} established",
            lambda n=name: _established(kube, n),  # type: ignore[misc]
            timeout=timeout,
        )
    for hooks in webhook_configurations(source, url):
        kube.apply(hooks, field_manager=FIELD_MANAGER)


@dataclass(frozen=True)
class Quota:
    """The dev cluster's queues: one flavor, one ClusterQueue, a LocalQueue per namespace."""

    cluster_queue: str = "spark"
    local_queue: str = "spark"
    flavor: str = "default-flavor"
    cpu: str = "8"
    memory: str = "32Gi"
    namespaces: tuple[str, ...] = ("default", "spark-jobs")


QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+"
    r"(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""A Kubernetes quantity, as the ClusterQueue CRD's schema checks ``nominalQuota``."""


def check_quota(quota: Quota) -> None:
    """Refuse a quota the API server would refuse, before anything is applied."""
    for option, value in (("--cpu", quota.cpu), ("--memory", quota.memory)):
        if not QUANTITY.match(value):
            raise DevClusterError(
                f"{option} {value!r} is not a Kubernetes quantity: write e.g. "
                + ("4 or 500m" if option == "--cpu" else "16Gi or 512Mi")
            )


def queue_objects(quota: Quota) -> list[dict[str, Any]]:
    """The ResourceFlavor, ClusterQueue (its cpu/memory quota, on the flavor; same-priority
    preemption within it off, reclaim off: the simplest FIFO-by-quota queue) and LocalQueues."""
    flavor = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": quota.flavor}}
    resources = [
        {"name": "cpu", "nominalQuota": quota.cpu},
        {"name": "memory", "nominalQuota": quota.memory},
    ]
    cluster_queue = {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": {"name": quota.cluster_queue},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": quota.flavor, "resources": resources}],
                }
            ],
        },
    }
    locals_ = [
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            "metadata": {"name": quota.local_queue, "namespace": ns},
            "spec": {"clusterQueue": quota.cluster_queue},
        }
        for ns in quota.namespaces
    ]
    return [flavor, cluster_queue, *locals_]


def apply_queues(kube: Any, quota: Quota, timeout: float) -> list[dict[str, Any]]:
    """Apply :func:`queue_objects` (through Kueue's webhooks) and wait until the ClusterQueue
    is Active (its flavor known to Kueue's cache)."""
    objs = queue_objects(quota)
    for obj in objs:
        kube.apply(obj, field_manager=FIELD_MANAGER)

    def active() -> bool:
        cq = kube.get(API, "ClusterQueue", quota.cluster_queue)
        conds = cq.get("status", {}).get("conditions") or []
        return any(c["type"] == "Active" and c["status"] == "True" for c in conds)

    process.wait_until(f"ClusterQueue {quota.cluster_queue} active", active, timeout=timeout)
    return objs


def wait_ready(health_port: int, pid: int, binary: str, log: Path, timeout: float) -> None:
    """Until Kueue's /readyz answers (certificates in place, webhook server started)."""
    process.wait_until(
        "kueue",
        lambda: process.http_ok(f"http://127.0.0.1:{health_port}/readyz"),
        timeout=timeout,
        pid=pid,
        binary=binary,
        log=log,
    )


def wait_webhooks(kube: Any, timeout: float) -> None:
    """Until the API server reaches Kueue's webhooks (a dry-run ResourceFlavor is admitted):
    readiness of the manager does not say the CA bundle is injected yet."""
    probe = {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "readiness-probe"}}
    last: list[str] = []

    def admitted() -> bool:
        try:
            kube.create(probe, dry_run=True)
        except Exception as exc:  # the API server's webhook error, until the CA is in place
            last[:] = [str(exc)]
            return False
        return True

    try:
        process.wait_until("Kueue's webhooks", admitted, timeout=timeout)
    except DevClusterError as exc:
        raise DevClusterError(f"{exc}; last error: {last[0] if last else 'none'}") from None


def names(objs: Iterable[dict[str, Any]]) -> list[str]:
    """``Kind/name`` (``ns/``) of each object, for the CLI's output."""
    out = []
    for o in objs:
        ns = o["metadata"].get("namespace")
        out.append(f"{o['kind']}/{(ns + '/') if ns else ''}{o['metadata']['name']}")
    return out
