"""spark-submit style flags → :class:`SparkApp`.

Owns the flag table: each spark-submit flag lands in the sparkConf key spark-submit itself
would set (``--driver-memory`` → ``spark.driver.memory``, ``--jars`` → ``spark.jars``...), with
spark-submit's precedence (an explicit flag beats the same key given with ``--conf``). Native
extras (``--image``, ``--namespace``, ``--label k=v``...) fill the typed spec fields. The first
positional argument is the application resource; everything after it is passed to the app.
:func:`split_submit_args` takes out what is not a spec (``--master``, ``--verbose``,
``--properties-file``) and refuses masters that are not Kubernetes; :func:`parse_properties`
reads a properties file's text as ``java.util.Properties`` does.
Called by :mod:`sparkplane.usecases.sources`. Pure: argv in, model out, every problem reported
at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from sparkplane.errors import Problem, ValidationError
from sparkplane.spec.models import (
    AppMetadata,
    RuntimeVersions,
    SecretsSpec,
    SparkApp,
    SparkApplicationSpec,
)
from sparkplane.spec.naming import app_name_label
from sparkplane.vocab import NO_RESOURCE

# Flags that become one sparkConf key, exactly as spark-submit maps them.
CONF_FLAGS: dict[str, str] = {
    "--name": "spark.app.name",
    "--jars": "spark.jars",
    "--py-files": "spark.submit.pyFiles",
    "--files": "spark.files",
    "--archives": "spark.archives",
    "--packages": "spark.jars.packages",
    "--exclude-packages": "spark.jars.excludes",
    "--repositories": "spark.jars.repositories",
    "--driver-memory": "spark.driver.memory",
    "--driver-cores": "spark.driver.cores",
    "--driver-java-options": "spark.driver.extraJavaOptions",
    "--driver-library-path": "spark.driver.extraLibraryPath",
    "--driver-class-path": "spark.driver.extraClassPath",
    "--executor-memory": "spark.executor.memory",
    "--executor-cores": "spark.executor.cores",
    "--num-executors": "spark.executor.instances",
}
# Native extras taking key=value pairs: flag -> (spec field, value, what the pair is)
PAIR_FLAGS: dict[str, tuple[str, str, str]] = {
    "--label": ("labels", "KEY=VALUE", "a label of the driver and executor pods"),
    "--annotation": ("annotations", "KEY=VALUE", "an annotation of the pods"),
    "--node-selector": ("node_selector", "KEY=VALUE", "a node selector of the pods"),
    "--env": ("env", "NAME=VALUE", "an environment variable of the pods"),
    "--secret": ("secret_mounts", "SECRET=PATH", "mount a Secret in the pods"),
    "--secret-env": ("secret_env", "NAME=SECRET:KEY", "an environment variable from a Secret"),
}
# The other flags taking a value: flag -> (value, what it does)
OTHER_VALUE_FLAGS: dict[str, tuple[str, str]] = {
    "--class": ("CLASS", "the main class of a JVM application"),
    "--conf": ("KEY=VALUE", "a Spark property (repeatable)"),
    "-c": ("KEY=VALUE", "same as --conf"),
    "--master": ("k8s://URL", "the cluster (default: the kubeconfig's); only k8s:// masters"),
    "--deploy-mode": ("cluster", "client is refused: a driver pod is always created"),
    "--proxy-user": ("USER", "the user the application runs as"),
    "--image": ("IMAGE", "the image of the driver and executors (spec.image)"),
    "--namespace": ("NS", "the namespace of the application"),
    "--service-account": ("SA", "the driver's service account"),
    "--priority-class": ("NAME", "the PriorityClass of the pods"),
    "--image-pull-policy": ("POLICY", "Always, IfNotPresent or Never"),
    "--spark-version": ("VERSION", "runtimeVersions.sparkVersion ({{SPARK_VERSION}} in images)"),
    "--properties-file": ("FILE", "spark.* defaults; --conf and the flags win"),
}
FLAG_ONLY = {"--verbose": "print the master, namespace and parsed spec", "-v": "same as --verbose"}
NOT_SPEC = {"--master", "--properties-file"}
# what the spec parser reads (the properties file is read before it, by the use-case layer)
VALUE_FLAGS = {*OTHER_VALUE_FLAGS, *CONF_FLAGS, *PAIR_FLAGS} - {"--properties-file"}


def accepted_flags() -> list[tuple[str, str]]:
    """Every spark-submit flag accepted (with its value) and what it does, for the help of
    ``sparkplane submit``/``render``: generated from the tables the parser uses."""
    rows = [(f"{flag} {value}", text) for flag, (value, text) in OTHER_VALUE_FLAGS.items()]
    rows += [(f"{flag} VALUE", f"sets {key}") for flag, key in CONF_FLAGS.items()]
    rows += [(f"{flag} {v}", f"{text} (repeatable)") for flag, (_, v, text) in PAIR_FLAGS.items()]
    return rows + list(FLAG_ONLY.items())


@dataclass(frozen=True)
class SubmitArgv:
    """spark-submit arguments with the parts that are not a spec taken out."""

    argv: list[str]
    master: str | None = None  # k8s://https://host:port
    verbose: bool = False
    properties_file: str | None = None


def split_submit_args(argv: list[str]) -> SubmitArgv:
    """Take ``--master``, ``--verbose`` and ``--properties-file`` out of the options (those
    before the primary resource; everything after it belongs to the application). A master
    that is not ``k8s://`` is refused: sparkplane only submits to Kubernetes."""
    rest: list[str] = []
    values: dict[str, str] = {}
    verbose = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            rest += argv[i:]
            break
        flag, eq, inline = arg.partition("=")
        if flag in FLAG_ONLY and not eq:
            verbose = True
        elif flag in NOT_SPEC:
            if eq:
                values[flag] = inline
            elif i + 1 < len(argv):
                i += 1
                values[flag] = argv[i]
            else:
                rest.append(arg)  # reported as "option needs a value" by the parser
        else:
            rest.append(arg)
            if not eq and flag not in FLAG_ONLY and i + 1 < len(argv):
                i += 1
                rest.append(argv[i])
        i += 1
    master = values.get("--master")
    if master is not None and not master.startswith("k8s://"):
        raise ValidationError(
            [
                Problem(
                    "--master",
                    f"{master!r} is not a Kubernetes master: sparkplane submits to Kubernetes "
                    "only (no local, yarn, spark:// or mesos:// masters)",
                    "use --master k8s://https://<api-server>, or leave it out to use the "
                    "kubeconfig's cluster",
                )
            ],
            subject="spark-submit arguments",
        )
    return SubmitArgv(rest, master, verbose, values.get("--properties-file"))


