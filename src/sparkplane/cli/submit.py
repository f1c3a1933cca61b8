"""``sparkplane render`` and ``sparkplane submit``: parse, call ``SparkPlane``, print.

spark-submit arguments follow sparkplane's own options; the primary resource ends the options
and everything after it is the application's (``sparkplane.cli.argv`` splits the command line
before the option parser sees it, so ``-n 5`` or ``-h`` after the jar reach the app).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.core

from sparkplane.cli.console import Output, dump, note, progress, write
from sparkplane.cli.options import Context, Kubeconfig, Namespace, client, seconds_option
from sparkplane.model.apps import Mode

if TYPE_CHECKING:
    from sparkplane.api.client import SparkPlane

commands = typer.Typer()
EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}
File = Annotated[
    Path | None,
    typer.Option("-f", "--file", help="A SparkApplication manifest.", dir_okay=False),
]
TemplatePath = Annotated[
    Path | None,
    typer.Option(
        "--template", help="A directory or multi-document file of your own manifests (${VAR})."
    ),
]
Sets = Annotated[list[str], typer.Option("--set", help="VAR=value for --template (repeatable).")]
Values = Annotated[
    Path | None,
    typer.Option("--values", help="VAR=value lines for --template.", dir_okay=False),
]
ModeOpt = Annotated[
    Mode,
    typer.Option(
        "--mode",
        help="native: driver pod; operator: a spark.apache.org SparkApplication; kubeflow: a "
        "sparkoperator.k8s.io/v1beta2 SparkApplication.",
    ),
]
SubmissionId = Annotated[
    str | None,
    typer.Option(
        "--submission-id", help="Makes submit idempotent: the same id gives the same app."
    ),
]
QueueOpt = Annotated[
    str | None,
    typer.Option(
        "--queue",
        help="The Kueue LocalQueue of the namespace the app waits in (label "
        "kueue.x-k8s.io/queue-name): natively its driver and each executor wait for Kueue's "
        "admission; operator/kubeflow: the SparkApplication is queued (docs/queues.md).",
        show_default=False,
    ),
]
OutputOpt = Annotated[Output, typer.Option("-o", "--output", help="yaml, json or name.")]
SubmitOutput = Annotated[
    Output | None,
    typer.Option(
        "-o",
        "--output",
        help="yaml or json: the objects created, as a List (kubectl create -o); name: "
        "kind/name of each. Default: the application's name.",
        show_default=False,
    ),
]
StagingServer = Annotated[
    str | None,
    typer.Option(
        "--staging-server",
        envvar="SPARKPLANE_STAGING_URL",
        help="Resource staging server URL: local jars/files/py-files/archives are uploaded "
        "there, fetched by an init-container and handed to Spark as file:// URIs, so "
        "SparkFiles.get and archive #aliases work as with spark-submit's upload path "
        "(native mode).",
        show_default=False,
    ),
]
StagingInternal = Annotated[
    str | None,
    typer.Option(
        "--staging-internal-server",
        help="The staging URL pods download from, if not --staging-server.",
        show_default=False,
    ),
]
StagingCa = Annotated[
    Path | None,
    typer.Option(
        "--staging-ca-file",
        help="CA bundle to trust for an HTTPS staging server (also given to the init-container).",
        dir_okay=False,
        show_default=False,
    ),
]


PYTHON_ENV_HELP = [
    (
        "PYSPARK_PYTHON",
        "The Python of the executors (e.g. ./env/bin/python from --archives env.tgz#env) and "
        "of the driver, when spark.pyspark.python is unset.",
    ),
    (
        "PYSPARK_DRIVER_PYTHON",
        "The driver's Python, when spark.pyspark.driver.python and spark.pyspark.python are unset.",
    ),
]


class SubmitCommand(typer.core.TyperCommand):
    """``submit``/``render``: their help also lists the spark-submit flags they accept, from
    the parser's own table (:func:`sparkplane.spec.submit_args.accepted_flags`)."""

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        from sparkplane.cli.argv import OWN_FLAGS, OWN_VALUE
        from sparkplane.spec.submit_args import accepted_flags

        own = OWN_VALUE | OWN_FLAGS  # -n/--namespace: listed above, as sparkplane's own
        with formatter.section("spark-submit arguments (before the primary resource)"):
            rows = [(f, t) for f, t in accepted_flags() if f.split()[0] not in own]
            formatter.write_dl(rows)
        with formatter.section("Environment (native mode, Python apps, as spark-submit)"):
            formatter.write_dl(PYTHON_ENV_HELP)
        super().format_epilog(ctx, formatter)


def _client(
    kubeconfig: str | None, context: str | None, namespace: str | None, *, offline_ok: bool
) -> SparkPlane:
    """The client; a dry run also works with no kubeconfig at all (nothing is contacted)."""
    from sparkplane.api.client import SparkPlane
    from sparkplane.errors import ConfigError

    try:
        return client(kubeconfig, context, namespace)
    except ConfigError:
        if not offline_ok or kubeconfig or context:
            raise
        return SparkPlane.offline(namespace or "default")


