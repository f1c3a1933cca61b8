"""Submission: put a rendered application on the cluster, in native or operator mode.

Native: render the spec (pure steps), then create the driver pod and its dependents with
ownerReferences to the pod's uid, rolling back on any failure (``kube.ownership``).
Template: the user's own manifests, the driver pod being the one labelled ``spark-role: driver``.
Operator: the same spec as a ``spark.apache.org/v1`` SparkApplication.
With a staging server (``SubmitOptions.staging_server``), submitter-local dependencies are
uploaded first and fetched by an init-container (:mod:`sparkplane.usecases.stage`).

A submission id makes a submit idempotent: the names derive from it, so a retry meets the objects
of the first attempt (AlreadyExists) and returns that application instead of starting another;
if the first attempt died half-way, the retry completes it or removes it (``resume_owned``).
"""

from __future__ import annotations

import copy
import getpass
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sparkplane.errors import (
    AlreadyExistsError,
    ForbiddenError,
    KubeError,
    Problem,
    SubmissionError,
    ValidationError,
)
from sparkplane.kube import Kube
from sparkplane.kube.ownership import create_owned, resume_owned
from sparkplane.model.apps import MANAGED_BY, Mode, native_name
from sparkplane.render import RenderContext, RenderedApp, render, render_operator_cr
from sparkplane.render.steps.staging import request_staging
from sparkplane.spec import AppIds, SparkApp, app_name, validate
from sparkplane.usecases.record import SUBMITTED, record
from sparkplane.usecases.stage import StagingOptions, staged_submission
from sparkplane.vocab import APP_SELECTOR_LABEL, SUBMISSION_LABEL, TTL_KEY
from sparkplane.vocab import label_value_or_hash as label_value

Obj = dict[str, Any]


