"""This process's settings, merged in one place: defaults, then the environment, then arguments.

The environment is read here and nowhere deeper: :meth:`Settings.load` is called where a program
starts (``SparkPlane.connect``, the operator's settings merge, ``sparkplane gc``), and the result
is passed down to the use cases and stores that need it. Each field says which variable sets it.
Connection settings (``KUBECONFIG``, in-cluster detection) are the gateway's
(:mod:`sparkplane.usecases.connection` and :mod:`sparkplane.kube.config`), as in kubectl.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

LOG_ARCHIVE_ENV = "SPARKPLANE_LOG_ARCHIVE"
EVENT_LOG_ROOT_ENV = "SPARKPLANE_EVENT_LOG_ROOT"
CACHE_DIR_ENV = "SPARKPLANE_CACHE_DIR"
STAGING_TOKEN_ENV = "SPARKPLANE_STAGING_TOKEN"
PYSPARK_PYTHON_ENV = "PYSPARK_PYTHON"
PYSPARK_DRIVER_PYTHON_ENV = "PYSPARK_DRIVER_PYTHON"


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "sparkplane"


@dataclass(frozen=True)
class Settings:
    """Where this process keeps what outlives a driver, and its upload credential."""

    #: ``SPARKPLANE_LOG_ARCHIVE``: where drivers' logs are archived before they are deleted and
    #: where ``logs`` reads them: a directory, ``kube`` (ConfigMaps in the app's namespace),
    #: ``s3://bucket/prefix`` (object storage; endpoint, region and keys are the AWS client's
    #: own settings: ``AWS_*`` variables, ``~/.aws``), ``off``, or empty for
    #: ``<cache_dir>/log-archive``.
    log_archive: str = ""
    #: ``SPARKPLANE_EVENT_LOG_ROOT``: the root under which pruning may delete event logs (one
    #: directory per namespace); empty for the History Server's default, ``off`` for none.
    event_log_root: str = ""
    #: ``SPARKPLANE_CACHE_DIR``: this machine's cache (``~/.cache/sparkplane``).
    cache_dir: Path = field(default_factory=_default_cache_dir)
    #: ``SPARKPLANE_STAGING_TOKEN``: an upload secret for the staging server, for a submitter
    #: whose credential is no bearer token (a client certificate).
    staging_token: str = ""
    #: ``PYSPARK_PYTHON``: the Python of a submitted app's executors (and of its driver unless
    #: set below) when ``spark.pyspark.python`` is unset, as spark-submit reads it.
    pyspark_python: str = ""
    #: ``PYSPARK_DRIVER_PYTHON``: the Python of a submitted app's driver when neither
    #: ``spark.pyspark.driver.python`` nor ``spark.pyspark.python`` is set.
    pyspark_driver_python: str = ""

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then ``environ`` (default: this process's environment), then ``overrides``
        (arguments and flags; None values are ignored)."""
        env = os.environ if environ is None else environ
        found: dict[str, Any] = {
            "log_archive": env.get(LOG_ARCHIVE_ENV, "").strip(),
            "event_log_root": env.get(EVENT_LOG_ROOT_ENV, "").strip(),
            "staging_token": env.get(STAGING_TOKEN_ENV, "").strip(),
            "pyspark_python": env.get(PYSPARK_PYTHON_ENV, ""),
            "pyspark_driver_python": env.get(PYSPARK_DRIVER_PYTHON_ENV, ""),
        }
        if env.get(CACHE_DIR_ENV):
            found["cache_dir"] = Path(env[CACHE_DIR_ENV]).expanduser()
        names = {f.name for f in fields(cls)}
        unknown = set(overrides) - names
        if unknown:
            raise TypeError(f"unknown settings: {sorted(unknown)}")
        found |= {k: v for k, v in overrides.items() if v is not None}
        return replace(cls(), **found)

    @property
    def archive_dir(self) -> Path:
        """This machine's log archive when ``log_archive`` names none."""
        return self.cache_dir / "log-archive"
