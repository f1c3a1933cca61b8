"""Traefik in the dev cluster: a real ingress controller for sessions reached from outside.

Why Traefik: one Go binary that watches Ingresses, terminates TLS with the Ingress's Secret
and proxies gRPC to a cleartext HTTP/2 (h2c) backend (the Service annotation
``traefik.ingress.kubernetes.io/service.serversscheme: h2c``; Traefik's docs,
reference/routing-configuration/kubernetes/ingress.md). It runs as a host process like the
other controllers, only when asked (:meth:`.cluster.DevCluster.traefik_up`), and only for the
real-node cluster: the host reaches its pods' IPs through the node's route
(:mod:`.node.host`), which Traefik needs (it sends to the endpoints, not to the Service IP).

Build: ``cmd/traefik`` of ``github.com/traefik/traefik/v3`` at :data:`TRAEFIK` (the newest
version the Go module proxy serves here), cached in
``<cache>/bin/traefik-v<version>-<digest of the patches>/traefik`` and built by
``dev-cluster build --traefik`` (``make integration`` runs it beside the real-node suite, like
Kueue's; ``traefik up`` builds it if missing, waiting on the same lock).
It cannot be built as a plain requirement: its
go.mod replaces a nested module by a directory (``./pkg/config/dynamic/ext``) that the module
zip leaves out, and three dependency sets are not served by the proxy here. So it is built in a
copy of its module source with these changes (:data:`PATCHES`), none on the paths the dev
cluster uses (Ingress provider, TLS, HTTP/2 proxying):

- ``dynamic/ext``: the extension types, empty (as in the open-source build), written here;
- ``github.com/containous/go-http-auth`` (Traefik's fork, not served): upstream
  ``github.com/abbot/go-http-auth`` v0.4.0, the BasicAuth middleware's ``CheckSecret`` (the
  fork's addition) through upstream's public ``BasicAuth.CheckAuth``, and a stale digest nonce
  answered with a fresh challenge (upstream has no ``RequireAuthStale``);
- the ACME DNS-01 providers (``go-acme/lego/v5/providers/dns``: a dozen of their SDKs are
  not served): naming one is an error in this build.

Identity: a service account ``traefik`` in :data:`NAMESPACE` holding a ClusterRole with the
rules Traefik's docs list for its Ingress provider (services, secrets, endpointslices,
ingresses and ingressclasses read; ingresses/status update) plus list/watch nodes (v3.7's
provider watches them; its log shows the refusal without), never the admin's; its
kubeconfig is a TokenRequest token (7 days, re-minted on each start).

Port (from the cluster's port base, :class:`.components.Ports`): one entry point, ``websecure``
on ``127.0.0.1:<traefik>``, TLS on every router (a cleartext client is refused), which also
answers ``/ping`` (with Traefik's default certificate). Traefik serves an Ingress's certificate
for its host once it has loaded its routes (:func:`serves_certificate`): that is how a caller
waits for a new Ingress to be routed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import ssl
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from sparkplane_devcluster import build

TRAEFIK = "3.7.13"
MODULE = "github.com/traefik/traefik/v3"
NAMESPACE = "ingress-system"
ACCOUNT = "traefik"
CLASS = "traefik"
CONTROLLER = "traefik.io/ingress-controller"
PROCESS = "traefik"
FIELD_MANAGER = "sparkplane-dev-cluster"
Progress = Callable[[str], None]

EXT_GO = """// Package ext: Traefik's dynamic configuration extensions, empty in this build.
package ext

// HTTP extends dynamic.HTTP (nothing here).
type HTTP struct{}

// Router extends dynamic.Router (nothing here).
type Router struct{}

// RouterIng extends an Ingress router's annotations (nothing here).
type RouterIng struct{}

// ToRouter is the Router of these annotations (empty).
func (RouterIng) ToRouter() Router { return Router{} }
"""
CHECK_SECRET_GO = """package auth

import (
	"net/http"

	goauth "github.com/abbot/go-http-auth"
)