@dataclass(frozen=True)
class Submitted:
    """The outcome of a submission: how to refer to the app, and what was created."""

    name: str
    namespace: str
    mode: Mode
    app_id: str | None
    driver_pod: str | None
    objects: list[str] = field(default_factory=list)
    existing: bool = False  # True when a submission id matched an earlier submission
    completed: tuple[str, ...] = ()  # what a retry added to a half-made earlier submission
    # the objects as the API server returned them (created, or found: an earlier submission's
    # owner), for ``submit -o json|yaml``; not shown in the repr
    created: tuple[Obj, ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class SubmitOptions:
    """What a submission adds beyond the spec."""

    submission_id: str | None = None
    ttl_seconds: int | None = None  # clean-up TTL after the app finishes (``sparkplane gc``)
    spark_user: str | None = None
    staging_server: str | None = None  # resource staging server for submitter-local files
    staging_ca_file: Path | None = None  # CA to trust for an HTTPS staging server
    init_container_image: str | None = None  # image with `sparkplane fetch` (SPARKPLANE_IMAGE)
    staging_internal_server: str | None = None  # URL pods use, if not staging_server
    staging_base_dir: Path | None = None  # relative local paths resolve here (default: cwd)
    staging_token: str | None = None  # upload credential (default: the kubeconfig's token)
    # the submitter's PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON (Settings), as spark-submit reads
    # them: the driver's Pythons when spark.pyspark.python / .driver.python are unset
    pyspark_python: str | None = None
    pyspark_driver_python: str | None = None
    # the submitter's SPARK_CONF_DIR files spark-submit would ship (``usecases.conf_dir``)
    conf_files: tuple[tuple[str, str], ...] = ()
    # the Kueue LocalQueue the app waits in (``--queue``; docs/queues.md)
    queue: str | None = None

    def staging(self) -> StagingOptions | None:
        """The staging part of these options, or None without a staging server."""
        if not self.staging_server:
            return None
        return StagingOptions(
            self.staging_server,
            self.staging_ca_file,
            self.init_container_image,
            base_dir=self.staging_base_dir,
            internal_server=self.staging_internal_server,
            token=self.staging_token,
        )


def render_native(
    app: SparkApp, kube_server: str | None, opts: SubmitOptions, *, ids: AppIds | None = None
) -> RenderedApp:
    """Validate and render ``app`` for a native submission (pure apart from the clock).

    With a staging server but no upload yet (a dry run), the init-container shows a
    placeholder resource id."""
    if opts.staging_server or opts.init_container_image:
        app = request_staging(
            app,
            server=opts.staging_server,
            image=opts.init_container_image,
            ca_in_secret=opts.staging_ca_file is not None,
            internal_server=opts.staging_internal_server,
        )
    validate(app)
    ids = ids or _ids(app, opts)
    master = f"k8s://{kube_server}" if kube_server else RenderContext().master
    ctx = RenderContext(
        master=master,
        spark_user=opts.spark_user or _user(),
        submit_time=datetime.now(UTC),
        pyspark_python=opts.pyspark_python or "",
        pyspark_driver_python=opts.pyspark_driver_python or "",
        conf_files=opts.conf_files,
    )
    # the submitting process: the one place user steps a spec names are imported
    rendered = render(app, ids, ctx, check=False, import_steps=True)
    _mark(rendered.driver_pod, opts)
    return rendered


def submit_native(kube: Kube, app: SparkApp, opts: SubmitOptions | None = None) -> Submitted:
    """Create the app's driver pod and dependents; everything or nothing (with a staging
    server, local dependencies are uploaded first and the bundle deleted on failure)."""
    opts = opts or SubmitOptions()
    ids = _ids(app, opts)
    with staged_submission(app, ids, opts.staging(), kube, token=opts.staging_token) as staged:
        rendered = render_native(staged.app, kube.api.configuration.host, opts, ids=ids)
        result = submit_objects(
            kube,
            rendered.driver_pod,
            [*rendered.resources, *staged.objects],
            rendered.pre_resources,
            opts,
            app_id=rendered.app_id,
        )
        if result.existing:
            staged.discard()  # the earlier submission runs with its own bundle
    return result


def submit_objects(
    kube: Kube,
    driver: Obj,
    dependents: list[Obj],
    pre_resources: list[Obj] | None = None,
    opts: SubmitOptions | None = None,
    *,
    app_id: str | None = None,
) -> Submitted:
    """Create a driver pod and its dependents (used by native and template mode)."""
    opts = opts or SubmitOptions()
    driver = copy.deepcopy(driver)
    _mark(driver, opts)
    meta = driver["metadata"]
    namespace = meta.get("namespace") or "default"
    check_ownable(kube, dependents, namespace)
    check_rights(kube, [*(pre_resources or []), *dependents], namespace)
    try:
        created = create_owned(
            kube, driver, dependents, pre_resources=pre_resources, namespace=namespace
        )
    except SubmissionError as exc:
        existing = _same_submission(kube, exc, driver, dependents, pre_resources or [], opts)
        if existing is not None:
            return existing
        raise
    pod = created.owner
    labels = pod["metadata"].get("labels", {})
    record(
        kube,
        pod,
        SUBMITTED,
        f"Submitted natively by sparkplane (app id {app_id or labels.get(APP_SELECTOR_LABEL)})",
    )
    return Submitted(
        name=native_name(pod["metadata"]["name"]),
        namespace=namespace,
        mode=Mode.NATIVE,
        app_id=app_id or labels.get(APP_SELECTOR_LABEL),
        driver_pod=pod["metadata"]["name"],
        objects=[f"{o['kind']}/{o['metadata']['name']}" for o in created.objects],
        created=tuple(created.objects),
    )


def check_ownable(kube: Kube, dependents: list[Obj], namespace: str) -> None:
    """Every dependent must be a kind the API serves, namespaced, in the driver's namespace:
    a pod cannot own cluster-scoped objects or objects elsewhere (the garbage collector would
    delete them as orphans). All problems are reported before anything is created."""
    problems: list[Problem] = []
    for i, obj in enumerate(dependents):
        where = f"dependents[{i}] ({obj.get('kind')} {obj.get('metadata', {}).get('name')})"
        try:
            res = kube.resource(obj.get("apiVersion", ""), obj.get("kind", ""))
        except KubeError as exc:
            problems.append(Problem(where, str(exc)))
            continue
        if not res.namespaced:
            problems.append(
                Problem(
                    where,
                    f"{res.kind} is cluster-scoped: the driver pod cannot own it",
                    "create it separately, outside the application",
                )
            )
        ns = obj.get("metadata", {}).get("namespace")
        if ns and ns != namespace:
            problems.append(
                Problem(
                    where,
                    f"namespace {ns!r} differs from the driver's {namespace!r}",
                    "dependents live in the driver's namespace",
                )
            )
    if problems:
        raise ValidationError(problems, subject="application objects")


PREFLIGHT_KINDS: dict[str, str] = {
    "NetworkPolicy": "Spark 4.2+ creates a NetworkPolicy per app (only its pods reach its "
    "executors)",
}
"""Kinds a submission asks the API server about before creating anything (a
SelfSubjectAccessReview each), with why it makes them: kinds that a role written for older
Spark versions may not grant. The core kinds (pods, ConfigMaps, Services) need no question:
without them nothing works, and a refusal rolls back as any failure does."""


def check_rights(kube: Kube, objects: list[Obj], namespace: str) -> None:
    """Refuse, before anything is created, a submission whose identity may not create one of
    the :data:`PREFLIGHT_KINDS` it renders (exit code 6, as any RBAC refusal), naming the
    right and the role that grants it."""
    for kind in sorted({o.get("kind", "") for o in objects} & PREFLIGHT_KINDS.keys()):
        api_version = next(o["apiVersion"] for o in objects if o.get("kind") == kind)
        res = kube.resource(api_version, kind)
        group = api_version.rpartition("/")[0]
        if not _may_create(kube, group, res.plural, namespace):
            raise ForbiddenError(
                f"this identity may not create {res.plural}.{group} in namespace "
                f"{namespace!r}, and the app needs it: {PREFLIGHT_KINDS[kind]}; nothing was "
                f"created. Fix: `kubectl auth can-i create {res.plural}.{group} -n {namespace}`"
                " says no; an admin applies this version's client role: "
                f"`sparkplane rbac client -n {namespace} --apply`",
                code=403,
                reason="Forbidden",
            )


def _may_create(kube: Kube, group: str, resource: str, namespace: str) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": namespace,
                "verb": "create",
                "group": group,
                "resource": resource,
            }
        },
    }
    answer = kube.create(review, None)
    return bool((answer.get("status") or {}).get("allowed"))


