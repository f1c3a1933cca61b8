"""The log archive in object storage: S3, or any S3-compatible server (SeaweedFS, MinIO, Ceph).

Implements :class:`~sparkplane.history.archive.ArchiveStore` over AWS's own client (boto3), so
endpoint, region and credentials come from where every AWS tool reads them: the environment
(``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
``AWS_PROFILE``), the shared files (``~/.aws/config``, ``~/.aws/credentials``) and in-cluster
identities (IRSA's web identity token, instance roles); the chart and ``deploy/`` give the
operator and the gc CronJob these variables from a Secret. Selected by
``SPARKPLANE_LOG_ARCHIVE=s3://BUCKET/PREFIX`` (:func:`sparkplane.history.stores.open_store`).

Layout: ``<PREFIX>/<namespace>/<app>/<file>``, the archive's own keys under the prefix, so each
namespace has its own prefix and a store's credentials can be scoped to one namespace (an IAM
or SeaweedFS policy on ``BUCKET/PREFIX/<namespace>/*``): a store given ``namespaces`` lists only
those prefixes, never the bucket. Retention is pruning by prefix (``delete_prefix`` of an
expired app); a bucket lifecycle rule on the prefix can back it up. Reads stream
(:meth:`S3Store.iter_lines`: a log is never held whole to be printed).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sparkplane.errors import ConfigError
from sparkplane.history.archive import META

SCHEME = "s3://"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_DELETE_BATCH = 1000  # DeleteObjects takes at most 1000 keys


class S3StoreError(OSError):
    """An S3 request failed (no credentials, access denied, unreachable endpoint)."""


@dataclass(frozen=True)
class S3Location:
    """Where the archive lives: a bucket and a key prefix (empty, or ending in ``/``)."""

    bucket: str
    prefix: str = ""

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"


def is_s3(where: str) -> bool:
    """Whether a ``SPARKPLANE_LOG_ARCHIVE`` value names an S3 location."""
    return where.lower().startswith(SCHEME)


def parse_location(where: str, source: str = "SPARKPLANE_LOG_ARCHIVE") -> S3Location:
    """``s3://bucket[/prefix]`` as a location; ConfigError naming ``source`` and the fix."""
    rest = where[len(SCHEME) :] if is_s3(where) else ""
    bucket, _, prefix = rest.partition("/")
    parts = [p for p in prefix.split("/") if p]
    if not _BUCKET.match(bucket) or ".." in bucket or any(p in (".", "..") for p in parts):
        raise ConfigError(
            f"{source}={where!r} is not an S3 location: write s3://BUCKET/PREFIX with a bucket "
            "name of 3-63 lower-case letters, digits, dots or hyphens (for example "
            "s3://spark-logs/sparkplane)"
        )
    return S3Location(bucket, "".join(f"{p}/" for p in parts))


def default_client() -> Any:
    """An S3 client configured the AWS way (environment, shared files, in-cluster identity),
    with bounded timeouts and retries."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=5,
        read_timeout=30,
        retries={"max_attempts": 4, "mode": "standard"},
    )
    return boto3.session.Session().client("s3", config=config)


class S3Store:
    """Archived apps as objects under one prefix; ``namespaces`` bounds listing (None: the whole
    prefix, which needs list rights on it)."""

    def __init__(
        self,
        location: S3Location,
        namespaces: Sequence[str] | None = None,
        *,
        client: Any = None,
    ) -> None:
        self.location = location
        self.namespaces = tuple(namespaces) if namespaces else None
        self._client = client

    def __repr__(self) -> str:
        return f"S3Store({self.location.uri!r}, namespaces={self.namespaces!r})"

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = default_client()
        return self._client

    def _key(self, key: str) -> str:
        parts = key.strip("/").split("/")
        if not key.strip("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"bad archive key {key!r}")
        return self.location.prefix + "/".join(parts) + ("/" if key.endswith("/") else "")

    def _call(self, what: str, key: str, fn: Any, **kw: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(Bucket=self.location.bucket, **kw)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in ("NoSuchKey", "404", "NotFound"):
                return None
            raise S3StoreError(f"{what} {self.location.uri}{key}: {exc}") from exc
        except BotoCoreError as exc:
            raise S3StoreError(f"{what} {self.location.uri}{key}: {exc}") from exc

    def put(self, key: str, data: bytes) -> None:
        full = self._key(key)
        self._call("writing", key, self.client.put_object, Key=full, Body=data)

    def get(self, key: str) -> bytes | None:
        found = self._call("reading", key, self.client.get_object, Key=self._key(key))
        if found is None:
            return None
        with found["Body"] as body:
            return bytes(body.read())

    def iter_lines(self, key: str) -> Iterator[str] | None:
        """The object's lines as they arrive (None if there is none)."""
        found = self._call("reading", key, self.client.get_object, Key=self._key(key))
        if found is None:
            return None
        return _lines(found["Body"])

    def _list(self, prefix: str) -> list[str]:
        """Keys (the archive's, without the store's prefix) under one archive prefix."""
        full = self._key(prefix) if prefix.strip("/") else self.location.prefix
        cut = len(self.location.prefix)
        out: list[str] = []
        token: str | None = None
        while True:
            kw: dict[str, Any] = {"Prefix": full, "MaxKeys": 1000}
            if token:
                kw["ContinuationToken"] = token
            page = self._call("listing", prefix, self.client.list_objects_v2, **kw) or {}
            out += [str(o["Key"])[cut:] for o in page.get("Contents") or []]
            token = page.get("NextContinuationToken") if page.get("IsTruncated") else None
            if not token:
                return out

    def keys(self, prefix: str) -> list[str]:
        if prefix.strip("/") or self.namespaces is None:
            return sorted(self._list(prefix))
        return sorted(k for ns in self.namespaces for k in self._list(f"{ns}/"))

    def _delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = [{"Key": self._key(k)} for k in keys[start : start + _DELETE_BATCH]]
            answer = self._call(
                "deleting",
                keys[start],
                self.client.delete_objects,
                Delete={"Objects": batch, "Quiet": True},
            )
            errors = (answer or {}).get("Errors") or []
            if errors:
                first = errors[0]
                raise S3StoreError(
                    f"deleting {self.location.uri}{first.get('Key')}: {first.get('Code')} "
                    f"{first.get('Message', '')}".rstrip()
                )

    def delete_prefix(self, prefix: str) -> int:
        found = self._list(prefix) if prefix.strip("/") else []
        self._delete(found)
        return len(found)

    def replace(self, prefix: str, files: dict[str, bytes]) -> None:
        """Drop the old ``meta.json`` (a reader then sees no app), write the logs, then the new
        ``meta.json`` (a complete app), then drop files of the old run the new one lacks."""
        if not prefix.strip("/") or not prefix.endswith("/"):
            raise ValueError(f"bad archive prefix {prefix!r}")
        old = set(self._list(prefix))
        if prefix + META in old:
            self._delete([prefix + META])
        for name in sorted(files, key=lambda n: n == META):
            self.put(prefix + name, files[name])
        self._delete(sorted(old - {prefix + n for n in files}))


def _lines(body: Any) -> Iterator[str]:
    with body:
        for raw in body.iter_lines():
            yield bytes(raw).decode(errors="replace")
