"""The driver resources of one attempt of a SparkApplication, built by the native render steps.

Owns what the operator adds around :func:`sparkplane.render.render` (reference §9.8): the CR's
namespace is forced, the operator labels go on every object and (as executor label confs) on the
executors the driver creates, pod-template precedence (``driverSpec``/``executorSpec``
``podTemplateSpec`` wins over ``spark.kubernetes.*.podTemplateFile``, which is then unset; a
template file alone is used when the caller could load it), deterministic names per attempt
(:mod:`sparkplane.operator.core.naming`), ``spark.master`` set only if missing (the prefix from
``spark.master.url.prefix``, as Apache's), and an ownerReference with ``controller: true`` from
every object to the SparkApplication, so deleting the CR garbage-collects the lot.

Called by the reconciler. Pure: template files are read by the caller and passed in
(:mod:`sparkplane.operator.kinds.podtemplates`), and only from the directory the operator was given
(``operator run --pod-template-dir``; none by default): a SparkApplication's author must not
make the operator read its own files (:func:`template_path_problem`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkplane.errors import Problem, ValidationError
from sparkplane.render import RenderContext, render
from sparkplane.spec import SparkApp, collect_problems, load_manifest
from sparkplane.spec.conf import K8S, is_image_key, with_spark_version
from sparkplane.spec.queue import without_pod_queue
from sparkplane.vocab import (
    APACHE_API_VERSION,
    DRIVER_ROLE,
    EXECUTOR_ROLE,
    SPARK_APPLICATION,
    owner_reference,
)

from . import standalone_auth
from .bounds import executor_problems, with_executor_cap
from .naming import (
    DRIVER_POD_NAME_CONF,
    OperatorIds,
    attempt_driver_pod_name,
    attempt_of,
    operator_labels,
)
from .settings import Limits

Obj = dict[str, Any]
ROLES = (DRIVER_ROLE, EXECUTOR_ROLE)
#: Spec fields the operator accepts although native rendering does not create them (yet).
_OPERATOR_ONLY = ("spec.driverHttpRouteList", "spec.driverGrpcRouteList")
MASTER_PREFIX_KEY = "spark.master.url.prefix"


def template_file_key(role: str) -> str:
    return f"{K8S}.{role}.podTemplateFile"


@dataclass(frozen=True)
class AttemptResources:
    """What one attempt creates, in creation order (driver pod last), each owned by the CR."""

    app_id: str
    driver_pod: Obj
    objects: tuple[Obj, ...]

    @property
    def driver_name(self) -> str:
        return str(self.driver_pod["metadata"]["name"])

    def refs(self) -> tuple[tuple[str, str, str], ...]:
        """``(apiVersion, kind, name)`` of every object, driver pod first (for deletion)."""
        ordered = [self.driver_pod, *(o for o in self.objects if o is not self.driver_pod)]
        return tuple((o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in ordered)


def template_files(cr: Mapping[str, Any]) -> dict[str, str]:
    """Role → ``podTemplateFile`` path the caller must load (only where no spec template)."""
    spec = cr.get("spec") or {}
    conf = spec.get("sparkConf") or {}
    out: dict[str, str] = {}
    for role in ROLES:
        path = conf.get(template_file_key(role))
        holder = spec.get(f"{role}Spec") or {}
        if path and not holder.get("podTemplateSpec"):
            out[role] = str(path)
    return out


def template_path_problem(path: str, directory: str | None) -> str:
    """Why the operator must not read ``path`` as a pod template ("" when it may).

    Lexical and pure: ``file://`` is dropped; the path must be absolute, without ``..``, and
    inside ``directory``. The loader also resolves symlinks and checks again.
    """
    if not directory:
        return "this operator reads no pod template files (no --pod-template-dir was given)"
    local = path.removeprefix("file://")
    if "://" in local or not local.startswith("/"):
        return f"{path!r} is not an absolute local path"
    parts = local.split("/")
    if ".." in parts:
        return f"{path!r} contains '..'"
    root = directory.rstrip("/") + "/"
    if not local.startswith(root):
        return f"{path!r} is outside the operator's pod template directory {directory}"
    return ""


def load_app(cr: Mapping[str, Any], templates: Mapping[str, Obj] | None = None) -> SparkApp:
    """The CR as a :class:`SparkApp` ready to render, or raise ValidationError.

    ``templates`` maps a role to the pod template loaded from its ``podTemplateFile``.
    """
    doc = copy.deepcopy(dict(cr))
    meta = doc.setdefault("metadata", {})
    spec = doc.setdefault("spec", {})
    conf = dict(spec.get("sparkConf") or {})
    conf[f"{K8S}.namespace"] = str(meta.get("namespace") or "default")
    version = str((spec.get("runtimeVersions") or {}).get("sparkVersion") or "")
    # as Apache's submission worker, before the image is checked (one rule for every mode)
    images = {k: str(v) for k, v in conf.items() if is_image_key(k)}
    conf.update(with_spark_version(images, version))
    problems: list[Problem] = []
    for role in ROLES:
        path = conf.pop(template_file_key(role), None)
        holder = dict(spec.get(f"{role}Spec") or {})
        if path and not holder.get("podTemplateSpec"):
            loaded = (templates or {}).get(role)
            if loaded is None:
                problems.append(
                    Problem(
                        f"spec.sparkConf[{template_file_key(role)}]",
                        f"pod template file {path!r} could not be read by the operator (it "
                        "reads files only from its --pod-template-dir, if one is set)",
                        f"set spec.{role}Spec.podTemplateSpec instead",
                    )
                )
                continue
            holder["podTemplateSpec"] = {
                k: v for k, v in loaded.items() if k not in ("apiVersion", "kind")
            }
            spec[f"{role}Spec"] = holder
    if problems:
        raise ValidationError(problems, subject=f"SparkApplication {meta.get('name')!r}")
    spec["sparkConf"] = conf
    app = load_manifest(doc)
    found = [p for p in collect_problems(app) if not p.path.startswith(_OPERATOR_ONLY)]
    if found:
        raise ValidationError(found, subject=f"SparkApplication {meta.get('name')!r}")
    return app


def owner_ref(cr: Mapping[str, Any]) -> Obj:
    """The controller reference on everything the operator creates for ``cr`` (it blocks the
    resource's foreground deletion); a resource read without ``apiVersion``/``kind`` (a list
    item) is a SparkApplication."""
    typed = {"apiVersion": APACHE_API_VERSION, "kind": SPARK_APPLICATION, **cr}
    return owner_reference(typed, block_owner_deletion=True)


def _context(conf: Mapping[str, str], ctx: RenderContext | None) -> RenderContext:
    """``spark.master`` as Apache sets it: the user's value, else ``k8s://`` (or
    ``spark.master.url.prefix``) + the in-cluster API server; ``spark.app.name`` only when the
    user set it (Apache leaves it unset: the driver's ``spark-app-name`` label is Spark's
    default, ``spark``)."""
    ctx = dataclasses.replace(ctx or RenderContext(), name_from_metadata=False)
    master = conf.get("spark.master")
    if not master and conf.get(MASTER_PREFIX_KEY):
        master = conf[MASTER_PREFIX_KEY] + ctx.master.split("://", 1)[1]
    return dataclasses.replace(ctx, master=master) if master else ctx


def build_attempt(
    cr: Mapping[str, Any],
    operator_name: str,
    *,
    attempt: int | None = None,
    templates: Mapping[str, Obj] | None = None,
    ctx: RenderContext | None = None,
    limits: Limits | None = None,
    auth_cluster: str | None = None,
) -> AttemptResources:
    """Render the driver resources of ``attempt`` (default: the current one) of ``cr``.

    Raises ValidationError when the spec cannot be rendered, or asks for more executors than
    ``limits`` allow (:mod:`sparkplane.operator.core.bounds`); the reconciler reports it.
    ``auth_cluster``: the SparkCluster of the CR's namespace its ``spark.master`` names (the
    driver gets that cluster's secret: :mod:`sparkplane.operator.core.standalone_auth`).
    """
    meta = cr["metadata"]
    name, namespace = str(meta["name"]), str(meta.get("namespace") or "default")
    number = attempt_of(cr.get("status")) if attempt is None else attempt
    ids = OperatorIds.of(cr, number)
    labels = operator_labels(operator_name, name)
    app = without_pod_queue(load_app(cr, templates))  # the CR's Workload queues it
    limits = limits or Limits()
    if problems := executor_problems(app.spec.spark_conf, limits):
        raise ValidationError(problems, subject=f"SparkApplication {name!r}")
    conf = with_executor_cap(app.spec.spark_conf, limits)
    if first := conf.get(DRIVER_POD_NAME_CONF):
        conf[DRIVER_POD_NAME_CONF] = attempt_driver_pod_name(first, number)
    if auth_cluster:
        conf[standalone_auth.AUTH_CONF] = "true"
        conf.pop(standalone_auth.SECRET_CONF, None)  # the cluster's, from its Secret
    for key, value in labels.items():
        conf.setdefault(f"{K8S}.executor.label.{key}", value)
    app = app.model_copy(update={"spec": app.spec.model_copy(update={"spark_conf": conf})})
    rendered = render(app, ids, _context(conf, ctx), check=False)
    owner = owner_ref(cr)
    objects: list[Obj] = []
    driver: Obj = {}
    for obj in rendered.objects:
        out = copy.deepcopy(obj)
        out_meta = out.setdefault("metadata", {})
        out_meta["namespace"] = namespace
        out_meta.setdefault("labels", {}).update(labels)
        out_meta["ownerReferences"] = [
            *(r for r in out_meta.get("ownerReferences") or [] if not r.get("controller")),
            owner,
        ]
        if obj is rendered.driver_pod:
            if auth_cluster:
                out = standalone_auth.with_client_auth(out, auth_cluster)
            driver = out
        objects.append(out)
    # The driver pod goes last: everything it mounts exists when it starts, and an existing
    # driver pod proves the whole attempt was created (what a reconcile after a crash relies on).
    objects.sort(key=lambda o: o is driver)
    return AttemptResources(app_id=ids.app_id, driver_pod=driver, objects=tuple(objects))
