"""Where an application spec comes from on the command line: a SparkApplication manifest
(``-f``), a template directory or file (``--template`` with ``--set``/``--values``), or
spark-submit style flags after the options."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path

from sparkplane import yamlio
from sparkplane.errors import Problem, ValidationError
from sparkplane.spec import PodTemplateHolder, SparkApp, from_submit_args, load_manifest
from sparkplane.templates import TemplateApp, load_app, parse_assignments, parse_env


@dataclass(frozen=True)
class Source:
    """Exactly one of ``app`` (a spec) or ``template`` (the user's own manifests)."""

    app: SparkApp | None = None
    template: TemplateApp | None = None


def read_source(
    *,
    file: Path | None,
    template: Path | None,
    sets: list[str],
    values: Path | None,
    flags: list[str],
    namespace: str | None,
    submission_id: str | None,
) -> Source:
    """Resolve the command line into a spec or a template app; report conflicts clearly."""
    given = [
        n for n, v in (("-f", file), ("--template", template), ("spark-submit flags", flags)) if v
    ]
    if len(given) != 1:
        raise ValidationError(
            [
                Problem(
                    "input",
                    f"give exactly one of -f, --template or spark-submit flags "
                    f"(got {', '.join(given) or 'none'})",
                    "e.g. `sparkplane submit -f examples/spark-pi.yaml`",
                )
            ],
            subject="command line",
        )
    if template is not None:
        vals = (
            parse_env(yamlio.read_text(values, subject="template values"), source=str(values))
            if values
            else {}
        )
        vals.update(parse_assignments(sets))
        if namespace:
            vals.setdefault("NAMESPACE", namespace)
        suffix = (
            hashlib.sha256(submission_id.encode()).hexdigest()[:10]
            if submission_id
            else secrets.token_hex(5)
        )
        vals.setdefault("NAME_SUFFIX", suffix)
        return Source(template=load_app(template, vals))
    if file is not None:
        if sets or values:
            raise ValidationError(
                [Problem("--set", "--set/--values only apply to --template")],
                subject="command line",
            )
        app = load_manifest(yamlio.load_mapping_file(file, subject="SparkApplication manifest"))
    else:
        app = app_from_submit_args(flags)
    if namespace and not app.metadata.namespace:
        app = app.model_copy(
            update={"metadata": app.metadata.model_copy(update={"namespace": namespace})}
        )
    return Source(app=app)


POD_TEMPLATE_EXAMPLE = "e.g. apiVersion: v1, kind: Pod, spec: {containers: [...]}"
TEMPLATE_FILE_KEYS = {
    "driver": "spark.kubernetes.driver.podTemplateFile",
    "executor": "spark.kubernetes.executor.podTemplateFile",
}


def app_from_submit_args(argv: list[str]) -> SparkApp:
    """spark-submit flags as a spec; ``*.podTemplateFile`` confs naming local files are read
    into ``driverSpec``/``executorSpec`` (the spec carries templates as data, not paths), so a
    spark-submit command line works unchanged."""
    files: dict[str, Path] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--conf" and i + 1 < len(argv):
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
