"""The submitter's side of resource staging: pack, upload, and hand the secret to the driver.

Called by :func:`sparkplane.usecases.create.submit_native` when a staging server is given.
:func:`staged_submission` finds the submitter-local dependencies of a spec (paths without a
scheme, or ``file:``), checks them, packs them into a tar.gz streamed to a temp file, uploads it
with the owner description ``{namespace, labels: {spark-app-selector: <app id>}, type: Pod}``
and yields the spec to render (with the resource id in its conf) plus the Secret holding the
download secret, to be created as a dependent of the driver pod (so it goes with the driver).

The upload is authorised by ``StagingOptions.token``, else ``$SPARKPLANE_STAGING_TOKEN`` (an
upload secret of the server), else the bearer token of the kubeconfig identity the submission
uses (:func:`bearer_token`): the server asks the cluster whether that identity may create pods
in the namespace. Client-certificate identities have no token to forward; they need one of the
first two. If the submission fails after the upload, or meets an earlier submission with the
same id, the bundle is deleted on the server (``DELETE``, authorised by its secret); if even
that fails the error says so: a never-downloaded bundle expires server-side
(``--unused-expiry``). The rendering itself stays pure (:mod:`sparkplane.render.steps.staging`).
The staging client is synchronous like the rest of the submit (it blocks this thread for the
transfer, no event loop), so a submit works the same from a script, a worker thread or a
notebook cell.
"""

from __future__ import annotations

import base64
import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkplane.errors import Problem, SparkplaneError, SubmissionError, ValidationError
from sparkplane.kube import Kube
from sparkplane.model.apps import MANAGED_BY
from sparkplane.render.steps.staging import (
    CA_KEY,
    SECRET_KEY,
    STAGING_SERVER,
    localize_dependencies,
    request_staging,
    secret_name,
)
from sparkplane.render.steps.staging_deps import Dependency, Kind, check_names, dependencies
from sparkplane.settings import STAGING_TOKEN_ENV
from sparkplane.spec import AppIds, SparkApp, mapped_conf, validate
from sparkplane.staging.bundle import pack_bundle_measured
from sparkplane.staging.client import StagedResource, delete_bundle, upload_bundle
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.yamlio import read_bytes

Obj = dict[str, Any]
OWNER_LABEL = "spark-app-selector"
TOKEN_ENV = STAGING_TOKEN_ENV  # the variable Settings.staging_token comes from


@dataclass(frozen=True)
class StagingOptions:
    """Where and how to stage a submission's local dependencies."""

    server: str
    """Base URL of the resource staging server (``http(s)://host:port``)."""
    ca_file: Path | None = None
    """CA bundle to trust for an HTTPS server; also shipped to the init-container."""
    init_image: str | None = None
    """Image of the init-container (default ``sparkplane.SPARKPLANE_IMAGE``)."""
    base_dir: Path | None = None
    """Relative local paths are resolved here (default: the working directory)."""
    internal_server: str | None = None
    """The URL pods download from, when it differs from ``server`` (e.g. the Service DNS
    name, while this submitter uploads through an Ingress or a port-forward)."""
    token: str | None = None
    """The upload credential (``Settings.staging_token``: ``$SPARKPLANE_STAGING_TOKEN``), else
    the kubeconfig
    identity's bearer token."""


@dataclass
class StagedUpload:
    """The outcome of staging: the spec to render and what to create with the driver."""

    app: SparkApp
    """The spec with the staging conf (server, resource id) set."""
    objects: list[Obj] = field(default_factory=list)
    """The Secret with the download secret: a dependent of the driver pod."""
    resource: StagedResource | None = None
    """The uploaded bundle, or None when nothing was local."""
    files: dict[str, Path] = field(default_factory=dict)
    """Bundle member name -> the local file it came from."""
    options: StagingOptions | None = None

    def discard(self) -> str:
        """Delete the bundle on the server (best effort); a sentence saying what happened."""
        if self.resource is None or self.options is None:
            return ""
        rid = self.resource.resource_id
        try:
            delete_bundle(
                self.options.server, rid, self.resource.secret, ca_file=self.options.ca_file
            )
        except SparkplaneError as exc:
            return (
                f"the staged bundle {rid} could not be deleted ({exc}); the staging server "
                "deletes it when its unused expiry passes"
            )
        return f"the staged bundle {rid} was deleted"


def bearer_token(kube: Kube | None) -> str | None:
    """The bearer token the gateway authenticates with (refreshed first), or None for
    client-certificate identities."""
    if kube is None:
        return None
    cfg = kube.api.configuration
    hook = getattr(cfg, "refresh_api_key_hook", None)
    if hook is not None:
        with contextlib.suppress(Exception):  # a failing refresh leaves the last token
            hook(cfg)
    keys = getattr(cfg, "api_key", None) or {}
    value = str(keys.get("BearerToken") or keys.get("authorization") or "")
    scheme, _, rest = value.partition(" ")
    token = rest if scheme.lower() == "bearer" else value
    return token.strip() or None


