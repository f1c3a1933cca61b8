"""The staging server's questions to Kubernetes: do a bundle's owner pods exist, and who is
an uploader?

Built by ``sparkplane staging serve`` when it has cluster credentials and handed to the server
as its :data:`~sparkplane.staging.cleanup.OwnerChecker` and
:class:`~sparkplane.staging.auth.TokenReviewer`; the server, the clean-up rules and the upload
rules never import Kubernetes themselves. Both go through the gateway (``sparkplane.kube``):

* the owner check, one pod list with a label selector and ``limit=1`` per distinct owner and
  round (``list`` on pods in the owners' namespaces);
* the uploader review, one TokenReview (who is this token?) and one SubjectAccessReview (may
  that user, with its groups, ``create pods`` in the owner namespace?); ``create`` on both
  review kinds, cluster-wide.

:func:`kube_services` builds both over one gateway from cluster credentials. Both are in
``sparkplane rbac staging``. Errors propagate: the clean-up keeps the bundle and
asks again next round; an upload is answered 503, never let through.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparkplane.kube import Kube, connect
from sparkplane.staging.auth import Review, TokenReviewer
from sparkplane.staging.cleanup import OwnerChecker


def label_selector(labels: Mapping[str, str]) -> str:
    """``k1=v1,k2=v2`` (sorted) for a pod list; labels were validated on upload."""
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def pod_owner_checker(kube: Kube) -> OwnerChecker:
    """An owner checker asking the API server for pods with all of a bundle's labels."""

    def owner_exists(namespace: str, labels: dict[str, str]) -> bool:
        if not labels:
            return True  # never delete on an empty selector (it would match every pod)
        page = kube.list_page(
            "v1", "Pod", namespace, label_selector=label_selector(labels), limit=1
        )
        return bool(page.get("items"))

    return owner_exists


UPLOAD_VERB = "create"
UPLOAD_RESOURCE = "pods"
"""Who may create pods in a namespace may run code there; staging files for it is no more."""


def _access_review(user: dict[str, Any], namespace: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "user": user.get("username", ""),
        "groups": list(user.get("groups") or []),
        "resourceAttributes": {
            "namespace": namespace,
            "verb": UPLOAD_VERB,
            "resource": UPLOAD_RESOURCE,
        },
    }
    if user.get("uid"):
        spec["uid"] = user["uid"]
    if user.get("extra"):
        spec["extra"] = user["extra"]
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def kube_token_reviewer(kube: Kube) -> TokenReviewer:
    """A reviewer asking the API server who a token is and whether it may create pods."""

    def review(token: str, namespace: str) -> Review:
        answer = kube.create(
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            }
        )
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            return Review(False, reason=str(status.get("error") or "token not authenticated"))
        user = status.get("user") or {}
        decision = kube.create(_access_review(user, namespace)).get("status") or {}
        return Review(
            True,
            user=str(user.get("username", "")),
            allowed=bool(decision.get("allowed")) and not decision.get("denied"),
            reason=str(decision.get("reason") or ""),
        )

    return review


def kube_services(
    kubeconfig: Path | None, context: str | None, *, in_cluster: bool = False
) -> tuple[OwnerChecker, TokenReviewer]:
    """The owner checker and the uploader token reviewer over one gateway."""
    kube = Kube(connect(kubeconfig=kubeconfig, context=context, in_cluster=in_cluster))
    return pod_owner_checker(kube), kube_token_reviewer(kube)


def kube_checker(
    kubeconfig: Path | None, context: str | None, *, in_cluster: bool = False
) -> OwnerChecker:
    """A pod-list owner checker over a gateway built from cluster credentials."""
    return kube_services(kubeconfig, context, in_cluster=in_cluster)[0]
