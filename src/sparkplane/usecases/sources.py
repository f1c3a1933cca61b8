"""Where an application comes from: a SparkApplication manifest, spark-submit argv, or a
template directory; resolved into one :class:`Source` the submission use-case takes.

Owns the rules every front end shares (the CLI and :class:`sparkplane.SparkPlane` alike):
exactly one input; ``*.podTemplateFile`` confs naming local files are read into the spec;
``--properties-file`` (and ``--verbose``) of spark-submit; the template ``NAME_SUFFIX`` (derived
from the submission id, else random) and ``NAMESPACE`` values; the namespace rule of kubectl
(an explicit namespace that differs from the manifest's is an error, never silently replaced).
Reads local files only; never talks to Kubernetes.
"""

from __future__ import annotations

import copy
import hashlib
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sparkplane import yamlio
from sparkplane.errors import Problem, ValidationError
from sparkplane.spec import PodTemplateHolder, SparkApp, from_submit_args, load_manifest
from sparkplane.spec.conf import mapped_conf
from sparkplane.spec.kubeflow import to_apache
from sparkplane.spec.submit_args import parse_properties, split_submit_args
from sparkplane.spec.validate import collect_warnings
from sparkplane.templates import TemplateApp, load_app, parse_assignments, parse_env
from sparkplane.usecases.conf_dir import max_size, read_conf_dir
from sparkplane.vocab import KUBEFLOW_API_VERSION

PathLike = str | os.PathLike[str]
TEMPLATE_FILE_KEYS = {
    "driver": "spark.kubernetes.driver.podTemplateFile",
    "executor": "spark.kubernetes.executor.podTemplateFile",
}


@dataclass(frozen=True)
class Source:
    """Exactly one of ``app`` (a spec), ``template`` (the user's own manifests) or
    ``kubeflow`` (a ``sparkoperator.k8s.io/v1beta2`` SparkApplication, created as it is)."""

    app: SparkApp | None = None
    template: TemplateApp | None = None
    kubeflow: dict[str, Any] | None = None
    master: str | None = None  # spark-submit --master, checked against the cluster
    verbose: bool = False  # spark-submit --verbose
    notes: list[str] = field(default_factory=list)  # what --verbose prints
    # what spark-submit accepts and ignores, or skips (submitted anyway; the CLI prints them)
    warnings: tuple[Problem, ...] = ()
    # the submitter's SPARK_CONF_DIR files a native submission ships (``usecases.conf_dir``)
    conf_files: tuple[tuple[str, str], ...] = ()

    @property
    def namespace(self) -> str | None:
        if self.template is not None:
            return self.template.namespace
        if self.kubeflow is not None:
            return (self.kubeflow.get("metadata") or {}).get("namespace")
        return self.app.metadata.namespace if self.app is not None else None


def _problem(path: str, message: str, hint: str = "") -> ValidationError:
    return ValidationError([Problem(path, message, hint)], subject="command line")


def read_yaml_document(path: PathLike, what: str = "manifest") -> dict[str, Any]:
    """One YAML mapping from ``path`` through the bounded reader (size, aliases, depth,
    duplicate keys, tags): every bad file is one :class:`ValidationError` naming it."""
    return yamlio.load_mapping_file(path, what=f"a SparkApplication {what}", subject=what)


def with_namespace(app: SparkApp, namespace: str | None, *, explicit: bool) -> SparkApp:
    """``app`` in ``namespace``: an explicit namespace that differs from the spec's is an
    error (as kubectl refuses it); a default namespace only fills in a missing one."""
    # spark-submit's way to name it: `--conf spark.kubernetes.namespace=NS`
    current = app.metadata.namespace or app.spec.spark_conf.get("spark.kubernetes.namespace")
    if current and namespace and current != namespace:
        if explicit:
            raise _problem(
                "--namespace",
                f"the namespace from the command line ({namespace}) does not match the "
                f"namespace of the application ({current})",
                "drop -n, or change metadata.namespace",
            )
        return app
    if current or not namespace:
        return app
    meta = app.metadata.model_copy(update={"namespace": namespace})
    return app.model_copy(update={"metadata": meta})


def template_values(
    values_file: PathLike | None,
    sets: Sequence[str] | Mapping[str, str],
    namespace: str | None,
    submission_id: str | None,
) -> dict[str, str]:
    """The ``${VAR}`` values of template mode: the file, then ``--set``, then ``NAMESPACE``
    and ``NAME_SUFFIX`` (derived from the submission id so a retry meets the same names)."""
    vals: dict[str, str] = {}
    if values_file is not None:
        p = Path(values_file)
        text = yamlio.read_text(p, subject="template values")
        vals.update(parse_env(text, source=str(p)))
    vals.update(dict(sets) if isinstance(sets, Mapping) else parse_assignments(list(sets)))
    if namespace:
        vals.setdefault("NAMESPACE", namespace)
    suffix = (
        hashlib.sha256(submission_id.encode()).hexdigest()[:10]
        if submission_id
        else secrets.token_hex(5)
    )
    vals.setdefault("NAME_SUFFIX", suffix)
    return vals


