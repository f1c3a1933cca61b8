"""The submission use-case: from a resolved :class:`~sparkplane.usecases.sources.Source` to
objects on the cluster (or, for a dry run, to the exact objects that would be created).

One dispatch for every front end and every mode: a template app (the user's own manifests,
native), a spec natively (driver pod and owned dependents, staging included), as a
``spark.apache.org/v1`` SparkApplication (``operator``) or as a ``sparkoperator.k8s.io/v1beta2``
one (``kubeflow``). Called by :class:`sparkplane.SparkPlane` (and through it by the CLI).
Never parses command lines and never prints.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from sparkplane.errors import (
    AdmissionDeniedError,
    ForbiddenError,
    KubeError,
    NotFoundError,
    Problem,
    QuotaExceededError,
    SubmissionError,
    TransportError,
    ValidationError,
)
from sparkplane.history.server_kube import with_namespace_event_log
from sparkplane.kube import Kube
from sparkplane.model.apps import Mode
from sparkplane.render import render_operator_cr
from sparkplane.render.kubeflow_cr import render_kubeflow_cr
from sparkplane.spec import SparkApp, validate
from sparkplane.usecases.create import (
    SubmitOptions,
    Submitted,
    create_custom_resource,
    labelled,
    render_native,
    submit_native,
    submit_objects,
    submit_operator,
)
from sparkplane.usecases.sources import Source
from sparkplane.vocab import QUEUE_NAME_LABEL

Obj = dict[str, Any]


NATIVE_QUEUE = (
    "a native submission cannot wait for Kueue's admission: only the operator creates the "
    "Workload a queued app waits on (docs/queues.md)"
)


def queue_problem(source: Source, mode: Mode) -> Problem | None:
    """A native submission naming a Kueue queue (its ``kueue.x-k8s.io/queue-name`` label, on
    the app or its driver) is refused: it would run at once, past the quota."""
    if mode is not Mode.NATIVE or source.app is None:
        return None
    driver_label = f"spark.kubernetes.driver.label.{QUEUE_NAME_LABEL}"
    if QUEUE_NAME_LABEL in source.app.metadata.labels:
        where = f"metadata.labels[{QUEUE_NAME_LABEL}]"
    elif driver_label in source.app.spec.spark_conf:
        where = f"spec.sparkConf[{driver_label}]"
    else:
        return None
    return Problem(where, NATIVE_QUEUE, "submit with --mode operator, or remove the queue label")


def check_mode(source: Source, mode: Mode, opts: SubmitOptions) -> None:
    """Template mode submits the user's manifests natively; nothing else applies to it. A
    native submission may not name a Kueue queue (:func:`queue_problem`)."""
    if (problem := queue_problem(source, mode)) is not None:
        name = source.app.name if source.app is not None else "?"
        raise ValidationError([problem], subject=f"SparkApplication {name!r}")
    if source.template is not None and (opts.staging_server or mode is not Mode.NATIVE):
        raise ValidationError(
            [
                Problem(
                    "--template",
                    "template mode submits your own manifests natively: "
                    "--staging-server and --mode operator/kubeflow do not apply",
                    "reference files already in the image (local://) or use -f with a spec",
                )
            ],
            subject="command line",
        )


def resolve(source: Source, kube: Kube | None, *, dry_run: bool = False) -> Source:
    """The one resolve step ``render`` and ``submit`` share: a spec gets its namespace's
    defaults (event logs to the namespace's History Server, from its ``sparkplane-history``
    ConfigMap); a template is the user's own manifests and stays as it is.

    With no cluster (an offline dry run) there are no defaults to read; a dry run whose cluster
    cannot be reached renders without them too (a submission needs the cluster anyway)."""
    if source.app is None or kube is None:
        return source
    try:
        return replace(source, app=with_namespace_event_log(kube, source.app))
    except TransportError:
        if not dry_run:
            raise
        return source


def render_source(
    source: Source, mode: Mode, opts: SubmitOptions, kube: Kube | None = None
) -> list[Obj]:
    """The exact objects a submission would create (nothing is created)."""
    check_mode(source, mode, opts)
    source = resolve(source, kube, dry_run=True)
    server = kube.api.configuration.host if kube is not None else None
    if source.template is not None:
        return source.template.objects
    if source.kubeflow is not None:
        return [labelled(copy.deepcopy(source.kubeflow), opts)]
    assert source.app is not None
    if mode is Mode.APACHE:
        validate(source.app, native=False)  # Apache's operator accepts what spark-submit won't
        return [render_operator_cr(source.app)]
    if mode is Mode.KUBEFLOW:
        validate(source.app)
        return [labelled(render_kubeflow_cr(source.app), opts)]
    return render_native(source.app, server, opts).objects


def submit_source(kube: Kube, source: Source, mode: Mode, opts: SubmitOptions) -> Submitted:
    """Create the application; everything or nothing. A refusal that explains itself (RBAC,
    a namespace that does not exist) keeps its own error and exit code, with what was rolled
    back; other part-way failures are a SubmissionError."""
    check_mode(source, mode, opts)
    namespace = source.namespace or "default"
    try:
        return _submit(kube, resolve(source, kube), mode, opts)
    except SubmissionError as exc:
        cause = exc.__cause__
        explained = _explained(cause, namespace, str(exc)) if isinstance(cause, KubeError) else None
        if exc.leaked or explained is None:
            raise
        raise explained from exc
    except KubeError as exc:
        explained = _explained(exc, namespace, str(exc))
        if explained is None:
            raise
        raise explained from exc


def _explained(exc: KubeError, namespace: str, text: str) -> KubeError | None:
    """An RBAC denial (exit 6) or a missing namespace, told as such; None for anything else
    (a quota or admission refusal stays what it is: not an RBAC problem)."""
    if isinstance(exc, ForbiddenError) and not isinstance(
        exc, QuotaExceededError | AdmissionDeniedError
    ):
        return ForbiddenError(text, code=exc.code, reason=exc.reason, status=exc.status)
    details = exc.status.get("details")
    if not isinstance(exc, NotFoundError) or not isinstance(details, dict):
        return None
    if details.get("kind") != "namespaces":
        return None
    missing = details.get("name") or namespace
    return NotFoundError(
        f"namespace {missing!r} does not exist; nothing was created (create it with "
        f"`kubectl create namespace {missing}`, or choose another with -n)",
        code=404,
        reason="NotFound",
        status=exc.status,
    )


def _submit(kube: Kube, source: Source, mode: Mode, opts: SubmitOptions) -> Submitted:
    if source.template is not None:
        t = source.template
        return submit_objects(kube, t.driver, t.dependents, opts=opts)
    if source.kubeflow is not None:  # a v1beta2 file: created as it is, whatever --mode
        return create_custom_resource(kube, copy.deepcopy(source.kubeflow), opts, Mode.KUBEFLOW)
    assert source.app is not None
    if mode is Mode.APACHE:
        return submit_operator(kube, source.app, opts)
    if mode is Mode.KUBEFLOW:
        return submit_kubeflow(kube, source.app, opts)
    return submit_native(kube, source.app, opts)


def submit_kubeflow(kube: Kube, app: SparkApp, opts: SubmitOptions) -> Submitted:
    """Create ``app`` as a Kubeflow ``sparkoperator.k8s.io/v1beta2`` SparkApplication."""
    validate(app)
    return create_custom_resource(kube, render_kubeflow_cr(app), opts, Mode.KUBEFLOW)
