"""The least-privilege rules of every sparkplane identity, each with the reason it exists.

Owns the catalogue (:data:`POLICIES`): which API groups, resources and verbs the client, the
Spark driver, the operator, the staging server and the clean-up CronJob need, and why. The
objects that grant them are rendered by :mod:`sparkplane.security.rbac`; the why of every rule
becomes a YAML comment there and a table row in docs/security.md. Pure data: no I/O.

A rule is added only with a caller that needs it. No identity gets a verb on Secrets that
answers with their data: ``get``/``list``/``watch``, and ``patch``/``update``/``delete`` whose
answers carry the object too; an identity that may create Secrets still cannot read one back.
The operator's install manifests (``sparkplane.operator.deploy``, the Helm chart) take their
rules from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sparkplane.vocab import APACHE_GROUP, KUBEFLOW_GROUP, KUEUE_GROUP, SCHEDULING_GROUP

CORE = ""
APPS = "apps"
NETWORKING = "networking.k8s.io"
EVENTS = "events.k8s.io"
COORDINATION = "coordination.k8s.io"
APACHE = APACHE_GROUP
KUBEFLOW = KUBEFLOW_GROUP
KUEUE = KUEUE_GROUP
SCHEDULING = SCHEDULING_GROUP
SPARKPLANE = "sparkplane.io"

READ = ("get", "list", "watch")


class Identity(StrEnum):
    """Who acts on the cluster; each has its own service account and rules."""

    CLIENT = "client"
    """The user-facing application (CLI or library): submit, monitor and kill apps in one
    namespace, and read nodes."""
    DRIVER = "driver"
    """The Spark driver pod: creates, watches and deletes its own executors and their objects."""
    OPERATOR = "operator"
    """The sparkplane operator: reconciles SparkApplication/SparkCluster resources."""
    STAGING = "staging"
    """The staging server: asks whether a bundle's owner pods still exist, and who an
    uploader's token is and whether it may create pods in the owner namespace."""
    GC = "gc"
    """The TTL clean-up CronJob (``sparkplane gc``): deletes finished driver pods."""


@dataclass(frozen=True)
class Rule:
    """One PolicyRule plus the reason it is granted (rendered as a comment)."""

    groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    names: tuple[str, ...] = ()
    """``resourceNames``: limits every verb but create, list, watch and deletecollection."""

    def body(self) -> dict[str, Any]:
        """The rule as the RBAC API spells it."""
        out: dict[str, Any] = {"apiGroups": list(self.groups), "resources": list(self.resources)}
        if self.names:
            out["resourceNames"] = list(self.names)
        out["verbs"] = list(self.verbs)
        return out


def rule(
    groups: str | tuple[str, ...],
    resources: str | tuple[str, ...],
    verbs: tuple[str, ...],
    why: str,
    *,
    names: tuple[str, ...] = (),
) -> Rule:
    """A :class:`Rule` from a group (or groups), a resource (or resources) and verbs."""
    g = (groups,) if isinstance(groups, str) else groups
    r = (resources,) if isinstance(resources, str) else resources
    return Rule(g, r, verbs, why, names)


@dataclass(frozen=True)
class Policy:
    """What one identity may do.

    ``namespaced`` rules are granted in each namespace the identity works in (a Role and a
    RoleBinding there), or everywhere (a ClusterRole and a ClusterRoleBinding) for the
    cluster-wide variant, which only identities with ``cluster_wide_allowed`` offer.
    ``own_namespace`` rules are always a Role in the service account's namespace (leader
    election). ``cluster`` rules are always a ClusterRole (cluster-scoped resources).
    """

    identity: Identity
    summary: str
    default_service_account: str
    namespaced: tuple[Rule, ...]
    own_namespace: tuple[Rule, ...] = ()
    cluster: tuple[Rule, ...] = ()
    cluster_wide_allowed: bool = False


