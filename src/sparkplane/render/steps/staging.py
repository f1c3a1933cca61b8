"""Dependency localization: an init-container fills a shared volume before Spark starts.

Two sources, one init-container (``sparkplane fetch``, image ``initContainer.image``):

- a bundle on a resource staging server (submitter-local jars/files/py-files the submitter
  packed and uploaded; :mod:`sparkplane.usecases.stage`), read with the secret held in the
  Secret :func:`secret_name` that the submitter creates as a dependent of the driver pod;
- http(s) dependencies, when ``spark.kubernetes.sparkplane.localizeRemote=true``.

:func:`localize_dependencies` rewrites the spec (pipeline, before the conf is resolved): those
dependencies become ``file://<DEPS_DIR>/<name>`` (so ``spark.jars``, ``spark.files``,
``spark.submit.pyFiles`` and the primary resource follow), and the executor pod template gets
the init-container, the volumes and the mount. :class:`StagingStep` does the same to the
driver pod. Everything is read from these Spark conf keys (all ``spark.kubernetes.sparkplane.``):

=============================  ==========================================================
``staging.server``             staging server base URL; allows submitter-local files
``staging.internalServer``     the URL pods use, when not ``staging.server`` (e.g. the
                               Service DNS name while the submitter uploads via an Ingress)
``staging.resourceId``         the uploaded bundle (set by the submitter after the upload)
``staging.caInSecret``         ``true``: the Secret holds ``ca.crt`` to trust (HTTPS)
``staging.maxBytes``           the bundle's unpacked size (set by the submitter); the
                               init-container refuses to unpack more (``--max-bytes``)
``initContainer.image``        image with sparkplane installed (default ``SPARKPLANE_IMAGE``)
``initContainer.pullPolicy``   default: ``spark.kubernetes.container.image.pullPolicy``
``localizeRemote``             ``true``: the init-container downloads http(s) dependencies
``localize.uris``              written by the rewrite: the http(s) URIs to download
=============================  ==========================================================

Pure: no I/O; the secret value never appears in anything rendered here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkplane.errors import ValidationError
from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, Obj, append, clone, section, with_volumes
from sparkplane.render.steps.staging_deps import (
    DEPS_DIR,
    Dependency,
    Kind,
    check_names,
    dependencies,
    rewrite,
)
from sparkplane.spec.conf import K8S, mapped_conf, split_list
from sparkplane.spec.models import PodTemplateHolder, SparkApp
from sparkplane.spec.naming import AppIds
from sparkplane.spec.validate import STAGING_SERVER
from sparkplane.version import SPARKPLANE_IMAGE

PREFIX = f"{K8S}.sparkplane"
STAGING_RESOURCE_ID = f"{PREFIX}.staging.resourceId"
STAGING_INTERNAL_SERVER = f"{PREFIX}.staging.internalServer"
STAGING_CA_IN_SECRET = f"{PREFIX}.staging.caInSecret"
STAGING_MAX_BYTES = f"{PREFIX}.staging.maxBytes"
INIT_IMAGE = f"{PREFIX}.initContainer.image"
INIT_PULL_POLICY = f"{PREFIX}.initContainer.pullPolicy"
LOCALIZE_REMOTE = f"{PREFIX}.localizeRemote"
LOCALIZED_URIS = f"{PREFIX}.localize.uris"

DEFAULT_INIT_IMAGE = SPARKPLANE_IMAGE
PENDING_RESOURCE_ID = "pending-upload"
DEFAULT_MAX_BYTES = 2 * 1024**3
"""``--max-bytes`` when the conf names no bound (a dry run before the upload)."""
"""Shown by a dry run: the real id exists only after the upload at submit time."""
INIT_CONTAINER = "sparkplane-fetch"
DEPS_VOLUME = "sparkplane-deps"
SECRET_VOLUME = "sparkplane-staging-secret"
SECRET_MOUNT = "/mnt/sparkplane-staging"
SECRET_KEY = "secret"
CA_KEY = "ca.crt"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"

__all__ = [
    "DEPS_DIR",
    "STAGING_SERVER",
    "StagedDependencies",
    "StagingStep",
    "applies",
    "localize_dependencies",
    "request_staging",
    "secret_name",
    "staged_dependencies",
]


def secret_name(ids: AppIds) -> str:
    """The Secret holding the bundle's download secret (created by the submitter)."""
    return f"{ids.resource_prefix}-staging"


