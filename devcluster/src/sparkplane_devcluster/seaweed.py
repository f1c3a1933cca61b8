"""The dev cluster's S3-compatible object store: SeaweedFS, built from Go modules, one process.

Why SeaweedFS: Apache-2.0, one Go binary (``weed``) that runs its master, volume server, filer
and S3 gateway in one process (``weed server -filer -s3``), with static S3 identities whose
actions can be scoped to a bucket path (``Read:bucket/prefix/*``), which is what per-namespace
credentials need. MinIO's server is AGPL; Ceph is far too big for a laptop.

Build: a throw-away module requiring ``github.com/seaweedfs/seaweedfs`` at :data:`SEAWEEDFS`
(the Go proxy's pseudo-version of the upstream commit) with the one ``replace`` line of its
go.mod copied (``go install`` refuses a module with replaces), ``go build ./weed``; cached in
``<cache>/bin/seaweedfs-v<version>/weed`` like the control plane (:mod:`.build`), built by
``dev-cluster build`` and ``up``.

Run (always, by ``up``): every port from the cluster's port base (:class:`.components.Ports`),
bound to 127.0.0.1, telemetry off, Iceberg/Lance endpoints off, data in
``<state>/seaweedfs`` (kept across restarts, deleted by ``down --purge``). Credentials: random
per state directory, written once to ``<state>/seaweedfs/s3.json`` (mode 0600): an admin
identity and, for each of :data:`TENANT_NAMESPACES`, a tenant identity allowed only under
``BUCKET/logs/<namespace>/`` (the log archive's per-namespace prefix). ``up`` creates
:data:`BUCKET`. Pods on the real node reach the gateway through a relay on the host end of the
node's link (``http://10.217.<i>.1:<s3 port>``, like the API server's), listed in
:class:`S3Access` as ``pod_endpoint``.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sparkplane.errors import DevClusterError
from sparkplane_devcluster import build

SEAWEEDFS = "0.0.0-20261109003541-7506e5f91cd6"
MODULE = "github.com/seaweedfs/seaweedfs"
REPLACES = ("github.com/tyler-smith/go-bip39=github.com/cosmos/go-bip39@v1.0.0",)
"""The ``replace`` lines of SeaweedFS's go.mod at :data:`SEAWEEDFS` (a wrapper must repeat them)."""
BUCKET = "sparkplane"
ARCHIVE_PREFIX = "logs"
REGION = "us-east-1"
TENANT_NAMESPACES = ("default", "spark-jobs")
"""Namespaces with their own scoped identity (the dev cluster's Spark namespaces)."""
TENANT_ACTIONS = ("Read", "Write", "List", "Tagging")


def weed_path(cache_dir: Path) -> Path:
    return cache_dir / "bin" / f"seaweedfs-v{SEAWEEDFS}" / "weed"


def ensure_weed(cache_dir: Path, progress: build.Progress = lambda _: None) -> Path:
    """The cached ``weed`` binary, built first if missing (a few minutes on 2 cores)."""
    path = weed_path(cache_dir)
    if os.access(path, os.X_OK):
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    with build.lock(cache_dir / "seaweedfs.lock"):
        if not os.access(path, os.X_OK):
            progress(f"building SeaweedFS {SEAWEEDFS} from Go modules (once)")
            logs = cache_dir / "logs"
            logs.mkdir(exist_ok=True)
            build.build_module(
                build.go_command(),
                f"{MODULE}@v{SEAWEEDFS}",
                [f"{MODULE}/weed"],
                path.parent,
                logs / "build-seaweedfs.log",
                binary="weed",
                replaces=REPLACES,
            )
    return path


@dataclass(frozen=True)
class Keys:
    """One S3 identity's access key pair."""

    access_key: str
    secret_key: str