CLIENT = Policy(
    Identity.CLIENT,
    "submit, monitor and kill Spark applications in one namespace; read nodes",
    "sparkplane-client",
    namespaced=(
        rule(
            CORE,
            "pods",
            ("create", "get", "list", "watch", "patch", "delete"),
            "submit creates the driver pod, then marks it (patch: annotation "
            "sparkplane.io/dependents-created) once its last dependent exists, so gc never "
            "takes an app whose Services Spark removed on stop for a half-made one; status and "
            "wait get/list/watch the driver and executors; kill (and the rollback of a failed "
            "submit) deletes the driver, whose dependents follow by ownerReference",
        ),
        rule(CORE, "pods/log", ("get",), "`sparkplane logs` reads the driver's log"),
        rule(
            CORE,
            "pods/portforward",
            ("get", "create"),
            "`sparkplane ui` forwards the Spark UI port (SPDY clients POST = create, "
            "WebSocket clients GET = get)",
        ),
        rule(
            CORE,
            ("configmaps", "services", "persistentvolumeclaims"),
            ("create", "get", "list", "watch", "delete"),
            "submit creates the driver's ConfigMaps (spark.properties, pod templates), its "
            "headless and UI Services and on-demand PVCs, all owned by the driver pod; "
            "delete is the rollback of a submit that failed half-way",
        ),
        rule(
            CORE,
            "secrets",
            ("create",),
            "submit may create Secrets owned by the driver (garbage-collected with it); no "
            "get/list/watch/patch/update/delete: those return Secret data, so the client "
            "cannot read any Secret, including the ones it made",
        ),
        rule(
            NETWORKING,
            "ingresses",
            ("create", "get", "list", "watch", "delete"),
            "the optional Spark UI Ingress (spec.sparkUI), owned by the driver pod",
        ),
        rule(
            CORE,
            "resourcequotas",
            ("get", "list"),
            "`session create` reads the namespace's cap on Spark Connect sessions (a "
            "ResourceQuota entry count/sparkconnects.sparkoperator.k8s.io) before starting one; "
            "read only: quotas are the admin's",
        ),
        rule(
            NETWORKING,
            "networkpolicies",
            ("create", "get", "list", "watch", "delete"),
            "Spark 4.2+'s per-app NetworkPolicy (only the app's own pods reach its executors), "
            "owned by the driver pod; delete is the rollback of a submit that failed half-way",
        ),
        rule(
            (CORE, EVENTS),
            "events",
            READ,
            "status and describe show scheduling failures and preemptions from events",
        ),
        rule(
            CORE,
            "events",
            ("create",),
            "submit and kill record an Event (Submitted, Killed) on a native app's driver pod: "
            "no operator records one for it",
        ),
        rule(
            (APACHE, KUBEFLOW),
            "sparkapplications",
            ("create", "get", "list", "watch", "patch", "delete"),
            "operator mode: submit creates (or server-side applies) the SparkApplication, "
            "status reads it, kill deletes it",
        ),
        rule(
            (APACHE, KUBEFLOW),
            "sparkapplications/status",
            ("get",),
            "clients that read the status subresource (Airflow's SparkKubernetesOperator: "
            "get_namespaced_custom_object_status); read only, the operator writes it",
        ),
        rule(
            KUEUE,
            "localqueues",
            ("get",),
            "a native submission naming a Kueue queue (--queue, label "
            "kueue.x-k8s.io/queue-name) checks its LocalQueue exists before creating anything "
            "(docs/queues.md)",
        ),
        rule(
            KUBEFLOW,
            "sparkconnects",
            ("create", "get", "list", "watch", "delete"),
            "operator mode: a Spark Connect server as Kubeflow's SparkConnect (its SDK's "
            "SparkClient.connect creates, reads, lists and deletes them; `session list` "
            "lists them)",
        ),
    ),
    cluster=(
        rule(
            CORE,
            "nodes",
            ("get", "list"),
            "capacity checks and `describe` read node allocatable resources (as in the seed's "
            "node-reader ClusterRole); nodes are cluster-scoped, so this needs a ClusterRole",
        ),
        rule(
            NETWORKING,
            "ingressclasses",
            ("list",),
            "`session create --expose ingress` checks the IngressClass it names (or the "
            "cluster's default one) exists before creating anything; cluster-scoped, read only",
        ),
    ),
)

