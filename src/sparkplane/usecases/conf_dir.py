"""The submitter's Spark configuration directory, as spark-submit ships it (reference §3.6).

spark-submit puts every file of its ``SPARK_CONF_DIR`` (else ``$SPARK_HOME/conf``) into the
driver's ConfigMap beside ``spark.properties``, mounted at ``/opt/spark/conf``; the driver then
copies its conf directory into the executors' ConfigMap. So a ``log4j2.properties`` or
``hive-site.xml`` on the submitting machine configures the whole app. Spark's rules
(``KubernetesClientUtils.loadSparkConfDirFiles``), kept here: regular files only; not
``*.template``, not ``spark*conf``/``spark*properties`` (``spark-defaults.conf``: its
properties are resolved separately), not ``*.gz/.zip/.jar/.tar``, not a file that is not UTF-8;
smallest first, while the total of names and contents stays below
``spark.kubernetes.configMap.maxSize`` (default 1048576). A skipped file is a warning, as in
Spark's log. One more rule of the API server's: a file whose name is not a ConfigMap key
(``[-._a-zA-Z0-9]+``) is skipped with a warning instead of failing the submission.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_SIZE_KEY = "spark.kubernetes.configMap.maxSize"
DEFAULT_MAX_SIZE = 1048576
_SKIPPED_NAME = re.compile(r".*\.template|spark.*(conf|properties)|.*\.(gz|zip|jar|tar)")
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")


@dataclass(frozen=True)
class ConfDir:
    """The files shipped (name → content, by name) and why others were not."""

    files: tuple[tuple[str, str], ...] = ()
    skipped: tuple[str, ...] = ()


def max_size(conf: Mapping[str, str]) -> int:
    """``spark.kubernetes.configMap.maxSize`` of a resolved conf (Spark's default if unset)."""
    text = conf.get(MAX_SIZE_KEY, "").strip()
    return int(text) if text.isdigit() else DEFAULT_MAX_SIZE


def read_conf_dir(directory: str | Path, limit: int = DEFAULT_MAX_SIZE) -> ConfDir:
    """The files spark-submit would ship from ``directory`` (empty: none; missing: none)."""
    if not directory:
        return ConfDir()
    root = Path(directory).expanduser()
    if not root.is_dir():
        return ConfDir()
    skipped: list[str] = []
    candidates: list[tuple[int, str, Path]] = []
    for path in sorted(root.iterdir()):
        if not path.is_file() or _SKIPPED_NAME.fullmatch(path.name):
            continue
        size = path.stat().st_size
        if size + len(path.name) > limit:
            skipped.append(f"{path}: larger than {MAX_SIZE_KEY} ({limit} bytes)")
        elif not _CONFIG_MAP_KEY.fullmatch(path.name):
            skipped.append(f"{path}: the name is not a valid ConfigMap key")
        else:
            candidates.append((size, path.name, path))
    files: dict[str, str] = {}
    total = 0
    for _, name, path in sorted(candidates):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            skipped.append(f"{path}: not UTF-8 text")
            continue
        except OSError as exc:
            skipped.append(f"{path}: {exc.strerror or exc}")
            continue
        if total + len(name) + len(text) < limit:
            files[name] = text
            total += len(name) + len(text)
        else:
            skipped.append(f"{path}: the directory's files exceed {MAX_SIZE_KEY} ({limit} bytes)")
    return ConfDir(tuple(sorted(files.items())), tuple(skipped))
