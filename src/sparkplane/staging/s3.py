"""Staged bundles and their records in object storage, so several staging replicas serve one store.

Selected by ``--store s3://BUCKET/PREFIX`` (``StagingSettings.store``);
endpoint, region and credentials come from the AWS environment and files, as for the log
archive (:func:`sparkplane.history.s3_store.default_client`). What stays as with the local disk:
the server is the only client of the bucket (no URL of it is ever handed out, and the bucket
needs no public access: the server's own keys are the only ones), so downloads stay
owner-scoped (the resource secret, checked against the record's hash) and time-limited (the
clean-up loop deletes bundles whose owner pod is gone or that outlived ``--max-age``); what
changes is that any replica can answer for any bundle, since both the bytes and the record are
in the bucket.

Layout under the prefix:

* ``bundles/<id>``: the bytes. A write is a multipart upload (8 MiB parts, so a bundle is never
  held whole in memory) completed on commit, so a reader never sees a partial bundle; an upload
  cut off by a crash is aborted by :meth:`S3BundleStore.sweep` once older than
  :data:`STALE_UPLOAD_SECONDS` (never a live upload of another replica).
* ``records/<id>.json``: the record (the secret's hash, never the secret; owner, size, time).
* ``downloaded/<id>``: the first download's time, written once.
* ``usage/<namespace>/<id>/<size>``: an empty object per record, so the quota check lists sizes
  by namespace without reading every record.

Blocking; the server calls it from worker threads, as it calls the local store.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, BinaryIO, Self, cast

from sparkplane.history.s3_store import S3Location, default_client
from sparkplane.staging.metadata import ResourceRecord
from sparkplane.staging.owner import OwnerType, ResourceOwner
from sparkplane.staging.store import BundleNotStoredError, BundleWriter, check_id

PART_BYTES = 8 * 1024 * 1024
"""Multipart part size (S3's minimum is 5 MiB for all parts but the last)."""
STALE_UPLOAD_SECONDS = 3600.0
"""An unfinished multipart upload older than this is a crashed write, not a live one."""
ORPHAN_GRACE_SECONDS = 600.0
"""A bundle younger than this may be between its commit and its record (another replica's)."""


def _missing(exc: Exception) -> bool:
    code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
    return code in ("404", "NoSuchKey", "NotFound", "NoSuchUpload")


class _S3Writer:
    """One bundle's multipart upload: parts as they fill, completed on :meth:`commit`."""

    def __init__(self, client: Any, bucket: str, key: str) -> None:
        self._client, self._bucket, self._key = client, bucket, key
        self._buffer = bytearray()
        self._upload: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._size = 0

    def write(self, *chunks: bytes) -> None:
        for chunk in chunks:
            self._buffer += chunk
            self._size += len(chunk)
        while len(self._buffer) >= PART_BYTES:
            self._part(bytes(self._buffer[:PART_BYTES]))
            del self._buffer[:PART_BYTES]

    def _part(self, data: bytes) -> None:
        if self._upload is None:
            made = self._client.create_multipart_upload(Bucket=self._bucket, Key=self._key)
            self._upload = str(made["UploadId"])
        number = len(self._parts) + 1
        answer = self._client.upload_part(
            Bucket=self._bucket,
            Key=self._key,
            UploadId=self._upload,
            PartNumber=number,
            Body=data,
        )
        self._parts.append({"ETag": answer["ETag"], "PartNumber": number})

    def commit(self) -> int:
        if self._upload is None:  # small: one request
            self._client.put_object(Bucket=self._bucket, Key=self._key, Body=bytes(self._buffer))
        else:
            if self._buffer:
                self._part(bytes(self._buffer))
            self._client.complete_multipart_upload(
                Bucket=self._bucket,
                Key=self._key,
                UploadId=self._upload,
                MultipartUpload={"Parts": self._parts},
            )
        self._buffer.clear()
        return self._size

    def abort(self) -> None:
        self._buffer.clear()
        if self._upload is not None:
            upload, self._upload = self._upload, None
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._key, UploadId=upload)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is not None:
            self.abort()