DRIVER = Policy(
    Identity.DRIVER,
    "the Spark driver: its executor pods (or StatefulSets) and their Services, ConfigMaps and "
    "PVCs, nothing more",
    "spark-driver",
    namespaced=(
        rule(
            CORE,
            "pods",
            ("create", "get", "list", "watch", "patch", "delete", "deletecollection"),
            "the driver reads its own pod (to own what it creates), creates executor pods, "
            "watches or polls them, labels finished ones spark-exec-inactive (patch) when "
            "executor.deleteOnTermination=false, and deletes them one by one or by label "
            "selector on stop",
        ),
        rule(
            CORE,
            ("services", "configmaps"),
            ("create", "delete", "deletecollection"),
            "the executor ConfigMap (spark-exec-*-conf-map) and executor Services (4.0 "
            "enableService), deleted by label on stop (fabric8's withLabel(...).delete() is one "
            "DELETE on the collection: deletecollection). No get/list/watch, but RBAC alone does "
            "not stop a driver reading any ConfigMap or Secret of its namespace: it creates pods, "
            "which may mount them. In a namespace set up with `sparkplane tenant setup` the "
            "admission policy holds its pods to its own executors, volumes and deletions "
            "(docs/security.md)",
        ),
        rule(
            CORE,
            "persistentvolumeclaims",
            ("create", "get", "list", "delete", "deletecollection"),
            "on-demand executor PVCs, listed again by label to reuse them, deleted by label on "
            "stop (no watch)",
        ),
        rule(
            APPS,
            "statefulsets",
            ("create", "get", "list", "watch", "update", "patch", "delete"),
            "spark.kubernetes.allocation.pods.allocator=statefulset: the driver creates one "
            "StatefulSet of executors per resource profile, scales and deletes it (Apache's "
            "workload role grants the same verbs). In a namespace set up with `sparkplane "
            "tenant setup` the admission policy refuses it unless the namespace opts in "
            "(docs/security.md): the StatefulSet's pods escape the driver checks",
        ),
    ),
)

OPERATOR_LEASE = "sparkplane-operator-lock"  # the Lease its replicas elect a leader with
#: the operator's dynamic configuration, in its own namespace (Apache's chart's name)
OPERATOR_DYNAMIC_CONFIG = "spark-kubernetes-operator-dynamic-configuration"