@commands.command(context_settings=EXTRA, cls=SubmitCommand)
def render(
    ctx: typer.Context,
    file: File = None,
    template: TemplatePath = None,
    set_: Sets = [],  # noqa: B006 - typer reads the default
    values: Values = None,
    namespace: Namespace = None,
    mode: ModeOpt = Mode.NATIVE,
    submission_id: SubmissionId = None,
    queue: QueueOpt = None,
    output: OutputOpt = Output.yaml,
    staging_server: StagingServer = None,
    staging_internal_server: StagingInternal = None,
    staging_ca_file: StagingCa = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Print the exact manifests a submission would create; nothing is created.

    spark-submit arguments may follow the options, e.g. `sparkplane render --name pi
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
        queue=queue,
        dry_run=True,
        output=output if output not in (Output.table, Output.wide) else Output.yaml,
        staging_server=staging_server,
        staging_internal_server=staging_internal_server,
        staging_ca_file=staging_ca_file,
        kubeconfig=kubeconfig,
        context=context,
    )


@commands.command(context_settings=EXTRA, cls=SubmitCommand)
def submit(
    ctx: typer.Context,
    file: File = None,
    template: TemplatePath = None,
    set_: Sets = [],  # noqa: B006
    values: Values = None,
    namespace: Namespace = None,
    mode: ModeOpt = Mode.NATIVE,
    submission_id: SubmissionId = None,
    queue: QueueOpt = None,
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
    timeout: Annotated[
        float | None, typer.Option(help="Seconds for --wait.", callback=seconds_option)
    ] = None,
    output: SubmitOutput = None,
    staging_server: StagingServer = None,
    staging_internal_server: StagingInternal = None,
    staging_ca_file: StagingCa = None,
    kubeconfig: Kubeconfig = None,
    context: Context = None,
) -> None:
    """Submit an application: natively (default) or as a SparkApplication for an operator.

    Inputs: -f SPEC, --template DIR, or spark-submit arguments (the primary resource ends the
    options; what follows it is passed to the application)."""
    from sparkplane.errors import Problem, ValidationError
    from sparkplane.model.ttl import parse_duration

    if output in (Output.table, Output.wide):
        raise ValidationError(
            [Problem("--output", f"{output.value} does not apply here", "use yaml, json or name")],
            subject="command line",
        )
    ttl_after = parse_duration(ttl, field="--ttl") if ttl else None  # before any connection
    sp = _client(kubeconfig, context, namespace, offline_ok=dry_run)
    source = sp.source(
        file,
        argv=list(ctx.args) or None,
        template=template,
        values=values,
        set=set_,
        namespace=namespace,
        submission_id=submission_id,
    )
    if source.verbose:
        note(f"master: {source.master or 'the kubeconfig cluster'}")
        note(f"namespace: {source.namespace or sp.namespace}")
        if source.app is not None:
            import yaml

            spec = source.app.model_dump(by_alias=True, exclude_defaults=True, mode="json")
            note("parsed spec:\n" + yaml.safe_dump(spec, sort_keys=False).rstrip())
    for warning in source.warnings:  # what spark-submit accepts and ignores, or skips
        note(f"warning: {warning}")
    if dry_run:
        objects = sp.render(
            source,
            mode=mode,
            submission_id=submission_id,
            queue=queue,
            staging_server=staging_server,
            staging_internal_server=staging_internal_server,
            staging_ca_file=staging_ca_file,
        )
        if output is Output.name:
            for obj in objects:
                write(f"{obj['kind'].lower()}/{obj['metadata']['name']}")
        else:
            dump(objects, output or Output.yaml)
        return
    result = sp.submit(
        source,
        mode=mode,
        submission_id=submission_id,
        ttl=ttl_after,
        queue=queue,
        staging_server=staging_server,
        staging_internal_server=staging_internal_server,
        staging_ca_file=staging_ca_file,
    )
    verb = "already submitted" if result.existing else "submitted"
    if result.completed:
        verb = f"completed an interrupted submission (added {', '.join(result.completed)}) of"
    note(
        f"{verb} {result.name} in {result.namespace} ({result.mode.value}); "
        f"created {', '.join(result.objects)}"
    )
    if output is None:
        write(result.name)
    elif output is Output.name:
        for obj in result.created:
            write(f"{obj['kind'].lower()}/{obj['metadata']['name']}")
    else:  # as `kubectl create -o json|yaml`: the objects as the API server returned them
        items = list(result.created)
        dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}}, output)
    if wait:
        from sparkplane.cli.apps import wait_for_app

        wait_for_app(sp, result.name, result.namespace, "finished", timeout)
    progress(f"follow it with: sparkplane logs -f {result.name} -n {result.namespace}")