def read_source(
    *,
    spec: SparkApp | Mapping[str, Any] | PathLike | None = None,
    argv: Sequence[str] | None = None,
    template: PathLike | None = None,
    values: PathLike | None = None,
    sets: Sequence[str] | Mapping[str, str] = (),
    namespace: str | None = None,
    explicit_namespace: bool = True,
    submission_id: str | None = None,
) -> Source:
    """Resolve one input into a spec or a template app; report conflicts clearly."""
    given = [n for n, v in (("-f", spec), ("--template", template), ("argv", argv)) if v]
    if len(given) != 1:
        raise _problem(
            "input",
            "give exactly one of -f, --template or spark-submit arguments "
            f"(got {', '.join(given) or 'none'})",
            "e.g. `sparkplane submit -f examples/spark-pi.yaml`",
        )
    if template is not None:
        vals = template_values(values, sets, namespace, submission_id)
        app_t = load_app(Path(template), vals)
        if explicit_namespace and namespace and app_t.namespace not in (None, namespace):
            raise _problem(
                "--namespace",
                f"the namespace from the command line ({namespace}) does not match the "
                f"template's driver namespace ({app_t.namespace})",
                "drop -n, or use ${NAMESPACE} in the template",
            )
        if app_t.namespace is None and namespace:
            app_t = _template_in(app_t, namespace)
        return Source(template=app_t)
    if sets or values:
        raise _problem("--set", "--set/--values only apply to --template")
    if argv:
        parsed = split_submit_args(list(argv))
        defaults = properties_file_args(parsed.properties_file) if parsed.properties_file else []
        app = app_from_submit_args([*defaults, *parsed.argv])
        source = Source(app=app, master=parsed.master, verbose=parsed.verbose)
    elif isinstance(spec, SparkApp):
        source = Source(app=spec)
    else:
        assert spec is not None
        doc = spec if isinstance(spec, Mapping) else read_yaml_document(spec)
        if doc.get("apiVersion") == KUBEFLOW_API_VERSION:
            return kubeflow_source(doc, namespace, explicit=explicit_namespace)
        source = Source(app=load_manifest(doc))
    assert source.app is not None
    app = with_namespace(source.app, namespace, explicit=explicit_namespace)
    warnings = tuple(collect_warnings(app))
    return Source(app=app, master=source.master, verbose=source.verbose, warnings=warnings)


def with_conf_dir(source: Source, directory: str | Path) -> Source:
    """``source`` with the files of the submitter's conf ``directory`` that spark-submit would
    ship to its driver (a spec only; templates and Kubeflow files are created as they are)."""
    if source.app is None or not directory:
        return source
    found = read_conf_dir(directory, max_size(mapped_conf(source.app)))
    skipped = tuple(Problem("SPARK_CONF_DIR", f"not shipped: {why}") for why in found.skipped)
    return replace(source, conf_files=found.files, warnings=source.warnings + skipped)


def kubeflow_source(doc: Mapping[str, Any], namespace: str | None, *, explicit: bool) -> Source:
    """A v1beta2 SparkApplication file: checked as sparkplane's operator will check it (every
    refused or unknown field named, before anything is created), placed in ``namespace``."""
    to_apache(doc)
    out = copy.deepcopy(dict(doc))
    meta = out.setdefault("metadata", {})
    given = meta.get("namespace")
    if explicit and namespace and given not in (None, namespace):
        raise _problem(
            "--namespace",
            f"the namespace from the command line ({namespace}) does not match the file's "
            f"({given})",
            "drop -n, or metadata.namespace",
        )
    if namespace and (explicit or not given):
        meta["namespace"] = namespace
    return Source(kubeflow=out)


def properties_file_args(path: PathLike) -> list[str]:
    """``--properties-file``: its ``spark.*`` entries as ``--conf`` arguments placed before the
    command line's, so explicit ``--conf`` and flags win (spark-submit's precedence)."""
    text = yamlio.read_text(path, subject="--properties-file")
    props = parse_properties(text)
    return [a for k, v in props.items() if k.startswith("spark.") for a in ("--conf", f"{k}={v}")]


def _template_in(app: TemplateApp, namespace: str) -> TemplateApp:
    """Objects without a namespace go to ``namespace`` (kubectl's -n for manifests)."""

    def placed(obj: dict[str, Any]) -> dict[str, Any]:
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("namespace", namespace)
        return {**obj, "metadata": meta}

    return TemplateApp(placed(app.driver), [placed(o) for o in app.dependents], namespace)


POD_TEMPLATE_EXAMPLE = "e.g. apiVersion: v1, kind: Pod, spec: {containers: [...]}"


def app_from_submit_args(argv: list[str]) -> SparkApp:
    """spark-submit arguments as a spec; ``*.podTemplateFile`` confs naming local files are
    read into ``driverSpec``/``executorSpec`` (the spec carries templates as data, not paths),
    so a spark-submit command line works unchanged."""
    files: dict[str, Path] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--conf", "-c") and i + 1 < len(argv):
            key, _, value = argv[i + 1].partition("=")
            role = next((r for r, k in TEMPLATE_FILE_KEYS.items() if k == key), None)
            if role and "://" not in value.removeprefix("file://"):
                files[role] = Path(value.removeprefix("file://"))
            else:
                rest += [arg, argv[i + 1]]
            i += 2
            continue
        rest.append(arg)
        i += 1
    app = from_submit_args(rest)
    update: dict[str, PodTemplateHolder] = {}
    problems: list[Problem] = []
    for role, path in files.items():
        try:
            pod = yamlio.load_mapping_file(
                path, what="a pod template (a Pod manifest)", example=POD_TEMPLATE_EXAMPLE
            )
        except ValidationError as exc:
            problems += [Problem(TEMPLATE_FILE_KEYS[role], str(p)) for p in exc.problems]
            continue
        body = {k: v for k, v in pod.items() if k in ("metadata", "spec")}
        update[f"{role}_spec"] = PodTemplateHolder(pod_template_spec=body)
    if problems:
        raise ValidationError(problems, subject="command line")
    if update:
        app = app.model_copy(update={"spec": app.spec.model_copy(update=update)})
    return app