OPERATOR = Policy(
    Identity.OPERATOR,
    "reconcile SparkApplications and SparkClusters and the objects that run them",
    "sparkplane-operator",
    namespaced=(
        rule(
            APACHE,
            ("sparkapplications", "sparkclusters"),
            (*READ, "delete"),
            "watch the custom resources it reconciles; delete finished ones after "
            "ttlAfterStopMillis",
        ),
        rule(
            APACHE,
            ("sparkapplications/status", "sparkclusters/status"),
            ("get", "update", "patch"),
            "write the state and its transition history into .status",
        ),
        rule(
            (APACHE, KUBEFLOW),
            "sparkapplications",
            ("create",),
            "a ScheduledSparkApplication's runs, created when the schedule is due (Apache "
            "runs for sparkplane.io schedules, v1beta2 runs for Kubeflow's)",
        ),
        rule(
            KUBEFLOW,
            "sparkapplications",
            (*READ, "delete"),
            "watch Kubeflow's v1beta2 SparkApplications it serves (when their CRD is "
            "installed); delete finished ones after timeToLiveSeconds",
        ),
        rule(
            KUBEFLOW,
            "sparkapplications/status",
            ("get", "update", "patch"),
            "write Kubeflow's applicationState, driverInfo and executorState into .status",
        ),
        rule(
            KUBEFLOW,
            "sparkconnects",
            READ,
            "watch Kubeflow's v1alpha1 SparkConnects it serves (when their CRD is installed)",
        ),
        rule(
            KUBEFLOW,
            "sparkconnects/status",
            ("update",),
            "write Kubeflow's SparkConnect state, conditions, server and executors into .status",
        ),
        rule(
            (SPARKPLANE, KUBEFLOW),
            "scheduledsparkapplications",
            READ,
            "watch the ScheduledSparkApplications it runs (sparkplane's and Kubeflow's API)",
        ),
        rule(
            (SPARKPLANE, KUBEFLOW),
            "scheduledsparkapplications/status",
            ("get", "update", "patch"),
            "write a schedule's last and next run and its run history into .status",
        ),
        rule(
            CORE,
            "pods",
            (*READ, "create", "delete", "patch"),
            "create drivers, follow drivers and executors, delete them on stop or retry; "
            "patch: remove the quota gate from a queued app's executors Kueue admitted",
        ),
        rule(
            CORE,
            "pods/log",
            ("get",),
            "archive a driver's log before releasing it, or when it sees it deleted by "
            "someone else (docs/history.md)",
        ),
        rule(
            CORE,
            ("configmaps", "services", "persistentvolumeclaims"),
            ("get", "create", "delete"),
            "the driver's ConfigMaps, Services and on-demand PVCs, created with the driver",
        ),
        rule(
            CORE,
            "configmaps",
            ("list", "update"),
            "the in-cluster log archive (ConfigMaps sparkplane-logs-<app>): update replaces an "
            "app's archive, list (by label) finds the expired ones to delete; the sweeper lists "
            "its ConfigMaps (by its label) to delete those of finished attempts. RBAC cannot "
            "limit list to a label, but an identity that creates pods can read ConfigMaps anyway",
        ),
        rule(
            CORE,
            "services",
            ("list",),
            "the sweeper (operator/runtime/sweep.py) lists its Services by its label, every "
            "--sweep-seconds, to delete those left by finished attempts",
        ),
        rule(
            NETWORKING,
            "ingresses",
            ("get", "create", "delete"),
            "driverServiceIngressList and the UI Ingress",
        ),
        rule(
            APPS,
            "statefulsets",
            (*READ, "create", "delete"),
            "a SparkCluster's master and worker StatefulSets",
        ),
        rule(
            "autoscaling",
            "horizontalpodautoscalers",
            ("get", "create", "delete"),
            "a SparkCluster's worker HorizontalPodAutoscaler (minWorkers < maxWorkers)",
        ),
        rule(
            "policy",
            "poddisruptionbudgets",
            ("get", "create", "delete"),
            "a SparkCluster's worker PodDisruptionBudget (minWorkers >= 1)",
        ),
        rule(
            CORE,
            "events",
            ("create", "patch"),
            "record state transitions as events on the custom resources (patch aggregates repeats)",
        ),
        rule(
            CORE,
            "services",
            ("list",),
            "the sweeper lists the Services it labelled to find leftovers of finished attempts",
        ),
        rule(
            CORE,
            "secrets",
            ("create",),
            "a SparkCluster's spark.authenticate secret, generated once (the pods read it "
            "through secretKeyRef; the operator never reads it back, and the garbage collector "
            "deletes it with its SparkCluster)",
        ),
        rule(
            NETWORKING,
            "networkpolicies",
            ("get", "create", "delete"),
            "a SparkCluster's NetworkPolicy (only its own pods and its applications reach it) "
            "and Spark 4.2+'s per-app NetworkPolicy (only an app's pods reach its executors)",
        ),
        rule(
            KUEUE,
            "workloads",
            (*READ, "create", "delete"),
            "queued SparkApplications (label kueue.x-k8s.io/queue-name, docs/queues.md): create "
            "each attempt's Workload before any pod, watch Kueue admit or evict it, delete it "
            "once the attempt's pods are gone (get: check it is the app's before deleting it)",
        ),
    ),
    cluster=(
        rule(
            KUEUE,
            "resourceflavors",
            ("get",),
            "a queued app's admission names ResourceFlavors: read each when the driver is "
            "created, to put its nodeLabels and tolerations on the pods as Kueue's own "
            "integrations do (cluster-scoped, so a ClusterRole; read at that moment, not watched)",
        ),
        rule(
            KUEUE,
            "workloadpriorityclasses",
            ("get",),
            "a queued app's label kueue.x-k8s.io/priority-class names a WorkloadPriorityClass: "
            "read it when the app's Workload is created, for its priority, as Kueue's own "
            "integrations do (cluster-scoped; read at that moment, not watched)",
        ),
        rule(
            SCHEDULING,
            "priorityclasses",
            ("get", "list"),
            "a queued app's Workload takes its priority from the driver's priorityClassName "
            "(get), or from the cluster's globalDefault PriorityClass when nothing is named "
            "(list), as Kueue's own integrations do (cluster-scoped; read, not watched)",
        ),
    ),
    own_namespace=(
        rule(
            COORDINATION,
            "leases",
            ("create",),
            "leader election: create the Lease the first time (create cannot be limited by name)",
        ),
        rule(
            COORDINATION,
            "leases",
            ("get", "update"),
            "leader election: read and renew its own Lease, and no other",
            names=(OPERATOR_LEASE,),
        ),
        rule(
            CORE,
            "configmaps",
            ("get", "list", "watch"),
            "dynamic configuration: watch its own ConfigMap (by name), and no other",
            names=(OPERATOR_DYNAMIC_CONFIG,),
        ),
    ),
    cluster_wide_allowed=True,
)