@dataclass(frozen=True)
class StagedDependencies:
    """What the init-container does: fetch a bundle, download URIs, or both."""

    server: str | None = None
    resource_id: str | None = None
    secret_name: str | None = None
    """Set exactly when a bundle is fetched."""
    remote_uris: tuple[str, ...] = ()
    image: str = DEFAULT_INIT_IMAGE
    pull_policy: str = "IfNotPresent"
    ca_in_secret: bool = False
    dest: str = DEPS_DIR
    max_bytes: int = DEFAULT_MAX_BYTES
    """The most the bundle may unpack to (its exact unpacked size, from the submitter)."""

    def command(self) -> list[str]:
        """The init-container's command line."""
        cmd = ["sparkplane", "fetch", "--dest", self.dest]
        if self.server and self.resource_id:
            cmd += ["--server", self.server, "--resource-id", self.resource_id]
            cmd += ["--secret-file", f"{SECRET_MOUNT}/{SECRET_KEY}"]
            cmd += ["--max-bytes", str(self.max_bytes)]
            if self.ca_in_secret:
                cmd += ["--ca-file", f"{SECRET_MOUNT}/{CA_KEY}"]
        for uri in self.remote_uris:
            cmd += ["--uri", uri]
        return cmd

    def init_container(self) -> Obj:
        mounts: list[Obj] = [{"mountPath": self.dest, "name": DEPS_VOLUME}]
        if self.secret_name:
            mounts.append({"mountPath": SECRET_MOUNT, "name": SECRET_VOLUME, "readOnly": True})
        return {
            "name": INIT_CONTAINER,
            "image": self.image,
            "imagePullPolicy": self.pull_policy,
            "command": self.command(),
            "volumeMounts": mounts,
        }

    def volumes(self) -> list[Obj]:
        vols: list[Obj] = [{"name": DEPS_VOLUME, "emptyDir": {}}]
        if self.secret_name:
            vols.append({"name": SECRET_VOLUME, "secret": {"secretName": self.secret_name}})
        return vols

    def main_mount(self) -> Obj:
        """The Spark container's mount of the dependency directory (read-only)."""
        return {"mountPath": self.dest, "name": DEPS_VOLUME, "readOnly": True}


def staged_dependencies(conf: Mapping[str, str], ids: AppIds) -> StagedDependencies | None:
    """The init-container's work as the conf of a localized app describes it, or None."""
    server = conf.get(STAGING_INTERNAL_SERVER) or conf.get(STAGING_SERVER)
    resource_id = conf.get(STAGING_RESOURCE_ID)
    bundle = bool(server and resource_id)
    uris = tuple(split_list(conf.get(LOCALIZED_URIS)))
    if not bundle and not uris:
        return None
    return StagedDependencies(
        server=server if bundle else None,
        resource_id=resource_id if bundle else None,
        secret_name=secret_name(ids) if bundle else None,
        remote_uris=uris,
        image=conf.get(INIT_IMAGE) or DEFAULT_INIT_IMAGE,
        pull_policy=(
            conf.get(INIT_PULL_POLICY)
            or conf.get(f"{K8S}.container.image.pullPolicy")
            or "IfNotPresent"
        ),
        ca_in_secret=conf.get(STAGING_CA_IN_SECRET, "").lower() == "true",
        max_bytes=_max_bytes(conf.get(STAGING_MAX_BYTES)),
    )


def _max_bytes(value: str | None) -> int:
    """The conf's unpacked-size bound; absent or unreadable: the default (never unbounded)."""
    try:
        bound = int(value or "")
    except ValueError:
        return DEFAULT_MAX_BYTES
    return bound if bound >= 0 else DEFAULT_MAX_BYTES