// checkSecretUpstream checks password against an htpasswd secret through upstream
// go-http-auth's public BasicAuth.CheckAuth (this build has no containous fork).
func checkSecretUpstream(password, secret string) bool {
	ba := &goauth.BasicAuth{Secrets: func(string, string) string { return secret }}
	req, err := http.NewRequest(http.MethodGet, "/", nil)
	if err != nil {
		return false
	}
	req.SetBasicAuth("user", password)
	return ba.CheckAuth(req) != ""
}
"""
#: (file, text replaced, replacement): each must match exactly once, else the build fails
PATCHES = (
    ("pkg/provider/acme/provider.go", '\t"github.com/go-acme/lego/v5/providers/dns"\n', ""),
    (
        "pkg/provider/acme/provider.go",
        "provider, err = dns.NewDNSChallengeProviderByName(p.DNSChallenge.Provider)",
        'provider, err = nil, fmt.Errorf("DNS challenge provider %q: not in this build", '
        "p.DNSChallenge.Provider)",
    ),
    ("pkg/middlewares/auth/basic_auth.go", "goauth.CheckSecret,", "checkSecretUpstream,"),
    # upstream has no "stale nonce" challenge: a stale digest gets a fresh challenge instead
    (
        "pkg/middlewares/auth/digest_auth.go",
        "d.auth.RequireAuthStale(rw, req)",
        "d.auth.RequireAuth(rw, req)",
    ),
)
#: files written into the copy
NEW_FILES = {
    "pkg/config/dynamic/ext/go.mod": "module github.com/traefik/traefik/dynamic/ext\n\ngo 1.24\n",
    "pkg/config/dynamic/ext/ext.go": EXT_GO,
    "pkg/middlewares/auth/checksecret_upstream.go": CHECK_SECRET_GO,
}
UPSTREAM_AUTH = "github.com/abbot/go-http-auth"


def build_key() -> str:
    """The version and a digest of this build's changes (:data:`PATCHES`, :data:`NEW_FILES`):
    a change to either builds anew instead of reusing a binary built without it."""
    recipe = json.dumps([TRAEFIK, PATCHES, sorted(NEW_FILES.items())]).encode()
    return f"v{TRAEFIK}-{hashlib.sha256(recipe).hexdigest()[:12]}"


def binary_path(cache_dir: Path) -> Path:
    return cache_dir / "bin" / f"traefik-{build_key()}" / "traefik"


def _patch(root: Path) -> None:
    for name, old, new in PATCHES:
        path = root / name
        text = path.read_text()
        if text.count(old) != 1:
            raise RuntimeError(f"traefik v{TRAEFIK}: {name} does not contain {old!r} once")
        path.write_text(text.replace(old, new))
    for name, text in NEW_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def ensure_traefik(cache_dir: Path, progress: Progress = lambda _: None) -> Path:
    """The cached Traefik binary, built first if missing (``cmd/traefik`` only)."""
    path = binary_path(cache_dir)
    if os.access(path, os.X_OK):
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    with build.lock(cache_dir / "traefik.lock"):
        if not os.access(path, os.X_OK):
            progress(f"building Traefik v{TRAEFIK} from Go modules (once)")
            (cache_dir / "logs").mkdir(exist_ok=True)
            _build(path, cache_dir / "logs" / "build-traefik.log")
    return path


def _build(path: Path, log: Path) -> None:
    go = build.go_command()
    out = build.run([go, "mod", "download", "-json", f"{MODULE}@v{TRAEFIK}"], Path.cwd(), log)
    source = Path(json.loads(out)["Dir"])
    with tempfile.TemporaryDirectory(prefix="traefik-build-") as tmp:
        root = Path(tmp) / "src"
        shutil.copytree(source, root)
        for sub, _, files in os.walk(root):  # the module cache is read-only
            os.chmod(sub, 0o755)
            for f in files:
                os.chmod(os.path.join(sub, f), 0o644)
        _patch(root)
        edit = f"-dropreplace={UPSTREAM_AUTH}", f"-require={UPSTREAM_AUTH}@v0.4.0"
        build.run([go, "mod", "edit", *edit], root, log)
        tmp_out = path.parent.with_name(f".{path.parent.name}.tmp")
        tmp_out.mkdir(parents=True, exist_ok=True)
        ldflags = f"-s -w -X github.com/traefik/traefik/v3/pkg/version.Version={TRAEFIK}"
        cmd = [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(tmp_out / "traefik")]
        build.run([*cmd, "./cmd/traefik"], root, log)
        build._install(tmp_out, path.parent)


# -- running ----------------------------------------------------------------------------------
RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["services", "secrets"], "verbs": ["get", "list", "watch"]},
    {
        "apiGroups": ["discovery.k8s.io"],
        "resources": ["endpointslices"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["networking.k8s.io"],
        "resources": ["ingresses", "ingressclasses"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"], "verbs": ["update"]},
    # not in its docs' list, but v3.7's Ingress provider starts a Node informer (refused without)
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
]


def objects() -> list[dict[str, Any]]:
    """Traefik's namespace, service account, least-privilege ClusterRole and its binding, and
    the IngressClass it serves (the cluster's default)."""
    role = f"sparkplane-dev-{ACCOUNT}"
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": ACCOUNT, "namespace": NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": {
                "name": CLASS,
                "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
            },
            "spec": {"controller": CONTROLLER},
        },
    ]


def install(kube: Any, kubeconfig: Path) -> None:
    """Apply :func:`objects` and write Traefik's own kubeconfig (its service account's token)."""
    from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private

    for obj in objects():
        kube.apply(obj, field_manager=FIELD_MANAGER)
    minted = mint_kubeconfig(kube, ACCOUNT, NAMESPACE, duration=timedelta(days=7))
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    write_private(kubeconfig, minted.text())


def argv(binary: Path, port: int) -> list[str]:
    return [
        str(binary),
        f"--entryPoints.websecure.address=127.0.0.1:{port}",
        "--entryPoints.websecure.http.tls=true",
        "--ping=true",
        "--ping.entryPoint=websecure",
        "--providers.kubernetesingress=true",
        "--providers.kubernetesingress.ingressEndpoint.ip=127.0.0.1",
        "--global.checkNewVersion=false",
        "--global.sendAnonymousUsage=false",
        "--log.level=INFO",
    ]


def env(kubeconfig: Path) -> dict[str, str]:
    """Traefik's environment: its own kubeconfig (its Ingress provider reads ``KUBECONFIG``)."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
    out["KUBECONFIG"] = str(kubeconfig)
    return out


def serves_certificate(port: int, host: str, ca_file: Path) -> bool:
    """Whether Traefik on ``port`` answers a TLS client for ``host`` with a certificate that
    ``ca_file`` verifies (its default certificate does not: the Ingress is not loaded yet)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            return True
    except (OSError, ssl.SSLError):
        return False