STAGING = Policy(
    Identity.STAGING,
    "the staging server: does a bundle's owner (pods matching its labels) still exist?",
    "sparkplane-staging",
    namespaced=(
        rule(
            CORE,
            "pods",
            ("get", "list"),
            "the clean-up loop lists pods by the bundle's owner labels in the owner's "
            "namespace before deleting a downloaded bundle",
        ),
    ),
    cluster=(
        rule(
            "authentication.k8s.io",
            "tokenreviews",
            ("create",),
            "uploads: who is the bearer token an uploader presents? (reviews are "
            "cluster-scoped, so this needs a ClusterRole)",
        ),
        rule(
            "authorization.k8s.io",
            "subjectaccessreviews",
            ("create",),
            "uploads: may that identity create pods in the bundle's owner namespace?",
        ),
    ),
    cluster_wide_allowed=True,
)

GC = Policy(
    Identity.GC,
    "the TTL clean-up CronJob: delete finished and half-made driver pods",
    "sparkplane-gc",
    namespaced=(
        rule(
            CORE,
            "pods",
            ("get", "list", "delete"),
            "list driver pods, delete the finished ones past their TTL (Background "
            "propagation: the garbage collector removes executors, ConfigMaps and Services)",
        ),
        rule(CORE, "pods/log", ("get",), "archive a driver's log before deleting it"),
        rule(
            CORE,
            "pods/portforward",
            ("get", "create"),
            "Spark Connect sessions: read the idle time from the driver's own REST API (its "
            "UI port) to end sessions past their idle timeout",
        ),
        rule(
            CORE,
            "configmaps",
            ("create",),
            "the in-cluster log archive: a ConfigMap sparkplane-logs-<app> made before a driver "
            "is deleted. No list, update or delete (issue 12: gc must not read, change or remove "
            "other apps' ConfigMaps), so it neither replaces an existing archive nor prunes; the "
            "operator does (docs/history.md)",
        ),
        rule(
            CORE,
            ("configmaps", "services", "persistentvolumeclaims"),
            ("get",),
            "half-made apps: does each dependent a driver pod announced exist? (get by name "
            "only; no list of Services or PVCs)",
        ),
        rule(
            NETWORKING,
            ("ingresses", "networkpolicies"),
            ("get",),
            "half-made apps: the UI Ingress and the NetworkPolicy (Spark 4.2+) a driver pod "
            "announced",
        ),
        rule(
            CORE,
            "resourcequotas",
            ("list",),
            "Spark Connect sessions: the namespace's cap on concurrent sessions (a ResourceQuota "
            "entry), to end the newest ones beyond it",
        ),
    ),
    cluster_wide_allowed=True,
)

POLICIES: dict[Identity, Policy] = {p.identity: p for p in (CLIENT, DRIVER, OPERATOR, STAGING, GC)}