@dataclass(frozen=True)
class S3Access:
    """How to reach the dev cluster's S3 and with which keys (``<state>/seaweedfs/s3.json``)."""

    endpoint: str
    region: str
    bucket: str
    archive: str
    admin: Keys
    tenants: dict[str, Keys] = field(default_factory=dict)
    pod_endpoint: str | None = None

    def env(self, namespace: str | None = None) -> dict[str, str]:
        """The AWS variables of the admin (or of ``namespace``'s tenant identity)."""
        keys = self.tenants[namespace] if namespace else self.admin
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": keys.access_key,
            "AWS_SECRET_ACCESS_KEY": keys.secret_key,
        }

    def client(self, namespace: str | None = None) -> Any:
        """A boto3 S3 client of the admin (or of ``namespace``'s tenant identity)."""
        import boto3

        keys = self.tenants[namespace] if namespace else self.admin
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=keys.access_key,
            aws_secret_access_key=keys.secret_key,
        )

    @classmethod
    def load(cls, path: Path) -> S3Access:
        raw: dict[str, Any] = json.loads(path.read_text())
        raw["admin"] = Keys(**raw["admin"])
        raw["tenants"] = {ns: Keys(**k) for ns, k in (raw.get("tenants") or {}).items()}
        return cls(**raw)


def _keys() -> Keys:
    return Keys(secrets.token_hex(10).upper(), secrets.token_urlsafe(30))


def identities(access: S3Access) -> dict[str, Any]:
    """SeaweedFS's S3 config: the admin, and one identity per tenant namespace scoped to its
    archive prefix (reads, writes and listings under ``BUCKET/logs/<ns>/`` only)."""

    def ident(name: str, keys: Keys, actions: list[str]) -> dict[str, Any]:
        creds = [{"accessKey": keys.access_key, "secretKey": keys.secret_key}]
        return {"name": name, "credentials": creds, "actions": actions}

    out = [ident("sparkplane-admin", access.admin, ["Admin", "Read", "Write", "List", "Tagging"])]
    for ns, keys in sorted(access.tenants.items()):
        scope = f"{access.bucket}/{ARCHIVE_PREFIX}/{ns}/*"
        out.append(ident(f"tenant-{ns}", keys, [f"{a}:{scope}" for a in TENANT_ACTIONS]))
    return {"identities": out}


def prepare(state_dir: Path, endpoint: str, pod_endpoint: str | None) -> tuple[Path, S3Access]:
    """The data directory and access (keys made once per state directory, kept after); writes
    the S3 config ``weed`` reads and ``s3.json``."""
    root = state_dir / "seaweedfs"
    (root / "data").mkdir(parents=True, exist_ok=True)
    info = root / "s3.json"
    old = S3Access.load(info) if info.exists() else None
    tenants = {ns: (old.tenants.get(ns) if old else None) or _keys() for ns in TENANT_NAMESPACES}
    access = S3Access(
        endpoint=endpoint,
        region=REGION,
        bucket=BUCKET,
        archive=f"s3://{BUCKET}/{ARCHIVE_PREFIX}",
        admin=old.admin if old else _keys(),
        tenants=tenants,
        pod_endpoint=pod_endpoint,
    )
    for path, body in ((info, asdict(access)), (root / "identities.json", identities(access))):
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body, indent=1))
        tmp.chmod(0o600)
        tmp.replace(path)
    return root, access


def argv(weed: Path, root: Path, ports: list[int]) -> list[str]:
    """``weed server`` with master, volume server, filer and S3 gateway on ``ports`` (eight:
    master, volume, filer, S3, each http then gRPC), loopback only."""
    master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = ports
    return [
        str(weed),
        "server",
        f"-dir={root / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-master.port={master}",
        f"-master.port.grpc={master_grpc}",
        "-master.telemetry=false",
        "-master.volumeSizeLimitMB=64",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_grpc}",
        "-volume.max=16",
        "-volume.preStopSeconds=0",  # `down` stops it at once (no heartbeat drain)
        "-filer",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_grpc}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_grpc}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-s3.iam=false",
        f"-s3.config={root / 'identities.json'}",
    ]


def create_bucket(access: S3Access, timeout: float) -> None:
    """Create the dev bucket (idempotent), retrying while the gateway's filer comes up."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = access.client()
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.create_bucket(Bucket=access.bucket)
            return
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                return
            last: Exception = exc
        except BotoCoreError as exc:
            last = exc
        if time.monotonic() > deadline:
            raise DevClusterError(f"SeaweedFS did not create bucket {access.bucket}: {last}")
        time.sleep(0.5)
