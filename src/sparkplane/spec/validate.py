"""Semantic validation of a :class:`SparkApp`: every problem, with its field path, at once.

Unknown fields and wrong types are caught earlier by the pydantic models (see
``manifest.problems_from_pydantic``); this module checks what the models cannot: Spark
memory and CPU syntax, names that would break Kubernetes limits after suffixing (only what
Spark's own sanitising cannot fix, reference §3.1), missing image, conflicting options,
label syntax, secrets and volumes. Called before anything touches the cluster. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sparkplane.errors import Problem, ValidationError
from sparkplane.spec import conf_keys, limits
from sparkplane.spec.conf import (
    K8S,
    SPARK_VERSION,
    app_name,
    main_resource,
    mapped_conf,
    runtime_spark_version,
    split_list,
    typed_conf_entries,
    with_spark_version,
)
from sparkplane.spec.models import PYTHON_RUNNER, SparkApp
from sparkplane.spec.naming import MAX_EXECUTOR_PREFIX, resource_name_prefix
from sparkplane.spec.quantities import (
    JAVA_INT_MAX,
    MAX_EXECUTORS,
    MAX_MEMORY_MIB,
    MAX_PORT,
    QuantityError,
    check_cpu,
    memory_mib,
    overhead_factor,
    positive_int,
    positive_memory_mib,
    shown,
    whole_number,
)
from sparkplane.spec.tolerations import DeploymentMode
from sparkplane.spec.validate_k8s import check_k8s_names
from sparkplane.version import SPARK_VERSIONS
from sparkplane.vocab import MAX_SUBDOMAIN, is_dns1123_label, is_dns1123_subdomain

_MEMORY_KEYS = (  # at least 1 MiB
    "spark.driver.memory",
    "spark.executor.memory",
    "spark.driver.memoryOverhead",
    "spark.executor.memoryOverhead",
)
_MIN_OVERHEAD_KEYS = ("spark.driver.minMemoryOverhead", "spark.executor.minMemoryOverhead")
_CORE_KEYS = ("spark.driver.cores", "spark.executor.cores")
_CPU_KEYS = tuple(
    f"{K8S}.{r}.{k}.cores" for r in ("driver", "executor") for k in ("request", "limit")
)
_FACTOR_KEYS = (
    f"{K8S}.memoryOverheadFactor",
    "spark.driver.memoryOverheadFactor",
    "spark.executor.memoryOverheadFactor",
)
DYNAMIC = "spark.dynamicAllocation"
INSTANCES = "spark.executor.instances"
# executor counts and their bound (maxExecutors defaults to Int.MaxValue in Spark)
_COUNT_KEYS = {
    INSTANCES: MAX_EXECUTORS,
    f"{DYNAMIC}.initialExecutors": MAX_EXECUTORS,
    f"{DYNAMIC}.minExecutors": MAX_EXECUTORS,
    f"{DYNAMIC}.maxExecutors": JAVA_INT_MAX,
}
_PORT_KEYS = (
    "spark.driver.port",
    "spark.driver.blockManager.port",
    "spark.blockManager.port",
    "spark.ui.port",
    "spark.connect.grpc.binding.port",
)
# Spark builds these itself; a user value would break or be overwritten.
_FORBIDDEN_KEYS = {
    "spark.driver.host": "the driver Service name is set by the submission",
    "spark.driver.bindAddress": "the driver binds to its pod IP (SPARK_DRIVER_BIND_ADDRESS)",
    f"{K8S}.driver.podTemplateFile": "use spec.driverSpec.podTemplateSpec instead",
    f"{K8S}.executor.podTemplateFile": "use spec.executorSpec.podTemplateSpec instead",
}
_UNIQUE_ID_LEN = 16
# With a resource staging server, submitter-local files are uploaded and localized by an
# init-container (sparkplane.render.steps.staging), so they are no longer an error.
STAGING_SERVER = f"{K8S}.sparkplane.staging.server"


class _Collector:
    """Accumulates problems; ``path_of`` maps a conf key to the field that produced it."""

    def __init__(self, app: SparkApp) -> None:
        self.problems: list[Problem] = []
        self._paths = {e.key: e.path for e in typed_conf_entries(app)}

    def path_of(self, key: str) -> str:
        return self._paths.get(key, f"spec.sparkConf[{key}]")

    def add(self, path: str, message: str, hint: str = "") -> None:
        self.problems.append(Problem(path, message, hint))


def validate(app: SparkApp, *, native: bool = True) -> None:
    """Raise :class:`ValidationError` listing every problem found in ``app``.

    ``native``: the app is started as spark-submit starts it (native and Kubeflow submissions),
    so what spark-submit refuses is refused too; False for a SparkApplication that Apache's
    operator runs (``--mode operator``), which accepts ``spark.executor.instances=0``."""
    problems = collect_problems(app, native=native)
    if problems:
        raise ValidationError(problems, subject=f"Spark application {app.name!r}")


def collect_problems(app: SparkApp, *, native: bool = False) -> list[Problem]:
    """All problems of ``app`` in a stable order (no exception). ``native`` adds what only
    spark-submit refuses (see :func:`validate`); the operator calls this without it."""
    too_big = limits.conf_size_problem(app.spec.spark_conf)
    if too_big is not None:  # first and alone: the other checks would cost seconds
        return [too_big]
    out = _Collector(app)
    conf = mapped_conf(app)
    _check_conflicts(app, out)
    _check_main(app, out)
    _check_image(conf, runtime_spark_version(app), out)
    _check_quantities(conf, out)
    _check_memory_total(conf, out)
    _check_executors(conf, out, native=native)
    _check_forbidden(app, conf, out)
    _check_names(app, conf, out)
    check_k8s_names(app, conf, out.path_of, out.add)
    return out.problems


def _check_conflicts(app: SparkApp, out: _Collector) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for entry in typed_conf_entries(app):
        user = app.spec.spark_conf.get(entry.key)
        if user is not None and user != entry.value:
            out.add(
                entry.path,
                f"{entry.value!r} conflicts with sparkConf {entry.key}={user!r}",
                "set it in one place only",
            )
        prior = seen.get(entry.key)
        if prior is not None and prior[0] != entry.value and prior[1] != entry.path:
            out.add(
                entry.path,
                f"{entry.value!r} conflicts with {prior[1]}={prior[0]!r}",
                f"both set {entry.key}",
            )
        seen.setdefault(entry.key, (entry.value, entry.path))


def _check_main(app: SparkApp, out: _Collector) -> None:
    spec = app.spec
    if spec.deployment_mode == DeploymentMode.CLIENT_MODE:
        out.add("spec.deploymentMode", "ClientMode is not supported", "use ClusterMode")
    py = split_list(spec.py_files)
    if spec.main_class and spec.main_class != PYTHON_RUNNER and py and not spec.jars:
        out.add(
            "spec.mainClass",
            f"mainClass {spec.main_class!r} given for a Python application",
            "drop mainClass for a .py resource, or use jars for a JVM application",
        )
    elif py and not py[0].endswith(".py") and spec.main_class in (None, PYTHON_RUNNER):
        out.add(
            "spec.pyFiles",
            f"primary Python resource {py[0]!r} is not a .py file",
            "list the main .py first, then .zip/.egg dependencies",
        )
    if spec.jars and py and (spec.main_class in (None, PYTHON_RUNNER)):
        out.add(
            "spec.jars",
            "jars and pyFiles both name a primary resource",
            "for a Python app, pass extra jars with sparkConf spark.jars",
        )
    for path, value in (
        ("spec.mainClass", spec.main_class),
        ("spec.jars", spec.jars),
        ("spec.pyFiles", spec.py_files),
        ("spec.sparkRFiles", spec.spark_r_files),
    ):
        if value is not None and not split_list(value):
            out.add(path, "is empty", "name what to run, or leave the field out")
    if main_resource(app) is None:
        out.add(
            "spec",
            "nothing to run: set mainClass (and jars), pyFiles or sparkRFiles",
            "e.g. mainClass: org.apache.spark.examples.SparkPi with jars: local:///...jar",
        )
    deps = [
        ("spec.jars", spec.jars),
        ("spec.pyFiles", spec.py_files),
        ("spec.files", spec.files),
        ("spec.sparkRFiles", spec.spark_r_files),
    ]
    for key in ("spark.jars", "spark.files", "spark.submit.pyFiles", "spark.archives"):
        deps.append((f"spec.sparkConf[{key}]", spec.spark_conf.get(key)))
    staged = bool(mapped_conf(app).get(STAGING_SERVER))
    for path, value in deps:
        for uri in split_list(value):
            if ("://" not in uri or uri.startswith("file:")) and not staged:
                out.add(
                    path,
                    f"{uri!r} is a file on the submitting machine",
                    "use local:// for files in the image, a remote URI (s3a://, https://), "
                    "or upload it through a staging server (--staging-server URL)",
                )


def _check_image(conf: Mapping[str, str], version: str | None, out: _Collector) -> None:
    resolved = with_spark_version(conf, version)  # {{SPARK_VERSION}}: as every mode does
    for key in (
        f"{K8S}.container.image",
        f"{K8S}.driver.container.image",
        f"{K8S}.executor.container.image",
    ):
        if key in resolved and SPARK_VERSION in resolved[key]:
            out.add(
                out.path_of(key),
                f"{conf[key]!r} uses {SPARK_VERSION} but the Spark version is not given",
                "set spec.runtimeVersions.sparkVersion (spark-submit arguments: --spark-version)",
            )
        elif key in resolved:
            why = limits.image_problem(resolved[key])
            if why:
                out.add(out.path_of(key), why, limits.IMAGE_HINT)
    base = conf.get(f"{K8S}.container.image")
    for role in ("driver", "executor"):
        if not (conf.get(f"{K8S}.{role}.container.image") or base) and version:
            out.add(
                "spec.runtimeVersions.sparkVersion",
                f"Spark {version!r} has no image here (the supported versions: "
                f"{', '.join(SPARK_VERSIONS)})",
                f"set sparkVersion (--spark-version) to one of {', '.join(SPARK_VERSIONS)}, "
                "or give an image (spec.image, spark.kubernetes.container.image)",
            )
            return
        if not (conf.get(f"{K8S}.{role}.container.image") or base):
            out.add(
                "spec.image",
                f"no container image for the {role}",
                "set spec.image (e.g. apache/spark:4.0.1) or spark.kubernetes.container.image",
            )
            return


def _check_quantities(conf: Mapping[str, str], out: _Collector) -> None:
    def check(keys: tuple[str, ...], fn: Callable[[str], object]) -> None:
        for key in keys:
            if key in conf:
                try:
                    fn(conf[key])
                except QuantityError as exc:
                    out.add(out.path_of(key), str(exc), exc.hint)

    check(_MEMORY_KEYS, positive_memory_mib)
    check(_MIN_OVERHEAD_KEYS, memory_mib)
    check(_CORE_KEYS, positive_int)
    check(_CPU_KEYS, check_cpu)
    check(_FACTOR_KEYS, overhead_factor)
    check(_PORT_KEYS, lambda v: whole_number(v, most=MAX_PORT, hint="a port number, e.g. 4040"))
    for role in ("driver", "executor"):
        for name, attrs in conf_keys.custom_resources(conf, role).items():
            if "amount" in attrs and "vendor" not in attrs:
                out.add(
                    out.path_of(f"spark.{role}.resource.{name}.amount"),
                    f"custom resource {name!r} has no vendor",
                    f"set spark.{role}.resource.{name}.vendor (e.g. nvidia.com)",
                )


def _check_memory_total(conf: Mapping[str, str], out: _Collector) -> None:
    """Heap plus overhead (given, or the factor times the heap) of each role within what a
    node has: a factor of 1e308 is a finite number, but not a pod size. One problem per key."""
    too_big: dict[str, list[str]] = {}  # key -> roles it makes too big
    for role in ("driver", "executor"):
        given = f"spark.{role}.memoryOverhead"
        factors = (f"spark.{role}.memoryOverheadFactor", f"{K8S}.memoryOverheadFactor")
        key = given if given in conf else next((k for k in factors if k in conf), None)
        if key is None:
            continue
        try:
            heap = memory_mib(conf.get(f"spark.{role}.memory", "1g"))
            if key == given:
                overhead = float(memory_mib(conf[key]))
            else:
                overhead = overhead_factor(conf[key]) * heap
        except QuantityError:
            continue  # reported with the key itself
        if heap + overhead > MAX_MEMORY_MIB:
            too_big.setdefault(key, []).append(role)
    for key, roles in too_big.items():
        what = "memoryOverhead" if key.endswith("memoryOverhead") else "overhead factor"
        out.add(
            out.path_of(key),
            f"{what} {shown(conf[key])} makes the {' and '.join(roles)} memory plus overhead "
            "more than any node has (the limit is 16t, 16 TiB)",
            "give memoryOverhead as memory, e.g. 1g"
            if what == "memoryOverhead"
            else "a factor is a fraction of the heap, e.g. 0.1",
        )


def _check_executors(conf: Mapping[str, str], out: _Collector, *, native: bool) -> None:
    """Executor counts are whole numbers within their bound; natively, as spark-submit,
    ``spark.executor.instances=0`` only with dynamic allocation."""
    for key, most in _COUNT_KEYS.items():
        if key in conf:
            try:
                whole_number(conf[key], most=most, unit="executors")
            except QuantityError as exc:
                hint = f"ask for at most {most} executors" if most == MAX_EXECUTORS else ""
                out.add(out.path_of(key), str(exc), hint)
    static = conf.get(INSTANCES, "").strip()
    dynamic = conf.get(f"{DYNAMIC}.enabled", "").strip().lower() == "true"
    if native and static.isascii() and static.isdigit() and not static.strip("0") and not dynamic:
        out.add(
            out.path_of(INSTANCES),
            '0 executors: spark-submit refuses it ("Number of executors must be a positive '
            'number") and so does the driver at start',
            f"use 1 or more, or enable dynamic allocation: {DYNAMIC}.enabled=true",
        )


def _check_forbidden(app: SparkApp, conf: Mapping[str, str], out: _Collector) -> None:
    for key, hint in _FORBIDDEN_KEYS.items():
        if key in conf:
            out.add(out.path_of(key), f"{key} cannot be set for a native submission", hint)
    for field, items in (
        ("driverHttpRouteList", app.spec.driver_http_route_list),
        ("driverGrpcRouteList", app.spec.driver_grpc_route_list),
    ):
        if items:
            out.add(
                f"spec.{field}",
                "Gateway API routes are only created by the operator",
                "submit with the operator, or use spec.sparkUI for the UI",
            )


def _check_names(app: SparkApp, conf: Mapping[str, str], out: _Collector) -> None:
    """Names Spark derives from the app name; report what sanitising cannot fix."""
    if not is_dns1123_subdomain(app.metadata.name):
        out.add(
            "metadata.name",
            f"{app.metadata.name!r} is not a valid object name",
            "lowercase letters, digits, '-' and '.', at most 253 characters",
        )
    ns = conf.get(f"{K8S}.namespace")
    if ns is not None and not is_dns1123_label(ns):
        out.add(out.path_of(f"{K8S}.namespace"), f"namespace {ns!r} is not a DNS-1123 label")
    name = app_name(app)
    prefix = resource_name_prefix(name, "0" * _UNIQUE_ID_LEN)
    name_path = (
        "spec.sparkConf[spark.app.name]"
        if "spark.app.name" in app.spec.spark_conf
        else "metadata.name"
    )
    longest = len("-driver-podspec-conf-map")
    if len(prefix) + longest > MAX_SUBDOMAIN or (
        f"{K8S}.executor.podNamePrefix" not in conf and len(prefix) > MAX_EXECUTOR_PREFIX
    ):
        out.add(
            name_path,
            f"application name is too long ({len(name)} characters)",
            "Kubernetes object names derived from it would exceed 253 characters; use at most 200",
        )
    pod = conf.get(f"{K8S}.driver.pod.name")
    if pod is not None and not is_dns1123_subdomain(pod):
        out.add(
            out.path_of(f"{K8S}.driver.pod.name"),
            f"driver pod name {pod!r} is invalid",
            "a DNS-1123 subdomain: lowercase alphanumerics, '-', '.'; at most 253 chars",
        )
    exec_prefix = conf.get(f"{K8S}.executor.podNamePrefix")
    if exec_prefix is not None and (
        len(exec_prefix) > MAX_EXECUTOR_PREFIX or not is_dns1123_subdomain(exec_prefix)
    ):
        out.add(
            out.path_of(f"{K8S}.executor.podNamePrefix"),
            f"executor pod name prefix {exec_prefix!r} is invalid",
            f"a DNS-1123 subdomain of at most {MAX_EXECUTOR_PREFIX} characters",
        )