def create_resource_once(kube: Kube, cr: dict[str, Any], namespace: str) -> tuple[bool, Obj]:
    """Create a custom resource: (False, the object created), or (True, the object found) if
    the same submission (same submission-id label) already made it. Any other AlreadyExists is
    raised: a name taken by something else."""
    meta = cr["metadata"]
    try:
        return False, kube.create(cr, namespace)
    except AlreadyExistsError:
        current = kube.get(cr["apiVersion"], cr["kind"], meta["name"], namespace)
        wanted = meta.get("labels", {}).get(SUBMISSION_LABEL)
        if not wanted or current["metadata"].get("labels", {}).get(SUBMISSION_LABEL) != wanted:
            raise
        return True, current


def submit_operator(kube: Kube, app: SparkApp, opts: SubmitOptions | None = None) -> Submitted:
    """Create the app as a ``spark.apache.org/v1`` SparkApplication for an operator to run."""
    opts = opts or SubmitOptions()
    validate(app, native=False)  # Apache's operator accepts what spark-submit won't (0 executors)
    return create_custom_resource(kube, render_operator_cr(app), opts, Mode.APACHE)


def labelled(cr: dict[str, Any], opts: SubmitOptions) -> dict[str, Any]:
    """``cr`` with sparkplane's labels: managed-by, and the submission id if there is one."""
    labels = cr.setdefault("metadata", {}).setdefault("labels", {})
    labels[MANAGED_BY] = "sparkplane"
    if opts.submission_id:
        labels[SUBMISSION_LABEL] = label_value(opts.submission_id)
    return cr


def create_custom_resource(
    kube: Kube, cr: dict[str, Any], opts: SubmitOptions, mode: Mode
) -> Submitted:
    """Create a SparkApplication of either operator's API, labelled, once per submission id."""
    meta = labelled(cr, opts)["metadata"]
    namespace = meta.get("namespace") or "default"
    meta["namespace"] = namespace
    existing, made = create_resource_once(kube, cr, namespace)
    kind = "SparkApplication" if mode is Mode.APACHE else "SparkApplication.sparkoperator.k8s.io"
    return Submitted(
        name=meta["name"],
        namespace=namespace,
        mode=mode,
        app_id=None,
        driver_pod=None,
        objects=[f"{kind}/{meta['name']}"],
        existing=existing,
        created=(made,),
    )


def _mark(driver: Obj, opts: SubmitOptions) -> None:
    meta = driver.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    labels.setdefault(MANAGED_BY, "sparkplane")
    if opts.submission_id:
        labels[SUBMISSION_LABEL] = label_value(opts.submission_id)
    if opts.ttl_seconds is not None:
        meta.setdefault("annotations", {})[TTL_KEY] = str(opts.ttl_seconds)


def _same_submission(
    kube: Kube,
    exc: SubmissionError,
    driver: Obj,
    dependents: list[Obj],
    pre_resources: list[Obj],
    opts: SubmitOptions,
) -> Submitted | None:
    """After a failed create: the earlier submission with the same id, if that is what we hit,
    completed if it was left half-made (or removed, raising SubmissionError: ``resume_owned``)."""
    if not opts.submission_id or not isinstance(exc.__cause__, AlreadyExistsError):
        return None
    meta = driver["metadata"]
    namespace = meta.get("namespace") or "default"
    if f"Pod {namespace}/{meta['name']}" in exc.rolled_back:
        return None  # this run made the driver: the name taken was a dependent's
    current = kube.get_or_none("v1", "Pod", meta["name"], namespace)
    if current is None:
        return None
    labels = current["metadata"].get("labels", {})
    if labels.get(SUBMISSION_LABEL) != label_value(opts.submission_id):
        return None
    resumed = resume_owned(
        kube, current, dependents, pre_resources=pre_resources, namespace=namespace
    )
    return Submitted(
        name=native_name(meta["name"]),
        namespace=namespace,
        mode=Mode.NATIVE,
        app_id=labels.get(APP_SELECTOR_LABEL),
        driver_pod=meta["name"],
        objects=[f"Pod/{meta['name']}"],
        existing=True,
        completed=tuple(resumed.added),
        created=(current,),
    )


def _ids(app: SparkApp, opts: SubmitOptions) -> AppIds:
    # spark-submit derives the resource prefix from the full spark.app.name (metadata.name may
    # have been shortened to fit Kubernetes' 63-character limit)
    name = app_name(app)
    if opts.submission_id:
        return AppIds.for_submission(opts.submission_id, name)
    return AppIds.new(name)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "spark"
