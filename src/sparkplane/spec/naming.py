"""Kubernetes name rules and the identifiers of one Spark application.

Owns label-key and label-value checks (on :mod:`sparkplane.vocab`'s name rules), Spark's
resource-name prefix and ``spark-app-name``
sanitising (reference §3.1), and :class:`AppIds`, the random or submission-derived ids that
every rendered name is built from. Called by the validator and the render steps. Pure apart
from :meth:`AppIds.new`, which draws randomness and reads the clock like spark-submit does
(both injectable for tests). Never talks to the cluster.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import uuid
from dataclasses import dataclass

from sparkplane.vocab import (
    LABEL_NAME,
    MAX_LABEL,
    MAX_SUBDOMAIN,
    is_dns1123_subdomain,
)

# Spark checks spark.kubernetes.executor.podNamePrefix against this (room for "-exec-<id>").
MAX_EXECUTOR_PREFIX = 237

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def is_env_name(name: str) -> bool:
    """True for an environment variable name Kubernetes and Spark accept."""
    return bool(_ENV_NAME.match(name))


def label_key_problem(key: str) -> str:
    """Why ``key`` is not a valid label/annotation key, or "" if it is (``[prefix/]name``)."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not prefix:
        return "empty prefix before '/'"
    if prefix and not is_dns1123_subdomain(prefix):
        return f"prefix {prefix!r} is not a DNS-1123 subdomain"
    if not name:
        return "empty name"
    if len(name) > MAX_LABEL:
        return f"name part is {len(name)} characters (maximum {MAX_LABEL})"
    if not LABEL_NAME.match(name):
        return "name must be alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return ""


def label_value_problem(value: str) -> str:
    """Why ``value`` is not a valid label value, or "" if it is (empty is valid)."""
    if value == "":
        return ""
    if len(value) > MAX_LABEL:
        return f"value is {len(value)} characters (maximum {MAX_LABEL})"
    if not LABEL_NAME.match(value):
        return "value must be alphanumerics, '-', '_' or '.', starting and ending alphanumeric"
    return ""


def resource_name_prefix(app_name: str, unique_id: str) -> str:
    """Spark's driver resource prefix: sanitised ``<appName>-<uniqueID>`` (never truncated)."""
    text = f"{app_name}-{unique_id}".strip().lower()
    text = re.sub(r"[^a-z0-9-]", "-", text)
    text = re.sub(r"-+", "-", text)
    text = re.sub(r"^-", "", text)
    return re.sub(r"^[0-9]", "x", text)


def app_name_label(app_name: str) -> str:
    """Spark's ``spark-app-name`` label value: sanitised, cut to 63, no edge dashes."""
    text = re.sub(r"[^a-z0-9-]", "-", app_name.strip().lower())
    text = re.sub(r"-+", "-", text)[:MAX_LABEL]
    return text.strip("-")


def conf_map_name(prefix: str) -> str:
    """``<prefix>-conf-map``, the prefix cut so the name fits a DNS subdomain (Spark's rule)."""
    suffix = "-conf-map"
    return prefix[: MAX_SUBDOMAIN - len(suffix)] + suffix


@dataclass(frozen=True)
class AppIds:
    """The generated identifiers of one application; every rendered name derives from them.

    ``app_id`` is ``spark-<32 hex>`` (the ``spark-app-selector`` label); ``unique_id`` is the
    16-hex suffix Spark puts in resource names; ``local_dir_uuid`` names the default local dir.
    """

    app_name: str
    app_id: str
    unique_id: str
    local_dir_uuid: str
    submission_id: str | None = None

    @classmethod
    def new(cls, app_name: str, *, now_ms: int | None = None) -> AppIds:
        """Random ids exactly as spark-submit draws them (UUID app id, 6 random hex + millis)."""
        millis = int(time.time() * 1000) if now_ms is None else now_ms
        unique = secrets.token_hex(3) + format(millis & 0xFFFFFFFFFF, "x")
        return cls(
            app_name=app_name,
            app_id="spark-" + uuid.uuid4().hex,
            unique_id=unique,
            local_dir_uuid=str(uuid.uuid4()),
        )

    @classmethod
    def for_submission(cls, submission_id: str, app_name: str) -> AppIds:
        """Ids derived from a user's submission id: the same id always renders the same names.

        This is what makes submit idempotent: a retry with the same id collides with the
        objects of the first attempt (AlreadyExists) instead of starting a second app.
        """
        if not submission_id.strip():
            raise ValueError("submission id must not be empty")
        digest = hashlib.sha256(f"sparkplane:{submission_id}".encode()).hexdigest()
        local = hashlib.sha256(f"sparkplane-local-dir:{submission_id}".encode()).hexdigest()
        return cls(
            app_name=app_name,
            app_id="spark-" + digest[:32],
            unique_id=digest[32:48],
            local_dir_uuid=str(uuid.UUID(hex=local[:32], version=4)),
            submission_id=submission_id,
        )

    @property
    def resource_prefix(self) -> str:
        """Prefix of the driver pod, Service and other per-app names."""
        return resource_name_prefix(self.app_name, self.unique_id)

    @property
    def default_driver_pod_name(self) -> str:
        """``<prefix>-driver`` (used unless ``spark.kubernetes.driver.pod.name`` is set)."""
        return f"{self.resource_prefix}-driver"

    @property
    def driver_service_name(self) -> str:
        """``<prefix>-driver-svc``; ``spark-<uid>-driver-svc`` when that exceeds 63 chars."""
        return _service_name(self.resource_prefix, self.unique_id, "driver-svc")

    @property
    def ui_service_name(self) -> str:
        """Name of the optional Spark UI Service, with the same 63-char fallback."""
        return _service_name(self.resource_prefix, self.unique_id, "ui-svc")

    @property
    def conf_map_name(self) -> str:
        """The driver's spark.properties ConfigMap, ``spark-drv-<uid>-conf-map``."""
        return conf_map_name(f"spark-drv-{self.unique_id}")


def _service_name(prefix: str, unique_id: str, suffix: str) -> str:
    preferred = f"{prefix}-{suffix}"
    return preferred if len(preferred) <= MAX_LABEL else f"spark-{unique_id}-{suffix}"