def k8s_master_url(master: str) -> str:
    """The API server URL of a ``k8s://`` master (``https://`` when no scheme is given, as in
    spark-submit)."""
    url = master.removeprefix("k8s://")
    return url if "://" in url else f"https://{url}"


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` / ``key: value`` / ``key value`` lines, ``#``/``!`` comments and
    backslash continuations, as ``java.util.Properties.load``; values are trimmed as
    spark-submit trims them."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        entry, pending = pending + line, ""
        seps = [i for i in (entry.find("="), entry.find(":"), entry.find(" ")) if i >= 0]
        cut = min(seps, default=len(entry))
        key, value = entry[:cut].strip(), entry[cut + 1 :].strip()
        if entry[cut : cut + 1] == " " and value[:1] in ("=", ":"):
            value = value[1:].strip()
        if key:
            props[key] = value
    return props


class _Parsed:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.conf: dict[str, str] = {}
        self.pairs: dict[str, dict[str, str]] = {f: {} for f, _, _ in PAIR_FLAGS.values()}
        self.resource: str | None = None
        self.app_args: list[str] = []
        self.problems: list[Problem] = []


def from_submit_args(argv: list[str]) -> SparkApp:
    """Parse spark-submit style arguments into a SparkApp, or raise ValidationError."""
    parsed = _parse(argv)
    spec_conf = dict(parsed.conf)
    for flag, key in CONF_FLAGS.items():
        if flag in parsed.values:
            spec_conf[key] = parsed.values[flag]
    main_class = parsed.values.get("--class")
    resource = parsed.resource
    fields: dict[str, object] = {}
    if resource is None or not resource.strip():
        # spark-submit: "Must specify a primary resource (JAR or Python or R file)"
        what = "no primary resource (JAR, Python or R file) given"
        if resource is not None:
            what = f"the primary resource {resource!r} is empty"
        parsed.problems.append(
            Problem(
                "argv",
                what + (f" for --class {main_class}" if main_class else ""),
                "as with spark-submit, end the options with the application, e.g. "
                "--class org.example.Main local:///opt/app.jar",
            )
        )
    elif resource == NO_RESOURCE:  # spark-submit's "no resource" (SparkLauncher.NO_RESOURCE)
        if not main_class:
            parsed.problems.append(
                Problem(
                    "--class",
                    f"{NO_RESOURCE} names no application jar, so the main class is needed",
                    "as with spark-submit, give --class (found in --jars or in the image)",
                )
            )
    elif resource.endswith(".py"):
        fields["py_files"] = resource
    elif resource.lower().endswith(".r"):
        fields["spark_r_files"] = resource
    else:
        fields["jars"] = resource
    deploy_mode = parsed.values.get("--deploy-mode", "cluster")
    if deploy_mode != "cluster":
        parsed.problems.append(
            Problem(
                "--deploy-mode",
                f"deploy mode {deploy_mode!r} is not supported",
                "sparkplane submits in cluster mode",
            )
        )
    name = spec_conf.get("spark.app.name") or main_class or os.path.basename(resource or "spark")
    spec_conf["spark.app.name"] = name
    if parsed.problems:
        raise ValidationError(parsed.problems, subject="spark-submit arguments")
    version = parsed.values.get("--spark-version")
    spec = SparkApplicationSpec(
        main_class=main_class,
        spark_conf=spec_conf,
        driver_args=parsed.app_args,
        proxy_user=parsed.values.get("--proxy-user"),
        runtime_versions=RuntimeVersions(spark_version=version) if version else None,
        image=parsed.values.get("--image"),
        image_pull_policy=parsed.values.get("--image-pull-policy"),
        service_account=parsed.values.get("--service-account"),
        priority_class_name=parsed.values.get("--priority-class"),
        labels=parsed.pairs["labels"],
        annotations=parsed.pairs["annotations"],
        node_selector=parsed.pairs["node_selector"],
        env=parsed.pairs["env"],
        secrets=SecretsSpec(mounts=parsed.pairs["secret_mounts"], env=parsed.pairs["secret_env"]),
        **fields,
    )
    metadata = AppMetadata(
        name=app_name_label(name) or "spark", namespace=parsed.values.get("--namespace")
    )
    return SparkApp(metadata=metadata, spec=spec)


def _parse(argv: list[str]) -> _Parsed:
    out = _Parsed()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if out.resource is not None:
            out.app_args.append(arg)
        elif not arg.startswith("-"):
            out.resource = arg
        else:
            flag, eq, inline = arg.partition("=")
            if flag not in VALUE_FLAGS:
                out.problems.append(Problem(flag, "unknown option", _near(flag)))
                if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                    i += 1  # most spark-submit options take a value; skip it
            elif eq:
                _store(out, flag, inline)
            elif i + 1 >= len(argv):
                out.problems.append(Problem(flag, "option needs a value"))
            else:
                i += 1
                _store(out, flag, argv[i])
        i += 1
    return out


def _store(out: _Parsed, flag: str, value: str) -> None:
    if flag in ("--conf", "-c") or flag in PAIR_FLAGS:
        key, sep, val = value.partition("=")
        if not sep or not key:
            out.problems.append(Problem(flag, f"{value!r} is not in the form key=value"))
        elif flag in PAIR_FLAGS:
            out.pairs[PAIR_FLAGS[flag][0]][key] = val
        else:
            out.conf[key] = val
    else:
        out.values[flag] = value


def _near(flag: str) -> str:
    import difflib

    close: Callable[..., list[str]] = difflib.get_close_matches
    match = close(flag, sorted(VALUE_FLAGS), n=1, cutoff=0.7)
    return f"did you mean {match[0]}?" if match else "see spark-submit --help"