def request_staging(
    app: SparkApp,
    *,
    server: str | None = None,
    resource_id: str | None = None,
    image: str | None = None,
    ca_in_secret: bool = False,
    internal_server: str | None = None,
    max_bytes: int | None = None,
) -> SparkApp:
    """A copy of ``app`` whose sparkConf asks for staging (the submitter's options)."""
    conf = dict(app.spec.spark_conf)
    for key, value in (
        (STAGING_SERVER, server),
        (STAGING_INTERNAL_SERVER, internal_server),
        (STAGING_RESOURCE_ID, resource_id),
        (INIT_IMAGE, image),
        (STAGING_CA_IN_SECRET, "true" if ca_in_secret else None),
        (STAGING_MAX_BYTES, None if max_bytes is None else str(max_bytes)),
    ):
        if value is not None:
            conf[key] = value
    return app.model_copy(update={"spec": app.spec.model_copy(update={"spark_conf": conf})})


def _chosen(app: SparkApp) -> list[Dependency]:
    conf = mapped_conf(app)
    staging = bool(conf.get(STAGING_SERVER))
    remote = conf.get(LOCALIZE_REMOTE, "").lower() == "true"
    return [
        d
        for d in dependencies(app)
        if (d.kind is Kind.LOCAL and staging) or (d.kind is Kind.REMOTE and remote)
    ]


def localize_dependencies(app: SparkApp, ids: AppIds) -> SparkApp:
    """Point the localized dependencies at ``file://`` copies and add the init-container to
    the executor template; ``app`` itself when there is nothing to localize (idempotent)."""
    chosen = _chosen(app)
    if not chosen:
        return app
    problems = check_names(chosen)
    if problems:
        raise ValidationError(problems, subject=f"dependencies of {app.name!r}")
    out = rewrite(app, lambda dep: dep.kind in (Kind.LOCAL, Kind.REMOTE) and dep in chosen)
    conf = dict(out.spec.spark_conf)
    remote = list(dict.fromkeys(d.source for d in chosen if d.kind is Kind.REMOTE))
    if remote:
        conf[LOCALIZED_URIS] = ",".join(remote)
    if any(d.kind is Kind.LOCAL for d in chosen):
        conf.setdefault(STAGING_RESOURCE_ID, PENDING_RESOURCE_ID)
    staged = staged_dependencies({**mapped_conf(out), **conf}, ids)
    assert staged is not None
    holder = out.spec.executor_spec or PodTemplateHolder()
    template = _with_init(holder.pod_template_spec or {}, staged, conf)
    return out.model_copy(
        update={
            "spec": out.spec.model_copy(
                update={
                    "spark_conf": conf,
                    "executor_spec": holder.model_copy(update={"pod_template_spec": template}),
                }
            )
        }
    )


def _with_init(template: Obj, staged: StagedDependencies, conf: Mapping[str, str]) -> Obj:
    """An executor pod template with the init-container, volumes and the Spark mount."""
    out = clone(template)
    spec = section(out, "spec")
    append(spec, "initContainers", [staged.init_container()])
    append(spec, "volumes", staged.volumes())
    containers = spec.setdefault("containers", [])
    wanted = conf.get(f"{K8S}.executor.podTemplateContainerName")
    index = next((i for i, c in enumerate(containers) if c.get("name") == wanted), 0)
    if not containers:
        containers.append({"name": EXECUTOR_CONTAINER})
    append(containers[index], "volumeMounts", [staged.main_mount()])
    return out


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When the driver needs :class:`StagingStep` (``app`` localized, ``conf`` its mapped
    conf): a staged bundle to fetch, or remote URIs to download."""
    bundle = bool(conf.get(STAGING_SERVER) and conf.get(STAGING_RESOURCE_ID))
    return bundle or bool(split_list(conf.get(LOCALIZED_URIS)))


class StagingStep:
    """Give the driver pod the init-container, its volumes and the Spark container's mount."""

    name = "staging"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        staged = staged_dependencies(conf.conf, conf.ids)
        assert staged is not None, "the staging step applies only to a localized app"
        pod, container = with_volumes(
            state.pod, state.container, staged.volumes(), [staged.main_mount()]
        )
        append(section(pod, "spec"), "initContainers", [staged.init_container()])
        return state.evolve(pod=pod, container=container)
