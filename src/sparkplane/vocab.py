"""The words sparkplane shares with Kubernetes and Spark, each declared once.

Label and annotation keys, API groups, versions and kinds, container names, pod phases, the
API's time format, the name rules (DNS labels, label values) and owner references. Every layer
may import this module, from the pure model to the CLI; it imports nothing of sparkplane and does
no I/O, so a pure module never needs a private copy of a word the gateway also uses.

Why one module: a word written twice drifts (``"spark-role"`` was a literal in 21 places, RFC
3339 parsing was written three times), and a reader looking for "what does this label mean"
finds it here with its source.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# --- API groups, versions and kinds ---------------------------------------------------------

#: Apache's Spark Kubernetes Operator (SparkApplication, SparkCluster).
APACHE_GROUP = "spark.apache.org"
APACHE_VERSION = "v1"
APACHE_API_VERSION = f"{APACHE_GROUP}/{APACHE_VERSION}"
#: Kubeflow's Spark operator (v1beta2 SparkApplication, ScheduledSparkApplication, SparkConnect).
KUBEFLOW_GROUP = "sparkoperator.k8s.io"
KUBEFLOW_VERSION = "v1beta2"
KUBEFLOW_API_VERSION = f"{KUBEFLOW_GROUP}/{KUBEFLOW_VERSION}"
#: Kubeflow's SparkConnect (a Spark Connect server) is served under v1alpha1.
KUBEFLOW_CONNECT_VERSION = "v1alpha1"
KUBEFLOW_CONNECT_API_VERSION = f"{KUBEFLOW_GROUP}/{KUBEFLOW_CONNECT_VERSION}"
#: sparkplane's own group (its ScheduledSparkApplication for Apache's API, its label keys).
SPARKPLANE_GROUP = "sparkplane.io"

#: Kueue (quotas and queues): its Workload reserves an app's pods before they exist.
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_API_VERSION = f"{KUEUE_GROUP}/v1beta2"
WORKLOAD = "Workload"
RESOURCE_FLAVOR = "ResourceFlavor"  # Kueue's, cluster-scoped: nodeLabels/tolerations for pods
#: Label naming the LocalQueue (of the app's namespace) an app waits in.
QUEUE_NAME_LABEL = f"{KUEUE_GROUP}/queue-name"
LOCAL_QUEUE = "LocalQueue"
#: Label naming the WorkloadPriorityClass (Kueue's, cluster-scoped) of an app's Workload; else the
#: driver pod's ``priorityClassName`` names a PriorityClass (scheduling.k8s.io), else the
#: cluster's globalDefault one (kueue v0.17.0 jobframework ``ExtractPriority``).
PRIORITY_CLASS_LABEL = f"{KUEUE_GROUP}/priority-class"
WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
SCHEDULING_GROUP = "scheduling.k8s.io"
SCHEDULING_API_VERSION = f"{SCHEDULING_GROUP}/v1"
PRIORITY_CLASS = "PriorityClass"
#: Kueue's Pod integration: the scheduling gate it holds a queued pod with until admitted, the
#: label marking a pod it manages, and the annotation that makes its pod webhook gate a pod
#: whatever owns it (kueue v0.17.0 pkg/controller/jobs/pod/constants, pod_webhook.go).
KUEUE_ADMISSION_GATE = f"{KUEUE_GROUP}/admission"
KUEUE_MANAGED_LABEL = f"{KUEUE_GROUP}/managed"
KUEUE_SUSPENDING_PARENT = f"{KUEUE_GROUP}/pod-suspending-parent"
#: The scheduling gate an operator-run queued app's executors are created with; the operator
#: removes it from as many as Kueue admitted, so an app that asks for more at run time gets no
#: more than its quota (sparkplane's; operator/core/workload.py).
QUOTA_GATE = "sparkplane.io/kueue-quota"
#: The annotation the operator puts on each executor it releases from :data:`QUOTA_GATE`: past
#: the admission, an executor without it (its gate removed by someone else) is removed first.
QUOTA_RELEASED_ANNOTATION = "sparkplane.io/kueue-quota-released"

SPARK_APPLICATION = "SparkApplication"
SPARK_CLUSTER = "SparkCluster"
SCHEDULED_SPARK_APPLICATION = "ScheduledSparkApplication"
SPARK_CONNECT = "SparkConnect"
#: The ResourceQuota entry (``spec.hard``) that caps a namespace's Spark Connect sessions: the API
#: server counts SparkConnect objects against it; sparkplane counts native sessions against it.
SESSION_QUOTA_KEY = f"count/sparkconnects.{KUBEFLOW_GROUP}"

# --- Spark's labels and containers (spark-submit writes these; reference §3.1) --------------

#: The application id (``spark-<32 hex>`` natively, ``<cr>-<attempt>`` under the operator).
APP_SELECTOR_LABEL = "spark-app-selector"
#: ``driver`` or ``executor``.
ROLE_LABEL = "spark-role"
DRIVER_ROLE = "driver"
EXECUTOR_ROLE = "executor"
#: An executor's ID (1, 2, ... in the order its driver asked for it).
EXEC_ID_LABEL = "spark-exec-id"
DRIVER_SELECTOR = f"{ROLE_LABEL}={DRIVER_ROLE}"
EXECUTOR_SELECTOR = f"{ROLE_LABEL}={EXECUTOR_ROLE}"
#: The sanitised ``spark.app.name``.
APP_NAME_LABEL = "spark-app-name"
#: The container Spark gives the driver (a pod template may name another) and each executor.
NO_RESOURCE = "spark-internal"
"""Spark's "no primary resource" (``SparkLauncher.NO_RESOURCE``): the main class is on the
classpath already (``--jars`` or the image)."""

DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"

# --- sparkplane's label and annotation keys --------------------------------------------------

#: Label: the submission id of a native submission (hashed when it is not a label value).
SUBMISSION_LABEL = f"{SPARKPLANE_GROUP}/submission-id"
#: Annotation on a driver pod: seconds after the app ends before ``gc`` may delete it.
TTL_KEY = f"{SPARKPLANE_GROUP}/ttl-seconds-after-finished"
#: Annotation on a driver pod: the dependents the submitter will create.
DEPENDENTS_KEY = f"{SPARKPLANE_GROUP}/dependents"
#: Annotation on a driver pod: set once every dependent existed (so a missing one is Spark's).
DEPENDENTS_CREATED_KEY = f"{SPARKPLANE_GROUP}/dependents-created"
#: Annotation on an object created before its owner exists (adopted afterwards).
PENDING_OWNER_KEY = f"{SPARKPLANE_GROUP}/pending-owner"
#: Annotation: how long an app's archived logs are kept.
RETENTION_KEY = f"{SPARKPLANE_GROUP}/log-retention-seconds"
#: Label on a log-archive ConfigMap, and its annotations.
LOG_ARCHIVE_LABEL = f"{SPARKPLANE_GROUP}/log-archive"
ARCHIVE_APP_ANNOTATION = f"{SPARKPLANE_GROUP}/app"
ARCHIVED_AT_ANNOTATION = f"{SPARKPLANE_GROUP}/archived-at"
#: Label on a Spark Connect session's driver pod: the session's name (``sparkplane session``);
#: annotations: its owner, and the idle timeout and maximum lifetime ``gc`` enforces.
SESSION_LABEL = f"{SPARKPLANE_GROUP}/session"
SESSION_OWNER_KEY = f"{SPARKPLANE_GROUP}/session-owner"
IDLE_TIMEOUT_KEY = f"{SPARKPLANE_GROUP}/idle-timeout-seconds"
MAX_LIFETIME_KEY = f"{SPARKPLANE_GROUP}/max-lifetime-seconds"
#: Annotation on a session's driver pod exposed through an Ingress: ``HOST:PORT`` clients reach.
SESSION_ENDPOINT_KEY = f"{SPARKPLANE_GROUP}/session-endpoint"
#: Label on a namespace set up for a tenant (``sparkplane tenant setup``).
TENANT_LABEL = f"{SPARKPLANE_GROUP}/tenant"
#: Labels/annotations of apps a ScheduledSparkApplication made.
SCHEDULED_BY_LABEL = f"{SPARKPLANE_GROUP}/scheduled-by"
SCHEDULED_AT_ANNOTATION = f"{SPARKPLANE_GROUP}/scheduled-at"
#: Label of the pods a standalone SparkCluster's NetworkPolicy admits.
SPARK_CLUSTER_CLIENT_LABEL = f"{SPARKPLANE_GROUP}/spark-cluster"

# --- Pod phases ---------------------------------------------------------------------------------

POD_PENDING = "Pending"
POD_RUNNING = "Running"
POD_SUCCEEDED = "Succeeded"
POD_FAILED = "Failed"
POD_UNKNOWN = "Unknown"
#: The phases a pod never leaves.
POD_ENDED = frozenset({POD_SUCCEEDED, POD_FAILED})

# --- Time: the API's RFC 3339 form ------------------------------------------------------------


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp (``2024-05-01T10:00:00Z``, with or without fraction) as aware UTC.

    A datetime passes through (naive ones are taken as UTC); anything unreadable is None.
    """
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    """``value`` in the API's whole-second UTC form (``metav1.Time``: ``2025-03-01T10:00:00Z``)."""
    return _utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: datetime) -> str:
    """``value`` as a ``metav1.MicroTime`` (``2025-03-01T10:00:00.000000Z``: Leases, Events)."""
    return _utc(value).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_instant(value: datetime) -> str:
    """``value`` as Apache's operator writes a Java ``Instant``: a fraction only when non-zero."""
    return _utc(value).isoformat().removesuffix("+00:00") + "Z"


