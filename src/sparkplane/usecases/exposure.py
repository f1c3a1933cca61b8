"""A session reached from outside the cluster: an Ingress to its Spark Connect port, with TLS.

``session create --expose ingress --host HOST`` adds three objects to the session's submission,
each owned by the driver pod like its token Secret (so they go with the session):

- a Service ``<name>-connect`` selecting the driver, its gRPC port named ``spark-connect`` with
  ``appProtocol: kubernetes.io/h2c`` (the Kubernetes-standard word for cleartext HTTP/2) and
  Traefik's ``service.serversscheme: h2c`` annotation (Traefik reads only that);
- an Ingress ``<name>-connect`` for ``HOST`` to that port, of the IngressClass given (else the
  cluster's default class), TLS on with ``spec.tls`` (ingress-nginx also needs its
  ``backend-protocol: GRPC`` annotation, which is set too; other controllers ignore it);
- unless ``--tls-secret`` names an existing ``kubernetes.io/tls`` Secret, a Secret
  ``<name>-connect-tls`` with a server certificate for ``HOST`` signed by a throw-away CA
  (:mod:`sparkplane.security.selfsigned`), whose certificate the creator keeps next to the
  token (the client trusts it; the CA's key is never stored).

TLS ends at the ingress controller (the endpoint that leaves the cluster); from there to the
driver is cleartext HTTP/2 inside the cluster network. Spark's own token check stays on: the
Ingress only forwards, and the server refuses a call without the token (UNAUTHENTICATED). The
client's URL is ``sc://HOST:PORT/;use_ssl=true;token=...`` (``PORT``: where the controller's TLS
entry point listens, 443 by default).

Checked before anything is created (one message per wrong field, exit 2): the host (a DNS name,
no port), the Ingress API served, the IngressClass (the one named, else a default one, must
exist), and a given TLS Secret (when this identity may read Secrets; the shipped client role
may not, and then the controller reports a missing Secret on its side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkplane.errors import ForbiddenError, Problem, ValidationError
from sparkplane.kube import Kube
from sparkplane.security.selfsigned import server_cert
from sparkplane.spec.connect import CONNECT_PORT
from sparkplane.vocab import SESSION_LABEL, SESSION_OWNER_KEY, is_dns1123_subdomain

Obj = dict[str, Any]

INGRESS = "ingress"
EXPOSE_KINDS = (INGRESS,)
INGRESS_API = "networking.k8s.io/v1"
DEFAULT_CLASS_KEY = "ingressclass.kubernetes.io/is-default-class"
PORT_NAME = "spark-connect"
H2C = "kubernetes.io/h2c"
#: per controller, how it learns the backend speaks gRPC (HTTP/2 in clear text)
SERVICE_ANNOTATIONS = {"traefik.ingress.kubernetes.io/service.serversscheme": "h2c"}
INGRESS_ANNOTATIONS = {"nginx.ingress.kubernetes.io/backend-protocol": "GRPC"}
CA_KEY = "ca.crt"


@dataclass(frozen=True)
class Exposure:
    """Where a session is reached from outside: ``host``, the controller's TLS ``port``, the
    IngressClass and the TLS Secret (None: sparkplane makes one)."""

    host: str
    port: int
    ingress_class: str
    tls_secret: str | None

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


def problems(expose: str | None, host: str | None, port: int) -> list[Problem]:
    """The exposure options' problems that need no cluster (pure)."""
    if expose is None:
        return [Problem("host", "given without --expose", "add --expose ingress")] if host else []
    if expose not in EXPOSE_KINDS:
        return [Problem("expose", f"{expose!r} is not one of {', '.join(EXPOSE_KINDS)}", "")]
    found = []
    if not host:
        found.append(Problem("host", "required with --expose ingress", "e.g. spark.example.com"))
    elif not is_dns1123_subdomain(host) or host.replace(".", "").isdigit():
        found.append(
            Problem(
                "host", f"{host!r} is not a DNS name (no port, no IP)", "e.g. spark.example.com"
            )
        )
    if not 0 < port < 65536:
        found.append(Problem("ingress_port", f"{port} is not a port", "e.g. 443"))
    return found


