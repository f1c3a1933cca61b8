"""The cluster's word on an uploader: TokenReview, then SubjectAccessReview.

Built by ``sparkplane staging serve`` when it has cluster credentials and handed to
:class:`sparkplane.staging.auth.UploadAuth` as its :class:`~sparkplane.staging.auth.TokenReviewer`.
Goes through the gateway (``sparkplane.kube``): one TokenReview (who is this token?) and one
SubjectAccessReview (may that user, with its groups, ``create pods`` in the owner namespace?).
The staging identity needs ``create`` on both review kinds (``sparkplane rbac staging``).
API errors propagate; the server answers them with 503, never with an upload.
"""

from __future__ import annotations

from typing import Any

from sparkplane.kube import Kube
from sparkplane.staging.auth import Review, TokenReviewer

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