class S3BundleStore:
    """The :class:`~sparkplane.staging.store.Store` protocol over a bucket and prefix."""

    def __init__(self, location: S3Location, client: Any | None = None) -> None:
        self._client = client if client is not None else default_client()
        self._bucket = location.bucket
        self._prefix = f"{location.prefix}bundles/"

    def _key(self, resource_id: str) -> str:
        return self._prefix + check_id(resource_id)

    def open_writer(self, resource_id: str) -> BundleWriter:
        return _S3Writer(self._client, self._bucket, self._key(resource_id))

    def open_reader(self, resource_id: str) -> BinaryIO:
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=self._key(resource_id))
        except Exception as exc:
            if _missing(exc):
                raise BundleNotStoredError(f"bundle {resource_id} is not stored") from exc
            raise
        return cast(BinaryIO, answer["Body"])  # botocore's StreamingBody: read(n), close()

    def delete(self, resource_id: str) -> bool:
        existed = self.exists(resource_id)
        self._client.delete_object(Bucket=self._bucket, Key=self._key(resource_id))
        return existed

    def exists(self, resource_id: str) -> bool:
        try:
            self._client.head_object(Bucket=self._bucket, Key=self._key(resource_id))
        except Exception as exc:
            if _missing(exc):
                return False
            raise
        return True

    def list_ids(self) -> Iterator[str]:
        """Stored bundles older than :data:`ORPHAN_GRACE_SECONDS` (a younger one may be between
        its commit and its record on another replica)."""
        cutoff = time.time() - ORPHAN_GRACE_SECONDS
        for item in _listed(self._client, self._bucket, self._prefix):
            if item["LastModified"].timestamp() < cutoff:
                yield str(item["Key"])[len(self._prefix) :]

    def sweep(self) -> int:
        """Abort multipart uploads older than :data:`STALE_UPLOAD_SECONDS` (crashed writes)."""
        cutoff = time.time() - STALE_UPLOAD_SECONDS
        answer = self._client.list_multipart_uploads(Bucket=self._bucket, Prefix=self._prefix)
        stale = [u for u in answer.get("Uploads") or [] if u["Initiated"].timestamp() < cutoff]
        for upload in stale:
            self._client.abort_multipart_upload(
                Bucket=self._bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )
        return len(stale)

    def local_path(self, resource_id: str) -> None:
        return None


def _listed(client: Any, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        yield from page.get("Contents") or []


class S3Metadata:
    """The records of :class:`~sparkplane.staging.metadata.MetadataDB`, in the bucket."""

    def __init__(self, location: S3Location, client: Any | None = None) -> None:
        self._client = client if client is not None else default_client()
        self._bucket = location.bucket
        self._root = location.prefix

    def _get(self, key: str) -> bytes | None:
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=self._root + key)
        except Exception as exc:
            if _missing(exc):
                return None
            raise
        return bytes(answer["Body"].read())

    def _put(self, key: str, body: bytes) -> None:
        self._client.put_object(Bucket=self._bucket, Key=self._root + key, Body=body)

    def close(self) -> None:
        return None

    def insert(self, record: ResourceRecord) -> None:
        rid, owner = check_id(record.resource_id), record.owner
        doc = {
            "secretHash": record.secret_hash,
            "namespace": owner.namespace,
            "labels": dict(owner.labels),
            "ownerType": owner.owner_type.value,
            "size": record.size,
            "createdAt": record.created_at,
        }
        self._put(f"usage/{owner.namespace}/{rid}/{record.size}", b"")
        self._put(f"records/{rid}.json", json.dumps(doc, sort_keys=True).encode())

    def get(self, resource_id: str) -> ResourceRecord | None:
        raw = self._get(f"records/{check_id(resource_id)}.json")
        if raw is None:
            return None
        doc = json.loads(raw)
        downloaded = self._get(f"downloaded/{resource_id}")
        owner = ResourceOwner(doc["namespace"], doc["labels"], OwnerType(doc["ownerType"]))
        return ResourceRecord(
            resource_id,
            doc["secretHash"],
            owner,
            int(doc["size"]),
            float(doc["createdAt"]),
            float(downloaded) if downloaded else None,
        )

    def mark_downloaded(self, resource_id: str, now: float) -> None:
        """Record the first download; later downloads keep the first time (two replicas
        answering the very first downloads at once may each write theirs: seconds apart)."""
        key = f"downloaded/{check_id(resource_id)}"
        if self._get(key) is None:
            self._put(key, repr(now).encode())

    def delete(self, resource_id: str) -> bool:
        record = self.get(resource_id)
        if record is None:
            return False
        rid, owner = resource_id, record.owner
        for key in (f"downloaded/{rid}", f"usage/{owner.namespace}/{rid}/{record.size}"):
            self._client.delete_object(Bucket=self._bucket, Key=self._root + key)
        self._client.delete_object(Bucket=self._bucket, Key=f"{self._root}records/{rid}.json")
        return True

    def usage(self, namespace: str) -> tuple[int, int]:
        """Stored bytes: (all bundles, the bundles owned in ``namespace``), from the listing."""
        total = mine = 0
        for item in _listed(self._client, self._bucket, f"{self._root}usage/"):
            ns, _, size = str(item["Key"])[len(self._root) + len("usage/") :].split("/")
            total += int(size)
            mine += int(size) if ns == namespace else 0
        return total, mine

    def all(self) -> list[ResourceRecord]:
        prefix = f"{self._root}records/"
        ids = [
            str(item["Key"])[len(prefix) : -len(".json")]
            for item in _listed(self._client, self._bucket, prefix)
        ]
        found = [r for r in (self.get(rid) for rid in ids) if r is not None]
        return sorted(found, key=lambda r: r.created_at)