def _class_of(kube: Kube, wanted: str | None) -> tuple[str | None, list[Problem]]:
    """The IngressClass to use: ``wanted`` if it exists, else the cluster's default one."""
    classes = kube.list(INGRESS_API, "IngressClass", None)
    names = sorted(c["metadata"]["name"] for c in classes)
    served = f"served: {', '.join(names)}" if names else "the cluster has no IngressClass"
    if wanted:
        if wanted in names:
            return wanted, []
        return None, [Problem("ingress_class", f"no IngressClass {wanted!r} ({served})", "")]
    defaults = [
        c["metadata"]["name"]
        for c in classes
        if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_KEY) == "true"
    ]
    if len(defaults) == 1:
        return defaults[0], []
    why = "no default IngressClass" if not defaults else "several default IngressClasses"
    return None, [Problem("ingress_class", f"{why} ({served})", "name one: --ingress-class")]


def resolve(
    kube: Kube,
    namespace: str,
    *,
    host: str,
    port: int,
    ingress_class: str | None,
    tls_secret: str | None,
) -> Exposure:
    """The exposure checked against the cluster (ValidationError naming each wrong field)."""
    if not kube.serves(INGRESS_API, "Ingress"):
        raise ValidationError(
            [Problem("expose", f"the cluster serves no {INGRESS_API} Ingress", "")],
            subject="session options",
        )
    name, found = _class_of(kube, ingress_class)
    if tls_secret:
        try:
            if kube.get_or_none("v1", "Secret", tls_secret, namespace) is None:
                found.append(
                    Problem("tls_secret", f"no Secret {tls_secret} in {namespace}", "create it")
                )
        except ForbiddenError:
            pass  # the client role reads no Secret: the controller reports it if missing
    if found or name is None:
        raise ValidationError(found, subject="session options")
    return Exposure(host, port, name, tls_secret)


def connect_service(name: str, namespace: str) -> Obj:
    """The Service in front of session ``name``'s gRPC port (h2c)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{name}-connect",
            "namespace": namespace,
            "labels": {SESSION_LABEL: name},
            "annotations": dict(SERVICE_ANNOTATIONS),
        },
        "spec": {
            "selector": {SESSION_LABEL: name},  # the driver alone carries it
            "ports": [
                {
                    "name": PORT_NAME,
                    "port": CONNECT_PORT,
                    "targetPort": CONNECT_PORT,
                    "appProtocol": H2C,
                }
            ],
        },
    }


def ingress(name: str, namespace: str, exposure: Exposure, secret: str) -> Obj:
    """The Ingress of session ``name`` (TLS with ``secret``)."""
    return {
        "apiVersion": INGRESS_API,
        "kind": "Ingress",
        "metadata": {
            "name": f"{name}-connect",
            "namespace": namespace,
            "labels": {SESSION_LABEL: name},
            "annotations": dict(INGRESS_ANNOTATIONS),
        },
        "spec": {
            "ingressClassName": exposure.ingress_class,
            "tls": [{"hosts": [exposure.host], "secretName": secret}],
            "rules": [
                {
                    "host": exposure.host,
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {
                                    "service": {
                                        "name": f"{name}-connect",
                                        "port": {"name": PORT_NAME},
                                    }
                                },
                            }
                        ]
                    },
                }
            ],
        },
    }


def tls_secret(name: str, namespace: str, host: str, owner: str) -> tuple[Obj, str]:
    """A new TLS Secret for ``host`` and the PEM of the CA that signed it."""
    made = server_cert(host)
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{name}-connect-tls",
            "namespace": namespace,
            "labels": {SESSION_LABEL: name},
            "annotations": {SESSION_OWNER_KEY: owner},
        },
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": made.cert, "tls.key": made.key, CA_KEY: made.ca},
    }
    return secret, made.ca


def objects(name: str, namespace: str, exposure: Exposure, owner: str) -> tuple[list[Obj], str]:
    """The objects exposing session ``name`` (owned by its driver once submitted) and the CA
    certificate its clients trust ("" when the TLS Secret was given)."""
    made: list[Obj] = [connect_service(name, namespace)]
    ca = ""
    secret = exposure.tls_secret
    if secret is None:
        body, ca = tls_secret(name, namespace, exposure.host, owner)
        made.append(body)
        secret = body["metadata"]["name"]
    made.append(ingress(name, namespace, exposure, secret))
    return made, ca


def url(endpoint: str, token: str | None) -> str:
    """The ``sc://`` URL of an exposed session (TLS; with its token when known)."""
    base = f"sc://{endpoint}/;use_ssl=true"
    return f"{base};token={token}" if token else base
