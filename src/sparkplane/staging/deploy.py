"""Generate ``deploy/staging/*.yaml``: the staging server's Deployment, Service, volume and RBAC.

Owns :func:`manifests` (the objects) and :func:`render_files` (file name -> text). Run
``python -m sparkplane.staging.deploy [DIR]`` to (re)write them; a unit test asserts the
committed files equal :func:`render_files`, so they cannot drift from the code. The RBAC comes
from the shared catalogue (:func:`sparkplane.security.rbac.render` for identity ``staging``):
``get``/``list`` on pods in the application namespaces, and ``create`` on TokenReviews and
SubjectAccessReviews (a ClusterRole: reviews are cluster-scoped), nothing else. Pure except
:func:`main`.

One replica (``Recreate``): the metadata is SQLite and the bundles a local disk on one
ReadWriteOnce claim. The server listens on all of the pod's addresses (``--host 0.0.0.0``; the
default is loopback) on 10000 in plain HTTP; add ``--tls-cert/--tls-key`` (from a Secret) for
HTTPS. Uploads are checked with TokenReview and SubjectAccessReview as the pod's service
account, and the total quota (16 GiB by default) stays below the 20Gi claim.
"""

from __future__ import annotations

from typing import Any

import yaml

from sparkplane import deployfiles
from sparkplane.security.deploy import APPS_NAMESPACE, SYSTEM_NAMESPACE
from sparkplane.security.rbac import render, to_yaml
from sparkplane.security.rules import Identity
from sparkplane.version import SPARKPLANE_IMAGE

Obj = dict[str, Any]
NAME = "sparkplane-staging"
IMAGE = SPARKPLANE_IMAGE
PORT = 10000
DATA = "/var/lib/sparkplane-staging"
LABELS = {
    "app.kubernetes.io/name": NAME,
    "app.kubernetes.io/part-of": "sparkplane",
    "app.kubernetes.io/component": "staging",
}


def manifests(
    namespace: str = SYSTEM_NAMESPACE,
    *,
    image: str = IMAGE,
    storage: str = "20Gi",
    store: str = "",
    s3_secret: str = "",
    replicas: int = 2,
) -> list[Obj]:
    """The claim, Deployment and Service of the staging server (RBAC separately).

    With ``store`` (``s3://BUCKET/PREFIX``) there is no claim: bundles and records live in the
    bucket (:mod:`sparkplane.staging.s3`), ``replicas`` servers share it behind the Service
    (rolling updates), and the Secret ``s3_secret`` gives them the AWS variables
    (``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``;
    empty: the pod's own identity, e.g. IRSA)."""
    meta = {"name": NAME, "namespace": namespace, "labels": dict(LABELS)}
    selector = {"app.kubernetes.io/name": NAME}
    probe = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10}
    container = {
        "name": "staging",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": [  # the image's entrypoint is `tini -- sparkplane`
            *("staging", "serve", "--in-cluster", "--host", "0.0.0.0", "--port", str(PORT)),
            *(
                ("--store", store)
                if store
                else ("--storage-dir", f"{DATA}/bundles", "--db-path", f"{DATA}/metadata.sqlite3")
            ),
        ],
        "ports": [{"name": "http", "containerPort": PORT, "protocol": "TCP"}],
        "readinessProbe": probe,
        "livenessProbe": {**probe, "failureThreshold": 6},
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "256Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "data", "mountPath": DATA}],
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {**meta, "name": f"{NAME}-data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}},
    }
    if store:
        container.pop("volumeMounts")
        if s3_secret:
            container["envFrom"] = [{"secretRef": {"name": s3_secret}}]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": replicas if store else 1,
            "strategy": {"type": "RollingUpdate"} if store else {"type": "Recreate"},
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": dict(LABELS)},
                "spec": {
                    "serviceAccountName": NAME,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 10001,
                        "fsGroup": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": []
                    if store
                    else [{"name": "data", "persistentVolumeClaim": {"claimName": f"{NAME}-data"}}],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": PORT, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    return [deployment, service] if store else [claim, deployment, service]


def render_files(
    namespace: str = SYSTEM_NAMESPACE, app_namespaces: tuple[str, ...] = (APPS_NAMESPACE,)
) -> dict[str, str]:
    """``namespaces.yaml``, ``rbac.yaml`` and ``staging.yaml`` with their headers.

    ``namespaces.yaml`` creates the server's namespace and the application namespaces, so
    ``kubectl apply -f deploy/staging/`` works on an empty cluster (kubectl applies a
    directory's files in name order: the Namespaces first)."""
    head = "# Generated by `python -m sparkplane.staging.deploy`; do not edit.\n"
    spaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in dict.fromkeys((namespace, *app_namespaces))
    ]
    rbac = render(Identity.STAGING, namespace, namespaces=app_namespaces)
    targets = " ".join(f"--target-namespace {ns}" for ns in app_namespaces)
    rbac_head = f"Same as: sparkplane rbac staging -n {namespace} {targets}"
    docs = [yaml.safe_dump(obj, sort_keys=False) for obj in manifests(namespace)]
    return {
        "namespaces.yaml": head + yaml.safe_dump_all(spaces, sort_keys=False),
        "rbac.yaml": head + to_yaml(rbac, header=rbac_head),
        "staging.yaml": head + "---\n".join(docs),
    }


def main(argv: list[str] | None = None) -> int:
    """Write the files into ``argv[0]`` (default ``deploy/staging``)."""
    return deployfiles.main(render_files, "deploy/staging", argv)


if __name__ == "__main__":
    raise SystemExit(main())
