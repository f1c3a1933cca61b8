"""Which dependencies of a spec an init-container must localize, and their URIs once localized.

A dependency is one entry of ``spec.jars``, ``spec.pyFiles``, ``spec.files``,
``spec.sparkRFiles`` or of the ``spark.jars``, ``spark.files``, ``spark.submit.pyFiles``,
``spark.archives`` sparkConf lists. Submitter-local ones (no scheme, or ``file:``) are uploaded
to a staging server; http(s) ones are downloaded by the init-container when the user opts in.
Either way Spark then reads ``file://<dir>/<name>``, the URI spark-submit's upload path would
hand it: ``file:``, not ``local:``, because Spark's ``SparkContext.addFile``/``addArchive``/
``addJar`` put ``file:`` entries on the driver's file server (executors fetch them into their
working directory, ``SparkFiles.get`` finds them on both sides, archives unpack under their
``#alias``) while they skip ``local:`` ones as "already on every node". Names are the file's
base name (the ``#alias`` fragment is kept on the rewritten URI, so archives keep their unpack
name), and must be unique in the directory. Used by the staging step (rewrite) and by the
submitter (what to pack). Pure: never touches the file system.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from sparkplane.errors import Problem
from sparkplane.spec.conf import split_list
from sparkplane.spec.models import SparkApp

DEPS_DIR = "/var/sparkplane/deps"
"""Where the init-container puts every localized dependency (an emptyDir shared with Spark)."""
LOCALIZED_PREFIX = f"file://{DEPS_DIR}/"
"""How every localized dependency's URI starts."""

SPEC_FIELDS = (
    ("jars", "spec.jars"),
    ("py_files", "spec.pyFiles"),
    ("files", "spec.files"),
    ("spark_r_files", "spec.sparkRFiles"),
)
CONF_LISTS = ("spark.jars", "spark.files", "spark.submit.pyFiles", "spark.archives")


class Kind(StrEnum):
    """Where a dependency lives."""

    LOCAL = "local"
    """On the submitting machine (a path, or ``file:``): needs a staging server."""
    REMOTE = "remote"
    """http(s): the init-container can download it (``localizeRemote``)."""
    IMAGE = "image"
    """``local://``: already in the container image (or ``file://`` in :data:`DEPS_DIR`:
    already localized into the pod)."""
    OTHER = "other"
    """Any other scheme (s3a, hdfs, ...): Spark fetches it itself."""


@dataclass(frozen=True)
class Dependency:
    """One dependency entry: where it was written, what it is, and its localized name."""

    path: str
    """The field it came from, e.g. ``spec.jars`` or ``spec.sparkConf[spark.files]``."""
    uri: str
    """As written by the user."""
    kind: Kind
    source: str
    """LOCAL: the file-system path; REMOTE: the URI without fragment; else the URI."""
    name: str = ""
    """The file name in the dependency directory (LOCAL and REMOTE only)."""
    fragment: str = ""

    def localized(self, directory: str = DEPS_DIR) -> str:
        """The ``file://`` URI Spark reads once the init-container has run (see the module
        docstring for why not ``local://``)."""
        uri = f"file://{directory}/{quote(self.name)}"
        return f"{uri}#{self.fragment}" if self.fragment else uri


def classify(uri: str) -> Kind:
    """The kind of ``uri`` (the same "local file" rule as the validator, except that a
    ``file:`` URI in :data:`DEPS_DIR` is a copy already localized, so a second rewrite leaves
    it alone)."""
    if uri.startswith(LOCALIZED_PREFIX):
        return Kind.IMAGE
    if "://" not in uri or uri.startswith("file:"):
        return Kind.LOCAL
    scheme = urlsplit(uri).scheme.lower()
    if scheme == "local":
        return Kind.IMAGE
    if scheme in ("http", "https"):
        return Kind.REMOTE
    return Kind.OTHER


def dependency(path: str, uri: str) -> Dependency:
    """Describe one entry (its ``name`` is empty when none can be derived)."""
    kind = classify(uri)
    if kind is Kind.LOCAL:
        if uri.startswith("file:"):
            parts = urlsplit(uri)
            source, fragment = unquote(parts.path), unquote(parts.fragment)
        else:
            source, _, fragment = uri.partition("#")
        name = posixpath.basename(source.rstrip("/"))
        return Dependency(path, uri, kind, source, name, fragment)
    if kind is Kind.REMOTE:
        parts = urlsplit(uri)
        source = urlunsplit(parts._replace(fragment=""))
        # as sparkplane.staging.client names a download without '#alias': last path segment
        name = unquote(parts.path.rsplit("/", 1)[-1])
        return Dependency(path, uri, kind, source, name, parts.fragment)
    return Dependency(path, uri, kind, uri)


def _entries(app: SparkApp) -> Iterator[tuple[str, str]]:
    spec = app.spec
    for attr, path in SPEC_FIELDS:
        for uri in split_list(getattr(spec, attr)):
            yield path, uri
    for key in CONF_LISTS:
        for uri in split_list(spec.spark_conf.get(key)):
            yield f"spec.sparkConf[{key}]", uri


def dependencies(app: SparkApp) -> list[Dependency]:
    """Every dependency entry of ``app``, in field order (duplicates kept)."""
    return [dependency(path, uri) for path, uri in _entries(app)]


def check_names(deps: list[Dependency]) -> list[Problem]:
    """Problems that would stop ``deps`` sharing one directory: no name, or one name twice."""
    problems: list[Problem] = []
    owners: dict[str, Dependency] = {}
    for dep in deps:
        if not dep.name or dep.name in (".", "..") or "/" in dep.name:
            problems.append(
                Problem(dep.path, f"cannot derive a file name from {dep.uri!r}", "name a file")
            )
            continue
        first = owners.setdefault(dep.name, dep)
        if (first.kind, first.source) != (dep.kind, dep.source):
            problems.append(
                Problem(
                    dep.path,
                    f"{dep.uri!r} and {first.uri!r} would both be localized as {dep.name!r}",
                    "rename one of the files",
                )
            )
    return problems


def rewrite(app: SparkApp, wanted: Callable[[Dependency], bool]) -> SparkApp:
    """A copy of ``app`` whose ``wanted`` dependencies point at their localized copies."""

    def convert(path: str, value: str | None) -> str | None:
        if value is None:
            return None
        out = []
        for uri in split_list(value):
            dep = dependency(path, uri)
            out.append(dep.localized() if wanted(dep) else uri)
        return ",".join(out)

    spec = app.spec
    update: dict[str, object] = {
        attr: convert(path, getattr(spec, attr)) for attr, path in SPEC_FIELDS
    }
    conf = dict(spec.spark_conf)
    for key in CONF_LISTS:
        if key in conf:
            conf[key] = convert(f"spec.sparkConf[{key}]", conf[key]) or ""
    update["spark_conf"] = conf
    return app.model_copy(update={"spec": spec.model_copy(update=update)})
