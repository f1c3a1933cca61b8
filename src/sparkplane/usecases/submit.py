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
from sparkplane.spec.queue import queue_of, queued_natively, with_queue
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
from sparkplane.vocab import KUEUE_API_VERSION, LOCAL_QUEUE, QUEUE_NAME_LABEL, is_label_value

Obj = dict[str, Any]


def with_queue_option(source: Source, opts: SubmitOptions) -> Source:
    """``--queue NAME`` (``SubmitOptions.queue``): the app names that LocalQueue in its
    ``metadata.labels``, whatever the mode (the operator queues a SparkApplication by the same
    label). A template is the user's own manifests: it names a queue in its own labels."""
    if opts.queue is None:
        return source
    if source.app is None:
        raise ValidationError(
            [
                Problem(
                    "--queue",
                    "applies to a spec or spark-submit arguments, not to a template or a "
                    "v1beta2 file",
                    f"put the label {QUEUE_NAME_LABEL} on your own manifests",
                )
            ],
            subject="command line",
        )
    if not opts.queue or not is_label_value(opts.queue):
        raise ValidationError(
            [
                Problem(
                    "--queue",
                    f"{opts.queue!r} is not a LocalQueue name (a label value: at most 63 "
                    "letters, digits, '-', '_' or '.', starting and ending alphanumeric)",
                    "name the LocalQueue of the app's namespace (kubectl get localqueues -n NS)",
                )
            ],
            subject="command line",
        )
    return replace(source, app=with_queue(source.app, opts.queue))


def check_mode(source: Source, mode: Mode, opts: SubmitOptions) -> None:
    """Template mode submits the user's manifests natively; nothing else applies to it."""
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


def check_queue(kube: Kube, app: SparkApp, namespace: str) -> None:
    """A native app naming a LocalQueue: the cluster must serve Kueue (else nothing would hold
    its pods: they would run past the quota), and the LocalQueue must exist when this client
    may read it (the shipped client role may; one that may not submits unchecked, and Kueue
    keeps a pod naming a missing queue gated, saying so on its Workload)."""
    found = queue_of(app)
    if found is None:
        return
    queue, where = found
    subject = f"SparkApplication {app.name!r}"
    try:
        kube.resource(KUEUE_API_VERSION, LOCAL_QUEUE)
    except TransportError:
        raise
    except KubeError:
        raise ValidationError(
            [Problem(where, NO_KUEUE.format(queue=queue), NO_KUEUE_FIX)], subject=subject
        ) from None
    try:
        kube.get(KUEUE_API_VERSION, LOCAL_QUEUE, queue, namespace)
    except NotFoundError:
        raise ValidationError(
            [
                Problem(
                    where,
                    f"LocalQueue {queue!r} does not exist in namespace {namespace!r}; nothing "
                    "was created",
                    f"name an existing one (kubectl get localqueues -n {namespace}) or ask "
                    "your cluster admin to create it",
                )
            ],
            subject=subject,
        ) from None
    except ForbiddenError:
        return


NO_KUEUE = (
    "names the Kueue LocalQueue {queue!r}, but the cluster does not serve Kueue's API "
    "(kueue.x-k8s.io): nothing would hold the app for the quota"
)
NO_KUEUE_FIX = (
    "install Kueue with its Pod integration (docs/queues.md; in the dev cluster: "
    "sparkplane dev-cluster kueue up), or remove the queue label"
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
    source = resolve(with_queue_option(source, opts), kube, dry_run=True)
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
    return render_native(queued_natively(source.app), server, opts).objects


def submit_source(kube: Kube, source: Source, mode: Mode, opts: SubmitOptions) -> Submitted:
    """Create the application; everything or nothing. A refusal that explains itself (RBAC,
    a namespace that does not exist) keeps its own error and exit code, with what was rolled
    back; other part-way failures are a SubmissionError."""
    check_mode(source, mode, opts)
    source = with_queue_option(source, opts)
    namespace = source.namespace or "default"
    if mode is Mode.NATIVE and source.app is not None:
        check_queue(kube, source.app, namespace)
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
    return submit_native(kube, queued_natively(source.app), opts)


def submit_kubeflow(kube: Kube, app: SparkApp, opts: SubmitOptions) -> Submitted:
    """Create ``app`` as a Kubeflow ``sparkoperator.k8s.io/v1beta2`` SparkApplication."""
    validate(app)
    return create_custom_resource(kube, render_kubeflow_cr(app), opts, Mode.KUBEFLOW)