def now_text() -> str:
    """The current time in the API's whole-second form."""
    return format_time(datetime.now(UTC))


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)


# --- Names ----------------------------------------------------------------------------------

MAX_LABEL = 63
MAX_SUBDOMAIN = 253
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
#: A label value or the name part of a label key.
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def is_dns1123_label(name: str) -> bool:
    """True for a DNS-1123 label (volume names, namespaces): ≤ 63 chars of ``[a-z0-9-]``."""
    return len(name) <= MAX_LABEL and bool(_DNS1123_LABEL.match(name))


def is_dns1035_label(name: str) -> bool:
    """True for a DNS-1035 label (Service names): like DNS-1123 but starting with a letter."""
    return len(name) <= MAX_LABEL and bool(_DNS1035_LABEL.match(name))


def is_dns1123_subdomain(name: str) -> bool:
    """True for a DNS-1123 subdomain (pod, ConfigMap, Secret, Ingress names): ≤ 253 chars."""
    return len(name) <= MAX_SUBDOMAIN and bool(_DNS1123_SUBDOMAIN.match(name))


def is_label_value(value: str) -> bool:
    """True for a valid label value (empty included)."""
    return value == "" or (len(value) <= MAX_LABEL and bool(LABEL_NAME.match(value)))


def label_value(text: str) -> str:
    """``text`` made a valid label value: other characters become ``-``, cut to 63
    characters, no edge punctuation (lossy; for display labels such as an app name)."""
    cut = re.sub(r"[^A-Za-z0-9._-]", "-", text)[:MAX_LABEL]
    return cut.strip("-._")


