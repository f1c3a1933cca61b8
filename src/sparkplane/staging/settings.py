"""Settings of the resource staging server, every key with its type and default.

Built by the CLI (``sparkplane staging serve`` flags) or by tests; read by the server and the
clean-up loop. Plain data: no I/O here.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.cleanup import CleanupPolicy
from sparkplane.staging.errors import StagingError
from sparkplane.staging.tokens import DEFAULT_ITERATIONS

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class StagingSettings:
    """How the staging server listens, stores and cleans up."""

    host: str = "127.0.0.1"
    """Address to bind: loopback unless told otherwise (``--host 0.0.0.0`` in a pod)."""
    port: int = 10000
    """TCP port (the apache-spark-on-k8s fork used 10000 too)."""
    store: str = ""
    """``s3://BUCKET/PREFIX``: bundles and their records in object storage (S3, SeaweedFS,
    MinIO), so several replicas serve one store (:mod:`sparkplane.staging.s3`; endpoint and keys
    from the AWS environment). Empty: ``storage_dir`` and ``db_path`` on this server's disk."""
    storage_dir: Path = Path("/var/lib/sparkplane-staging/bundles")
    """Local-disk store root. One server per directory: start-up sweeps its temp files."""
    db_path: Path = Path("/var/lib/sparkplane-staging/metadata.sqlite3")
    """SQLite metadata file; keep it on the same persistent volume as the bundles."""
    max_bundle_bytes: int = 2 * GiB
    """Uploads larger than this are refused with 413."""
    total_quota_bytes: int = 16 * GiB
    """All stored bundles together (plus uploads in flight); over it: 507. 0 = unlimited."""
    namespace_quota_bytes: int = 4 * GiB
    """The bundles owned in one namespace; over it: 507. 0 = unlimited."""
    upload_secrets: tuple[UploadSecret, ...] = ()
    """Shared upload secrets (``--upload-secret-file``), for clients without a token."""
    allow_anonymous_uploads: bool = False
    """Accept uploads without credentials (a loopback demo only)."""
    auth_cache_seconds: float = 60.0
    """How long a confirmed Kubernetes uploader is trusted without asking again."""
    max_connections: int = 1000
    """Open connections; at the cap the longest-idle one is closed for a new one."""
    idle_timeout_seconds: float = 15.0
    """A connection without a request in progress (incl. slow headers) is closed after this."""
    body_timeout_seconds: float = 60.0
    """An upload body that sends nothing for this long is given up."""
    max_uploads: int = 64
    """Uploads received at once; more get 503."""
    max_uploads_per_client: int = 8
    """Uploads at once per uploader identity; more get 429."""
    chunk_bytes: int = 1 * MiB
    """Read/write unit when streaming; bounds per-transfer memory."""
    fsync: bool = True
    """fsync each bundle before publishing it (durability across power loss)."""
    unused_expiry_seconds: float = 30 * 60
    """A bundle never downloaded is deleted after this long."""
    owner_grace_seconds: float = 60.0
    """After a first download, wait this long before the owner check may delete a bundle."""
    cleanup_interval_seconds: float = 60.0
    """How often the clean-up loop runs (it asks Kubernetes about downloaded bundles)."""
    max_age_seconds: float = 7 * 24 * 3600.0
    """A bundle whose owner cannot be checked is deleted once this old (0 = never)."""
    max_failed_attempts: int = 10
    """Failed attempts per (client address, namespace or bundle) within the window; then 429."""
    failed_attempts_window_seconds: float = 60.0
    """Sliding window for ``max_failed_attempts``."""
    secret_hash_iterations: int = DEFAULT_ITERATIONS
    """PBKDF2 iterations for hashing secrets at rest."""
    tls_cert: Path | None = None
    """PEM certificate chain; with ``tls_key`` the server speaks HTTPS only."""
    tls_key: Path | None = None
    """PEM private key for ``tls_cert``."""

    @property
    def cleanup_policy(self) -> CleanupPolicy:
        return CleanupPolicy(
            unused_expiry=self.unused_expiry_seconds,
            owner_grace=self.owner_grace_seconds,
            max_age=self.max_age_seconds,
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """A server TLS context from ``tls_cert``/``tls_key``, or None for plain HTTP."""
        if self.tls_cert is None and self.tls_key is None:
            return None
        if self.tls_cert is None or self.tls_key is None:
            raise StagingError("TLS needs both a certificate and a key (--tls-cert, --tls-key)")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.tls_cert, self.tls_key)
        except (OSError, ssl.SSLError) as exc:
            raise StagingError(
                f"cannot load TLS certificate {self.tls_cert} / key {self.tls_key}: {exc}"
            ) from exc
        return context
