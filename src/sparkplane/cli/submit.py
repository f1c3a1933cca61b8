"""``sparkplane render`` and ``sparkplane submit``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sparkplane.cli.console import Output, dump, err, out, progress
from sparkplane.cli.inputs import Source, read_source
from sparkplane.cli.options import Context, Kubeconfig, make_kube
from sparkplane.errors import Problem, ValidationError
from sparkplane.lifecycle.apps import Mode
from sparkplane.lifecycle.submit import (
    SubmitOptions,
    render_native,
    submit_native,
    submit_objects,
    submit_operator,
)
from sparkplane.lifecycle.ttl import parse_duration
from sparkplane.render import render_operator_cr
from sparkplane.spec import validate

EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}
File = Annotated[
    Path | None,
    typer.Option("-f", "--file", help="A SparkApplication manifest.", exists=True, dir_okay=False),
]
TemplatePath = Annotated[
    Path | None,
    typer.Option(
        "--template",
        help="A directory or multi-document file of your own manifests (${VAR}).",
        exists=True,
    ),
]
Sets = Annotated[list[str], typer.Option("--set", help="VAR=value for --template (repeatable).")]
Values = Annotated[
    Path | None,
    typer.Option("--values", help="VAR=value lines for --template.", exists=True, dir_okay=False),
]
ModeOpt = Annotated[
    Mode,
    typer.Option(
        "--mode", help="native: driver pod; operator: a spark.apache.org SparkApplication."
    ),
]
Ns = Annotated[
    str | None,
    typer.Option(
        "-n",
        "--namespace",
        help="Namespace (default: the spec's, else default).",
        show_default=False,
    ),
]
SubmissionId = Annotated[
    str | None,
    typer.Option(
        "--submission-id", help="Makes submit idempotent: the same id gives the same app."
    ),
]
OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="yaml or json.")]
StagingServer = Annotated[
    str | None,
    typer.Option(
        "--staging-server",
        envvar="SPARKPLANE_STAGING_URL",
        help="Resource staging server URL: local jars/files/py-files are uploaded there and "
        "fetched by an init-container (native mode).",
        show_default=False,
    ),
]
StagingInternal = Annotated[
    str | None,
    typer.Option(
        "--staging-internal-server",
        help="The staging URL pods download from, if not --staging-server (e.g. "
        "http://sparkplane-staging.sparkplane-system.svc:10000 while you upload via a "
        "port-forward or an Ingress).",
        show_default=False,
    ),
]
StagingCa = Annotated[
    Path | None,
    typer.Option(
        "--staging-ca-file",
        help="CA bundle to trust for an HTTPS staging server (also given to the init-container).",
        exists=True,
        dir_okay=False,
        show_default=False,
    ),
]


def _objects(source: Source, mode: Mode, opts: SubmitOptions, server: str | None) -> list[Any]:
    if source.template is not None:
        return source.template.objects
    assert source.app is not None
    if mode is Mode.APACHE:
        validate(source.app)
        return [render_operator_cr(source.app)]
    return render_native(source.app, server, opts).objects


def render(
    ctx: typer.Context,
    file: File = None,
    template: TemplatePath = None,
    set_: Sets = [],  # noqa: B006 - typer reads the default
    values: Values = None,
    namespace: Ns = None,
    mode: ModeOpt = Mode.NATIVE,
    submission_id: SubmissionId = None,
    output: OutputOpt = Output.yaml,
    staging_server: StagingServer = None,
    staging_internal_server: StagingInternal = None,
    staging_ca_file: StagingCa = None,
) -> None:
    """Print the exact manifests a submission would create; nothing is created.

    Spark-submit style flags may follow the options, e.g. `sparkplane render --name pi
    --image apache/spark:4.0.1 --class org.apache.spark.examples.SparkPi
    local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar 100`.
    """
    submit(  # `submit --dry-run` and `render` are one code path, so they cannot differ
        ctx,
        file=file,
        template=template,
        set_=set_,
        values=values,
        namespace=namespace,
        mode=mode,
        submission_id=submission_id,
        dry_run=True,
        output=output if output is not Output.table else Output.yaml,
        staging_server=staging_server,
        staging_internal_server=staging_internal_server,
        staging_ca_file=staging_ca_file,
    )


def submit(
    ctx: typer.Context,
    file: File = None,
    template: TemplatePath = None,
    set_: Sets = [],  # noqa: B006
    values: Values = None,
    namespace: Ns = None,
    mode: ModeOpt = Mode.NATIVE,
    submission_id: SubmissionId = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl", help="Delete the app this long after it finishes (native; `sparkplane gc`)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only print (same as render).")
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the app finishes.")] = False,
    timeout: Annotated[float | None, typer.Option(help="Seconds for --wait.")] = None,
    output: OutputOpt = Output.yaml,
    staging_server: StagingServer = None,
    staging_internal_server: StagingInternal = None,
    staging_ca_file: StagingCa = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Submit an application: natively (default) or as a SparkApplication for an operator."""
    source = read_source(
        file=file,
        template=template,
        sets=set_,
        values=values,
        flags=list(ctx.args),
        namespace=namespace,
        submission_id=submission_id,
    )
    opts = SubmitOptions(
        submission_id=submission_id,
        ttl_seconds=int(parse_duration(ttl, field="--ttl").total_seconds()) if ttl else None,
        staging_server=staging_server,
        staging_internal_server=staging_internal_server,
        staging_ca_file=staging_ca_file,
    )
    if source.template is not None and (staging_server or mode is Mode.APACHE):
        raise ValidationError(
            [
                Problem(
                    "--template",
                    "template mode submits your own manifests natively: "
                    "--staging-server and --mode operator do not apply",
                    "reference files already in the image (local://) or use -f with a spec",
                )
            ],
            subject="command line",
        )
    if dry_run:
        dump(_objects(source, mode, opts, None), output)
        return
    kube = make_kube(kubeconfig, context)
    if source.template is not None:
        t = source.template
        result = submit_objects(kube, t.driver, t.dependents, opts=opts)
    elif mode is Mode.APACHE:
        assert source.app is not None
        result = submit_operator(kube, source.app, opts)
    else:
        assert source.app is not None
        result = submit_native(kube, source.app, opts)
    verb = "already submitted" if result.existing else "submitted"
    if result.completed:
        verb = f"completed an interrupted submission (added {', '.join(result.completed)}) of"
    err.print(
        f"{verb} [bold]{result.name}[/bold] in {result.namespace} ({result.mode.value}); "
        f"created {', '.join(result.objects)}"
    )
    out.print(result.name, markup=False)
    if wait:
        from sparkplane.cli.apps import wait_for_app

        wait_for_app(kube, result.name, result.namespace, "finished", timeout)
    progress(f"follow it with: sparkplane logs -f {result.name} -n {result.namespace}")