def label_value_or_hash(text: str) -> str:
    """``text`` itself when it is a valid label value, else ``h-<40 hex of its sha256>``
    (lossless identity: for ids that selectors must match exactly)."""
    if text and is_label_value(text):
        return text
    return "h-" + hashlib.sha256(text.encode()).hexdigest()[:40]


# --- Object identity and owner references -------------------------------------------------------


def describe(obj: Mapping[str, Any]) -> str:
    """``Kind ns/name`` (or ``Kind name`` for cluster-scoped objects), for messages."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName", "?")
    ns = meta.get("namespace")
    return f"{obj.get('kind', '?')} {ns}/{name}" if ns else f"{obj.get('kind', '?')} {name}"


def owner_reference(
    owner: Mapping[str, Any], *, controller: bool = True, block_owner_deletion: bool | None = None
) -> dict[str, Any]:
    """An ownerReference pointing at ``owner`` (which must have been created: it needs a uid)."""
    meta = owner["metadata"]
    ref: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
    }
    if block_owner_deletion is not None:
        ref["blockOwnerDeletion"] = block_owner_deletion
    return ref


def owner_refs(obj: Mapping[str, Any], kind: str | None = None) -> list[Mapping[str, Any]]:
    """The ownerReferences of ``obj`` (only those of ``kind`` when given), in order."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return [r for r in refs if kind is None or r.get("kind") == kind]


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference of ``obj`` marked ``controller: true``, if any."""
    return next((ref for ref in owner_refs(obj) if ref.get("controller")), None)