def _upload_token(options: StagingOptions, kube: Kube | None) -> str | None:
    return options.token or bearer_token(kube)


def local_files(app: SparkApp, base_dir: Path | None = None) -> dict[str, Path]:
    """Bundle name -> local file for every submitter-local dependency of ``app``.

    Raises :class:`ValidationError` listing every missing file, directory and name clash."""
    base = base_dir or Path.cwd()
    deps: list[Dependency] = [d for d in dependencies(app) if d.kind is Kind.LOCAL]
    problems = check_names(deps)
    files: dict[str, Path] = {}
    for dep in deps:
        path = (base / Path(dep.source).expanduser()).resolve()
        if not path.exists():
            problems.append(Problem(dep.path, f"{dep.uri!r}: no such file ({path})"))
        elif not path.is_file():
            problems.append(Problem(dep.path, f"{dep.uri!r} is not a regular file ({path})"))
        elif dep.name:
            files.setdefault(dep.name, path)
    if problems:
        raise ValidationError(problems, subject=f"local dependencies of {app.name!r}")
    return files


def staging_secret(ids: AppIds, namespace: str, secret: str, *, ca_pem: bytes | None = None) -> Obj:
    """The Secret the init-container reads (no ownerReferences: the submitter adds them)."""
    data = {SECRET_KEY: base64.b64encode(secret.encode()).decode()}
    if ca_pem is not None:
        data[CA_KEY] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": secret_name(ids),
            "namespace": namespace,
            "labels": {OWNER_LABEL: ids.app_id, "spark-role": "driver", MANAGED_BY: "sparkplane"},
        },
        "data": data,
    }


def stage(
    app: SparkApp, ids: AppIds, options: StagingOptions, kube: Kube | None = None
) -> StagedUpload:
    """Validate, pack and upload ``app``'s local dependencies (nothing uploaded if none)."""
    requested = request_staging(
        app,
        server=options.server,
        image=options.init_image,
        ca_in_secret=options.ca_file is not None,
        internal_server=options.internal_server,
    )
    validate(requested)
    localize_dependencies(requested, ids)  # name clashes surface before anything is uploaded
    files = local_files(requested, options.base_dir)
    if not files:
        return StagedUpload(requested, options=options)
    namespace = mapped_conf(requested).get("spark.kubernetes.namespace") or "default"
    owner = ResourceOwner(namespace, {OWNER_LABEL: ids.app_id})
    # bounded and never a FIFO that would wait forever (yamlio's reader of local files)
    ca_pem = read_bytes(options.ca_file, subject="--staging-ca-file") if options.ca_file else None
    with tempfile.TemporaryDirectory(prefix="sparkplane-bundle-") as tmp:
        bundle = Path(tmp) / "bundle.tar.gz"
        _, unpacked = pack_bundle_measured(files, bundle)
        token = _upload_token(options, kube)
        try:
            resource = upload_bundle(
                options.server, bundle, owner, ca_file=options.ca_file, token=token
            )
        except StagingClientError as exc:
            if exc.status != 401 or token:
                raise
            raise StagingClientError(
                f"{exc}. The kubeconfig identity has no bearer token to show the staging server "
                f"(a client certificate?): set {TOKEN_ENV} to one of the server's upload "
                "secrets, or submit with a token kubeconfig (`sparkplane kubeconfig`)",
                status=exc.status,
                code=exc.code,
            ) from exc
    return StagedUpload(
        request_staging(requested, resource_id=resource.resource_id, max_bytes=unpacked),
        [staging_secret(ids, namespace, resource.secret, ca_pem=ca_pem)],
        resource,
        files,
        options,
    )


@contextlib.contextmanager
def staged_submission(
    app: SparkApp,
    ids: AppIds,
    options: StagingOptions | None,
    kube: Kube | None = None,
    *,
    token: str | None = None,
) -> Iterator[StagedUpload]:
    """Stage ``app`` for the block; if the block fails, delete the bundle and say so.

    Without ``options``, a ``spark.kubernetes.sparkplane.staging.server`` in the spec's
    sparkConf is used the same way, with ``token``. ``kube`` is the submitting gateway: its
    bearer token authorises the upload unless a token is given (:func:`bearer_token`)."""
    if options is None:
        server = mapped_conf(app).get(STAGING_SERVER)
        if not server:
            yield StagedUpload(app)
            return
        options = StagingOptions(server, token=token)
    staged = stage(app, ids, options, kube)
    try:
        yield staged
    except SubmissionError as exc:
        note = staged.discard()
        if not note:
            raise
        raise SubmissionError(
            f"{exc}; {note}", rolled_back=exc.rolled_back, leaked=exc.leaked
        ) from exc
    except BaseException:
        staged.discard()
        raise
