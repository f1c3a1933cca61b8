"""The owner description of a staged bundle and its wire form (HTTP headers).

A bundle lives as long as some Kubernetes object of ``owner_type`` in ``namespace`` matches
every label in ``labels`` (the seed's ``StagedResourcesOwner``). The client sends it on upload as
headers, the server validates it before reading the body, the metadata store persists it.
Pure: no I/O.

Wire form (upload request headers):
  ``X-Sparkplane-Owner-Namespace: <namespace>``
  ``X-Sparkplane-Owner-Labels: <JSON object of label key -> value>``  (at least one label)
  ``X-Sparkplane-Owner-Type: Pod``  (optional, the only type today)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from sparkplane.errors import Problem, ValidationError

NAMESPACE_HEADER = "X-Sparkplane-Owner-Namespace"
LABELS_HEADER = "X-Sparkplane-Owner-Labels"
TYPE_HEADER = "X-Sparkplane-Owner-Type"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class OwnerType(StrEnum):
    """Kinds of Kubernetes object that can own a bundle."""

    POD = "Pod"
    """Pods matching the labels (the driver and its executors) keep the bundle alive."""


@dataclass(frozen=True)
class ResourceOwner:
    """Which Kubernetes objects keep a staged bundle alive."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    owner_type: OwnerType = OwnerType.POD

    def to_headers(self) -> dict[str, str]:
        """The upload headers that carry this owner."""
        return {
            NAMESPACE_HEADER: self.namespace,
            LABELS_HEADER: json.dumps(dict(self.labels), sort_keys=True),
            TYPE_HEADER: self.owner_type.value,
        }


def _label_key_problems(key: str) -> list[str]:
    prefix, _, name = key.rpartition("/")
    problems = []
    if prefix and (len(prefix) > 253 or not _PREFIX.match(prefix)):
        problems.append(f"label key prefix {prefix!r} is not a DNS subdomain")
    if not name or len(name) > 63 or not _NAME.match(name):
        problems.append(f"label key name {name!r} must be 1-63 alphanumerics, '-', '_' or '.'")
    return problems


def validate_owner(namespace: str, labels: object, owner_type: str) -> ResourceOwner:
    """Check an owner description; raise :class:`ValidationError` listing every problem."""
    problems: list[Problem] = []
    if not namespace or len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        problems.append(
            Problem("owner.namespace", f"{namespace!r} is not a valid namespace", "DNS-1123 label")
        )
    clean: dict[str, str] = {}
    if not isinstance(labels, dict) or not labels:
        problems.append(
            Problem(
                "owner.labels",
                "must be a non-empty object of label key -> value",
                "an empty selector would match every pod and the bundle would never be cleaned up",
            )
        )
    else:
        for key, value in labels.items():
            path = f"owner.labels.{key}"
            if not isinstance(key, str) or not isinstance(value, str):
                problems.append(Problem(path, "keys and values must be strings"))
                continue
            problems.extend(Problem(path, msg) for msg in _label_key_problems(key))
            if value and (len(value) > 63 or not _NAME.match(value)):
                problems.append(Problem(path, f"label value {value!r} is not valid"))
            clean[key] = value
    try:
        kind = OwnerType(owner_type)
    except ValueError:
        allowed = ", ".join(t.value for t in OwnerType)
        problems.append(Problem("owner.type", f"unknown owner type {owner_type!r}", allowed))
        kind = OwnerType.POD
    if problems:
        raise ValidationError(problems, subject="resource owner")
    return ResourceOwner(namespace=namespace, labels=clean, owner_type=kind)


def owner_from_headers(headers: Mapping[str, str]) -> ResourceOwner:
    """Parse and validate the owner headers of an upload request."""
    raw_labels = headers.get(LABELS_HEADER, "")
    labels: object
    try:
        labels = json.loads(raw_labels) if raw_labels else {}
    except json.JSONDecodeError as exc:
        raise ValidationError(
            [Problem("owner.labels", f"{LABELS_HEADER} is not valid JSON: {exc.msg}")],
            subject="resource owner",
        ) from exc
    return validate_owner(
        headers.get(NAMESPACE_HEADER, ""), labels, headers.get(TYPE_HEADER, OwnerType.POD.value)
    )
