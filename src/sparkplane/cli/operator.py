"""``sparkplane operator``: install the CRDs, print the deploy manifests, run the operator.

Commands only; the logic lives in ``sparkplane.operator``. (The dev cluster's driver simulator,
``sparkplane dev-cluster simulate``, is a command of the sparkplane-devcluster distribution.)
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer

from sparkplane.cli.console import out, progress
from sparkplane.cli.options import Context, Kubeconfig, client, make_kube
from sparkplane.errors import Problem, ValidationError
from sparkplane.kube import Kube, connect
from sparkplane.operator.core.capacity import CapacitySettings
from sparkplane.operator.core.naming import DEFAULT_OPERATOR_NAME
from sparkplane.operator.core.settings import Limits, merge
from sparkplane.operator.deploy import manifests as deploy
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.security.podpolicy import CHECK_NAMES

app = typer.Typer(
    help="The spark.apache.org operator: SparkApplication and SparkCluster.",
    no_args_is_help=True,
)

Namespaces = Annotated[
    list[str] | None,
    typer.Option(
        "-n",
        "--namespace",
        help="Namespace to watch (repeat for several). Default: all namespaces.",
        show_default=False,
    ),
]

OperatorNamespace = Annotated[
    str, typer.Option("--operator-namespace", help="Namespace of the in-cluster operator.")
]
Image = Annotated[str, typer.Option(help="Operator image.")]


@app.command()
def install(
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    operator: Annotated[
        bool, typer.Option("--operator/--crds-only", help="Also install RBAC and the Deployment.")
    ] = False,
    watch: Namespaces = None,
    operator_namespace: OperatorNamespace = deploy.DEFAULT_NAMESPACE,
    image: Image = deploy.DEFAULT_IMAGE,
) -> None:
    """Server-side apply the SparkApplication and SparkCluster CRDs (and, with --operator, the
    operator: cluster-wide, or namespaced when --namespace is given)."""
    with client(kubeconfig, context, None) as sp:
        applied = sp.install_operator(
            operator=operator, watch=watch or (), operator_namespace=operator_namespace, image=image
        )
    for line in applied:
        out.print(f"{line} applied")


@app.command()
def manifests(
    write: Annotated[
        Path | None, typer.Option("--write", help="Write the files under this deploy/ directory.")
    ] = None,
    watch: Namespaces = None,
    operator_namespace: OperatorNamespace = deploy.DEFAULT_NAMESPACE,
    image: Image = deploy.DEFAULT_IMAGE,
) -> None:
    """Print the CRDs, RBAC and Deployment as YAML (or regenerate deploy/ with --write)."""
    if write is not None:
        from sparkplane.manifests import chart

        for path in chart.write(write):
            progress(f"wrote {path}")
        return
    from sparkplane.operator.deploy.crd import crds

    objects = crds() + (
        deploy.namespaced(list(watch), operator_namespace, image)
        if watch
        else deploy.cluster_wide(operator_namespace, image)
    )
    out.print(deploy.dump(objects), end="", markup=False)


@app.command()
def run(
    kubeconfig: Kubeconfig = None,
    context: Context = None,
    namespace: Namespaces = None,
    all_namespaces: Annotated[
        bool, typer.Option("-A", "--all-namespaces", help="Watch every namespace (default).")
    ] = False,
    in_cluster: Annotated[
        bool, typer.Option("--in-cluster", help="Use the pod's service account.")
    ] = False,
    workers: Annotated[int, typer.Option(help="Reconcile threads.")] = 8,
    metrics_port: Annotated[
        int | None, typer.Option("--metrics-port", help="Serve Prometheus metrics on this port.")
    ] = None,
    leader_elect: Annotated[
        bool, typer.Option("--leader-elect/--no-leader-elect", help="Hold a Lease first.")
    ] = True,
    lease_namespace: Annotated[
        str, typer.Option("--lease-namespace", help="Namespace of the leader-election Lease.")
    ] = "default",
    lease_name: Annotated[
        str, typer.Option("--lease-name", help="Lease name: one per shard.")
    ] = "sparkplane-operator-lock",
    lease_seconds: Annotated[
        float,
        typer.Option(
            "--lease-seconds", min=3.0, help="Lease duration (renew deadline: 2/3 of it)."
        ),
    ] = 15.0,
    sweep_seconds: Annotated[
        float,
        typer.Option(
            "--sweep-seconds", min=1.0, help="How often leftovers of finished attempts are deleted."
        ),
    ] = 60.0,
    selector: Annotated[
        str,
        typer.Option(
            "-l", "--selector", help="Only SparkApplications/SparkClusters with these labels."
        ),
    ] = "",
    name: Annotated[
        str, typer.Option("--name", help="Operator name (value of the spark.operator/name label).")
    ] = DEFAULT_OPERATOR_NAME,
    dynamic_config: Annotated[
        bool,
        typer.Option(
            "--dynamic-config",
            help="Apply the ConfigMap spark-kubernetes-operator-dynamic-configuration in the "
            "lease namespace without a restart (docs/operator.md).",
        ),
    ] = False,
    install_crds_first: Annotated[
        bool, typer.Option("--install-crds", help="Apply the CRDs before starting.")
    ] = False,
    pod_template_dir: Annotated[
        str | None,
        typer.Option(
            "--pod-template-dir",
            help="The only directory SparkApplications may name in *.podTemplateFile "
            "(default: none; use spec.driverSpec/executorSpec.podTemplateSpec).",
        ),
    ] = None,
    pod_policy_allow: Annotated[
        list[str] | None,
        typer.Option(
            "--pod-policy-allow",
            help="A pod policy check this operator does not apply (repeatable; docs/security.md): "
            "privileged, host-namespaces, host-path, capabilities, privilege-escalation, "
            "system-priority.",
            show_default=False,
        ),
    ] = None,
    min_schedule_seconds: Annotated[
        int,
        typer.Option(
            "--min-schedule-seconds",
            min=1,
            help="Refuse ScheduledSparkApplications whose runs come closer than this.",
        ),
    ] = Limits.min_schedule_seconds,
    min_restart_backoff_millis: Annotated[
        int,
        typer.Option(
            "--min-restart-backoff-millis",
            min=0,
            help="Wait at least this long before a restart (a smaller restartBackoffMillis* is "
            "raised to it).",
        ),
    ] = Limits.min_restart_backoff_millis,
    max_restart_attempts: Annotated[
        int,
        typer.Option(
            "--max-restart-attempts",
            min=0,
            help="Restart an application at most this often (a larger maxRestart* is lowered).",
        ),
    ] = Limits.max_restart_attempts,
    max_workers: Annotated[
        int,
        typer.Option("--max-workers", min=0, help="Refuse SparkClusters with more workers."),
    ] = Limits.max_workers,
    max_executors: Annotated[
        int,
        typer.Option(
            "--max-executors",
            min=0,
            help="Refuse SparkApplications asking for more executors (spark.executor.instances, "
            "spark.dynamicAllocation.*Executors); the default maxExecutors of dynamic allocation.",
        ),
    ] = Limits.max_executors,
    capacity_limit: Annotated[
        bool,
        typer.Option(
            "--capacity-limit/--no-capacity-limit",
            help="Create drivers only while the cluster keeps up (an adaptive limit on drivers "
            'not yet scheduled; docs/operator.md, "Backpressure").',
        ),
    ] = CapacitySettings.enabled,
    status_first: Annotated[
        bool,
        typer.Option(
            "--status-first/--no-status-first",
            help="Reconcile apps whose pods changed before new apps (the queue's urgent lane), "
            "and fold an app's executor changes into one pass.",
        ),
    ] = True,
    capacity_initial: Annotated[
        float,
        typer.Option("--capacity-initial", min=1, help="The in-flight limit's starting value."),
    ] = CapacitySettings.initial,
    capacity_minimum: Annotated[
        float, typer.Option("--capacity-minimum", min=1, help="The in-flight limit's floor.")
    ] = CapacitySettings.minimum,
    capacity_maximum: Annotated[
        float, typer.Option("--capacity-maximum", min=1, help="The in-flight limit's ceiling.")
    ] = CapacitySettings.maximum,
    capacity_target_latency: Annotated[
        float,
        typer.Option(
            "--capacity-target-latency",
            min=0.01,
            help="Seconds: the operator's mean API request latency above which the limit shrinks.",
        ),
    ] = CapacitySettings.target_latency_seconds,
    capacity_target_watch_lag: Annotated[
        float,
        typer.Option(
            "--capacity-target-watch-lag",
            min=0.01,
            help="Seconds: the mean time the operator's status writes take to come back through "
            "its watch above which the limit shrinks.",
        ),
    ] = CapacitySettings.target_watch_lag_seconds,
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Log at debug level.")] = False,
) -> None:
    """Run the operator in this process until interrupted.

    The --min-*/--max-* bounds: docs/operator.md, "Bounds".
    """
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    unknown = sorted(set(pod_policy_allow or ()) - set(CHECK_NAMES))
    if unknown:
        raise ValidationError(
            [Problem("--pod-policy-allow", f"unknown check(s) {unknown}", f"one of {CHECK_NAMES}")],
            subject="operator flags",
        )
    kube = Kube(connect(in_cluster=True)) if in_cluster else make_kube(kubeconfig, context)
    if install_crds_first:
        install_crds(kube)
    watched = () if all_namespaces or not namespace else tuple(namespace)
    flags = {
        "namespaces": watched,
        "workers": workers,
        "metrics_port": metrics_port,
        "leader_election": leader_elect,
        "lease_namespace": lease_namespace,
        "lease_name": lease_name,
        "lease_seconds": lease_seconds,
        "label_selector": selector,
        "sweep_seconds": sweep_seconds,
        "operator_name": name,
        "min_schedule_seconds": min_schedule_seconds,
        "min_restart_backoff_millis": min_restart_backoff_millis,
        "max_restart_attempts": max_restart_attempts,
        "max_workers": max_workers,
        "max_executors": max_executors,
        "pod_template_dir": pod_template_dir,
        "pod_policy_allow": tuple(pod_policy_allow or ()),
        "dynamic_config": dynamic_config,
        "status_first": status_first,
        "capacity_enabled": capacity_limit,
        "capacity_initial": capacity_initial,
        "capacity_minimum": capacity_minimum,
        "capacity_maximum": capacity_maximum,
        "capacity_target_latency_seconds": capacity_target_latency,
        "capacity_target_watch_lag_seconds": capacity_target_watch_lag,
    }
    settings = merge(flags, os.environ)  # the one place: defaults, environment, flags
    scope = ", ".join(watched) if watched else "all namespaces"
    progress(f"operator {name} watching {scope} with {workers} workers")
    Operator(kube, settings).run_forever()
