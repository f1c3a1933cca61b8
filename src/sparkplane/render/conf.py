"""The resolved driver configuration every render step reads (Spark's ``KubernetesDriverConf``).

Owns the effective SparkConf as spark-submit hands it to the Kubernetes client (the spec's
mapped conf plus ``spark.app.name``, ``spark.master``, ``spark.submit.deployMode``,
``spark.jars`` / ``spark.submit.pyFiles`` / ``spark.files``, ``spark.app.submitTime``), and
what is derived from it: namespace, names, labels, annotations, Spark version. Built once per
render by the pipeline. Pure: the submitter's user name, master URL and clock come in
through :class:`RenderContext`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sparkplane.errors import Problem
from sparkplane.spec.conf import (
    K8S,
    MainResource,
    app_name,
    main_resource,
    mapped_conf,
    with_spark_version,
)
from sparkplane.spec.conf import split_list as _split
from sparkplane.spec.conf_keys import with_prefix
from sparkplane.spec.models import SparkApp
from sparkplane.spec.naming import AppIds, app_name_label
from sparkplane.vocab import APP_NAME_LABEL, APP_SELECTOR_LABEL, ROLE_LABEL

DEFAULT_MASTER = "k8s://https://kubernetes.default.svc:443"
_VERSION_TAG = re.compile(r":v?(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class RenderContext:
    """What spark-submit would take from its environment; the submitter fills it in.

    ``spark_user`` becomes ``SPARK_USER`` (spark-submit uses the OS user, or the proxy
    user); ``master`` is ``spark.master`` (the ``k8s://`` URL of the cluster); ``submit_time``
    gives ``spark.app.submitTime`` and the date line of spark.properties when set.
    ``name_from_metadata``: ``spark.app.name`` defaults to ``metadata.name`` (sparkplane's
    native submit: ``spark-submit --name <metadata.name>``); False leaves it unset unless the
    user set it (Apache's operator, reference §9.8), so Spark's own default names the labels.
    ``pyspark_python``/``pyspark_driver_python`` are the submitter's ``PYSPARK_PYTHON``/
    ``PYSPARK_DRIVER_PYTHON``, the fallbacks of ``spark.pyspark.python``/
    ``spark.pyspark.driver.python`` for a Python driver (empty: unset).
    ``conf_files``: ``(name, content)`` of the submitter's ``SPARK_CONF_DIR`` files that
    spark-submit ships (read by :mod:`sparkplane.usecases.conf_dir`), added to the driver's
    conf ConfigMap.
    """

    master: str = DEFAULT_MASTER
    spark_user: str = "spark"
    submit_time: datetime | None = None
    name_from_metadata: bool = True
    pyspark_python: str = ""
    pyspark_driver_python: str = ""
    conf_files: tuple[tuple[str, str], ...] = ()


SPARK_DEFAULT_APP_NAME = "spark"
"""The app name Spark's ``KubernetesConf`` labels with when ``spark.app.name`` is unset."""


@dataclass(frozen=True)
class DriverConf:
    """Everything the steps need, resolved once; steps read it and never change it."""

    app: SparkApp
    ids: AppIds
    ctx: RenderContext
    conf: dict[str, str]
    main: MainResource
    namespace: str
    spark_version: str | None
    extra_labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, app: SparkApp, ids: AppIds, ctx: RenderContext | None = None) -> DriverConf:
        """Resolve the conf of a validated app (raises ValueError if nothing to run)."""
        ctx = ctx or RenderContext()
        main = main_resource(app)
        if main is None:
            raise ValueError("the application names nothing to run; validate() it first")
        version = _spark_version(app)
        conf = _effective_conf(app, main, ctx, version)
        return cls(
            app=app,
            ids=ids,
            ctx=ctx,
            conf=conf,
            main=main,
            namespace=conf.get(f"{K8S}.namespace", "default"),
            spark_version=version,
            extra_labels=dict(app.metadata.labels),
        )

    def get(self, key: str, default: str | None = None) -> str | None:
        """A conf value (or ``default``)."""
        return self.conf.get(key, default)

    def prefixed(self, prefix: str) -> dict[str, str]:
        """Conf entries under ``prefix``, prefix removed, sorted by key."""
        return with_prefix(self.conf, prefix)

    @property
    def driver_pod_name(self) -> str:
        """``spark.kubernetes.driver.pod.name`` or ``<prefix>-driver``."""
        return self.conf.get(f"{K8S}.driver.pod.name") or self.ids.default_driver_pod_name

    @property
    def app_name_label(self) -> str:
        """The sanitised app name used by the ``spark-app-name`` and ``app-name`` labels."""
        return app_name_label(self.conf.get("spark.app.name") or SPARK_DEFAULT_APP_NAME)

    def reserved_labels(self) -> dict[str, str]:
        """Labels sparkplane puts on every object: Spark's reserved ones plus ``app-name``."""
        labels = {
            APP_SELECTOR_LABEL: self.ids.app_id,
            ROLE_LABEL: "driver",
            APP_NAME_LABEL: self.app_name_label,
            "app-name": self.app_name_label,
        }
        return {**self.extra_labels, **labels}

    def driver_labels(self) -> dict[str, str]:
        """Driver pod labels: user labels ({{APP_ID}} substituted), then the reserved set."""
        user = {k: self._subst(v) for k, v in self.prefixed(f"{K8S}.driver.label.").items()}
        version = {"spark-version": self.spark_version} if self.spark_version else {}
        return {**self.extra_labels, **user, **version, **self.reserved_labels()}

    def driver_annotations(self) -> dict[str, str]:
        """``spark.kubernetes.driver.annotation.*`` with {{APP_ID}} substituted, plus the
        application's own ``metadata.annotations``."""
        user = {k: self._subst(v) for k, v in self.prefixed(f"{K8S}.driver.annotation.").items()}
        return {**self.app.metadata.annotations, **user}

    def _subst(self, value: str) -> str:
        return value.replace("{{APP_ID}}", self.ids.app_id).replace("{{EXECUTOR_ID}}", "")

    def pod_template(self, role: str) -> dict[str, Any] | None:
        """The user's ``driverSpec``/``executorSpec`` pod template, if any."""
        holder = self.app.spec.driver_spec if role == "driver" else self.app.spec.executor_spec
        return holder.pod_template_spec if holder and holder.pod_template_spec else None


#: What a custom resource renderer reports when :func:`_spark_version` finds none.
UNKNOWN_VERSION = Problem(
    "spec.runtimeVersions.sparkVersion",
    "Spark version unknown",
    "set runtimeVersions.sparkVersion or use a versioned image tag",
)


def at_least(version: str | None, wanted: tuple[int, int]) -> bool:
    """Whether Spark ``version`` (``"4.2.0"``) is ``wanted`` (major, minor) or newer; an
    unknown or unparsable version is not."""
    if not version:
        return False
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= wanted
    except (ValueError, IndexError):
        return False


def _spark_version(app: SparkApp) -> str | None:
    """``runtimeVersions.sparkVersion``, else the version in the image tag, else None."""
    if app.spec.runtime_versions is not None:
        return app.spec.runtime_versions.spark_version
    image = mapped_conf(app).get(f"{K8S}.container.image") or ""
    match = _VERSION_TAG.search(image.rsplit("/", 1)[-1])
    return match.group(1) if match else None


def _effective_conf(
    app: SparkApp, main: MainResource, ctx: RenderContext, version: str | None
) -> dict[str, str]:
    conf = with_spark_version(mapped_conf(app), version)
    if ctx.name_from_metadata:
        conf.setdefault("spark.app.name", app_name(app))
    conf["spark.master"] = ctx.master
    conf["spark.submit.deployMode"] = "cluster"
    if ctx.submit_time is not None:
        conf["spark.app.submitTime"] = str(int(ctx.submit_time.timestamp() * 1000))
    if main.type == "java":
        jars = _split(conf.get("spark.jars"))
        for jar in (*_split(app.spec.jars), *((main.resource,) if main.resource else ())):
            if jar not in jars:
                jars.append(jar)
        if jars:
            conf["spark.jars"] = ",".join(jars)
    conf.setdefault("spark.submit.pyFiles", ",".join(main.extra_py_files))
    if app.spec.files and "spark.files" not in conf:
        conf["spark.files"] = app.spec.files
    return conf
