"""Where an application spec comes from on the command line: a SparkApplication manifest
(``-f``), a template directory or file (``--template`` with ``--set``/``--values``), or
spark-submit style flags after the options."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml

from sparkplane.errors import Problem, ValidationError
from sparkplane.spec import SparkApp, from_submit_args, load_manifest
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
        vals = parse_env(values.read_text(), source=str(values)) if values else {}
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
        app = load_manifest(yaml.safe_load(file.read_text()))
    else:
        app = from_submit_args(flags)
    if namespace and not app.metadata.namespace:
        app = app.model_copy(
            update={"metadata": app.metadata.model_copy(update={"namespace": namespace})}
        )
    return Source(app=app)
