"""``sparkplane staging serve`` (the resource staging server) and ``sparkplane fetch`` (the
init-container step that downloads staged files).

The root command (:mod:`sparkplane.cli.main`) mounts :data:`app` as ``staging`` and
:data:`fetch_app` as ``fetch``; the server container runs ``sparkplane staging serve``.
Commands only parse flags and call the server (:mod:`sparkplane.staging.server`) or the client
(:mod:`sparkplane.staging.client`); no domain logic lives here.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer

from sparkplane.errors import SparkplaneError
from sparkplane.staging.auth import load_upload_secrets
from sparkplane.staging.client import fetch, localize_uris
from sparkplane.staging.settings import StagingSettings

_D = StagingSettings()
SECRET_ENV = "SPARKPLANE_STAGING_SECRET"


def _fail(exc: SparkplaneError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(exc.exit_code)


def _mb(value: int) -> int:
    return value // (1024 * 1024)


app = typer.Typer(name="staging", help="The resource staging server.", no_args_is_help=True)
fetch_app = typer.Typer(name="fetch")


@app.callback()
def staging() -> None:
    """Stage local dependencies for Spark pods (see docs: resource staging server)."""


@app.command()
def serve(
    *,
    host: Annotated[
        str, typer.Option(help="Address to bind (loopback; 0.0.0.0 for other machines).")
    ] = _D.host,
    port: Annotated[int, typer.Option(help="TCP port.")] = _D.port,
    store: Annotated[
        str,
        typer.Option(
            help="s3://BUCKET/PREFIX: bundles and their records in object storage, so several "
            "replicas serve one store (endpoint and keys: the AWS environment, e.g. "
            "AWS_ENDPOINT_URL); default: --storage-dir and --db-path on this machine.",
        ),
    ] = _D.store,
    storage_dir: Annotated[Path, typer.Option(help="Bundle directory.")] = _D.storage_dir,
    db_path: Annotated[Path, typer.Option(help="SQLite metadata file.")] = _D.db_path,
    max_bundle_mb: Annotated[int, typer.Option(help="Upload size limit (MiB).")] = _mb(
        _D.max_bundle_bytes
    ),
    total_quota_mb: Annotated[
        int, typer.Option(help="All stored bundles (MiB; 0 = unlimited).")
    ] = _mb(_D.total_quota_bytes),
    namespace_quota_mb: Annotated[
        int, typer.Option(help="Bundles per owner namespace (MiB; 0 = unlimited).")
    ] = _mb(_D.namespace_quota_bytes),
    upload_secret_file: Annotated[
        Path | None,
        typer.Option(help="Upload secrets, one 'name:secret[:ns1,ns2]' per line."),
    ] = None,
    allow_anonymous_uploads: Annotated[
        bool,
        typer.Option(
            "--allow-anonymous-uploads", help="Accept uploads without credentials (demo)."
        ),
    ] = False,
    unused_expiry: Annotated[
        float, typer.Option(help="Seconds before a never-downloaded bundle is deleted.")
    ] = _D.unused_expiry_seconds,
    max_age: Annotated[
        float, typer.Option(help="Seconds before a bundle whose owner cannot be checked goes.")
    ] = _D.max_age_seconds,
    cleanup_interval: Annotated[
        float, typer.Option(help="Seconds between clean-up rounds.")
    ] = _D.cleanup_interval_seconds,
    max_failed_attempts: Annotated[
        int, typer.Option(help="Failures per client and namespace/bundle per window; 429.")
    ] = _D.max_failed_attempts,
    max_connections: Annotated[
        int, typer.Option(help="Open connections (the longest-idle one makes room).")
    ] = _D.max_connections,
    idle_timeout: Annotated[
        float, typer.Option(help="Seconds before a connection without a request is closed.")
    ] = _D.idle_timeout_seconds,
    body_timeout: Annotated[
        float, typer.Option(help="Seconds an upload body may stall.")
    ] = _D.body_timeout_seconds,
    max_uploads: Annotated[int, typer.Option(help="Uploads at once.")] = _D.max_uploads,
    max_uploads_per_client: Annotated[
        int, typer.Option(help="Uploads at once per uploader.")
    ] = _D.max_uploads_per_client,
    tls_cert: Annotated[Path | None, typer.Option(help="PEM certificate (HTTPS).")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="PEM private key (HTTPS).")] = None,
    fsync: Annotated[
        bool, typer.Option("--fsync/--no-fsync", help="fsync bundles before publishing.")
    ] = _D.fsync,
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Kubeconfig: owner clean-up and uploader token reviews."),
    ] = None,
    context: Annotated[str | None, typer.Option(help="Kubeconfig context.")] = None,
    in_cluster: Annotated[
        bool, typer.Option("--in-cluster", help="Use the pod's service account.")
    ] = False,
) -> None:
    """Run the resource staging server until interrupted.

    Uploads need a credential: with cluster credentials (--kubeconfig, --context or
    --in-cluster) the bearer token of an identity that may create pods in the owner
    namespace (TokenReview + SubjectAccessReview); with --upload-secret-file one of its
    secrets. Without cluster credentials, downloaded bundles expire at --max-age.
    """
    from sparkplane.staging.server import serve as run

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        settings = StagingSettings(
            host=host,
            port=port,
            store=store,
            storage_dir=storage_dir,
            db_path=db_path,
            max_bundle_bytes=max_bundle_mb * 1024 * 1024,
            total_quota_bytes=total_quota_mb * 1024 * 1024,
            namespace_quota_bytes=namespace_quota_mb * 1024 * 1024,
            upload_secrets=load_upload_secrets(upload_secret_file) if upload_secret_file else (),
            allow_anonymous_uploads=allow_anonymous_uploads,
            unused_expiry_seconds=unused_expiry,
            max_age_seconds=max_age,
            cleanup_interval_seconds=cleanup_interval,
            max_failed_attempts=max_failed_attempts,
            max_connections=max_connections,
            idle_timeout_seconds=idle_timeout,
            body_timeout_seconds=body_timeout,
            max_uploads=max_uploads,
            max_uploads_per_client=max_uploads_per_client,
            tls_cert=tls_cert,
            tls_key=tls_key,
            fsync=fsync,
        )
        checker, reviewer = None, None
        if in_cluster or kubeconfig or context:
            from sparkplane.staging.kube_owner import kube_services

            checker, reviewer = kube_services(kubeconfig, context, in_cluster=in_cluster)
        run(settings, checker, reviewer)
    except SparkplaneError as exc:
        raise _fail(exc) from exc


@fetch_app.command("fetch")
def fetch_command(
    *,
    dest: Annotated[Path, typer.Option(help="Directory to fill (the shared volume).")],
    server: Annotated[
        str | None, typer.Option(envvar="SPARKPLANE_STAGING_URL", help="Staging server base URL.")
    ] = None,
    resource_id: Annotated[
        str | None, typer.Option(envvar="SPARKPLANE_STAGING_RESOURCE_ID", help="Bundle id.")
    ] = None,
    secret_file: Annotated[
        Path | None,
        typer.Option(
            envvar="SPARKPLANE_STAGING_SECRET_FILE",
            help=f"File holding the bundle secret (a mounted Secret); or set ${SECRET_ENV}.",
        ),
    ] = None,
    uri: Annotated[
        list[str] | None, typer.Option(help="Remote http(s) dependency to download; repeatable.")
    ] = None,
    ca_file: Annotated[Path | None, typer.Option(help="CA bundle to trust for HTTPS.")] = None,
    max_bytes: Annotated[int | None, typer.Option(help="Refuse bundles unpacking larger.")] = None,
) -> None:
    """Download a staged bundle and/or remote dependencies into DEST (init-container step)."""
    try:
        if server or resource_id:
            if not (server and resource_id):
                raise typer.BadParameter("--server and --resource-id go together")
            if secret_file is not None:
                secret = secret_file.read_text().strip()
            else:
                secret = os.environ.get(SECRET_ENV, "").strip()
            if not secret:
                raise typer.BadParameter(f"give --secret-file or set ${SECRET_ENV}")
            names = fetch(server, resource_id, secret, dest, ca_file=ca_file, max_bytes=max_bytes)
            typer.echo(f"unpacked {len(names)} entries of bundle {resource_id} into {dest}")
        if uri:
            localized = localize_uris(uri, dest, ca_file=ca_file)
            for source, local in localized.items():
                typer.echo(f"{source} -> {local}")
    except SparkplaneError as exc:
        raise _fail(exc) from exc
    except OSError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
