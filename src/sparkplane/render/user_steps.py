"""Choosing the driver's steps: built-ins a spec excludes, and user steps it adds.

Two sparkConf keys, sparkplane's counterparts of Spark's ``spark.kubernetes.driver.pod.
excludedFeatureSteps`` and ``…featureSteps`` (reference §2.2):

``spark.kubernetes.sparkplane.driver.excludedSteps``
    comma-separated ids of built-in steps to leave out (``DRIVER_STEP_IDS``). An unknown id,
    or a step that cannot be left out (``required``, or ``needs``-ed by a step that applies),
    is a :class:`~sparkplane.errors.ValidationError` naming the key.
``spark.kubernetes.sparkplane.driver.steps``
    comma-separated ``module:attribute`` import paths of user steps, run in that order after
    every other built-in step and before ``spark-conf``. The attribute is a
    :class:`~sparkplane.render.step.Step` class or zero-argument factory (called once), or a
    step object. Only the submitting process imports them (``render(import_steps=True)``);
    anything else that renders, the operator above all, refuses the key: a SparkApplication is
    tenant input, and a tenant must not make the operator import and run code.

Spark's own driver keys name JVM classes that only spark-submit's builder runs; sparkplane
renders the driver itself, so they are refused rather than silently ignored. (Spark's
*executor* feature steps run in the driver JVM and pass through sparkConf unchanged.)

This is the one module of ``sparkplane.render`` that imports code; everything else is pure.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sparkplane.errors import Problem, ValidationError
from sparkplane.render.driver_steps import DRIVER_STEP_IDS, DRIVER_STEPS, SPARK_CONF
from sparkplane.render.step import Step
from sparkplane.spec.conf import K8S, split_list
from sparkplane.spec.models import SparkApp

EXCLUDED_STEPS = f"{K8S}.sparkplane.driver.excludedSteps"
USER_STEPS = f"{K8S}.sparkplane.driver.steps"
SPARK_FEATURE_STEPS = f"{K8S}.driver.pod.featureSteps"
SPARK_EXCLUDED_STEPS = f"{K8S}.driver.pod.excludedFeatureSteps"

_IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def path_of(key: str) -> str:
    """The field a conf key is written in."""
    return f"spec.sparkConf[{key}]"


def excluded(app: SparkApp, conf: Mapping[str, str]) -> tuple[set[str], list[Problem]]:
    """The ids ``conf`` excludes, and what is wrong with the exclusion."""
    ids = split_list(conf.get(EXCLUDED_STEPS))
    known = ", ".join(DRIVER_STEP_IDS)
    problems: list[Problem] = []
    unknown = [i for i in ids if i not in DRIVER_STEP_IDS]
    if unknown:
        problems.append(
            Problem(
                path_of(EXCLUDED_STEPS),
                f"unknown step id(s) {', '.join(map(repr, unknown))}",
                f"known ids: {known}",
            )
        )
    for spec in DRIVER_STEPS:
        if spec.required and spec.name in ids:
            problems.append(
                Problem(
                    path_of(EXCLUDED_STEPS),
                    f"step {spec.name!r} cannot be excluded: the rendered driver relies on it",
                    f"remove {spec.name!r} from the list",
                )
            )
        blocked = [n for n in spec.needs if n in ids]
        if blocked and spec.when(app, conf):
            problems.append(
                Problem(
                    path_of(EXCLUDED_STEPS),
                    f"step(s) {', '.join(map(repr, blocked))} cannot be excluded: "
                    f"step {spec.name!r} applies and needs them",
                    "remove them from the list",
                )
            )
    return set(ids), problems


def spark_key_problems(conf: Mapping[str, str]) -> list[Problem]:
    """Spark's driver feature-step keys, which sparkplane cannot honour."""
    out = []
    if conf.get(SPARK_FEATURE_STEPS):
        out.append(
            Problem(
                path_of(SPARK_FEATURE_STEPS),
                "names JVM classes that only spark-submit runs; sparkplane renders the driver "
                "itself",
                f"write the step in Python and name it in {USER_STEPS} (module:Callable)",
            )
        )
    if conf.get(SPARK_EXCLUDED_STEPS):
        out.append(
            Problem(
                path_of(SPARK_EXCLUDED_STEPS),
                "names Spark's JVM step classes; sparkplane's driver steps have ids",
                f"name ids in {EXCLUDED_STEPS} (known: {', '.join(DRIVER_STEP_IDS)})",
            )
        )
    return out


def named_steps(conf: Mapping[str, str], *, import_steps: bool) -> tuple[list[Step], list[Problem]]:
    """The user steps ``conf`` names, imported only when ``import_steps`` (see the module)."""
    paths = split_list(conf.get(USER_STEPS))
    if not paths:
        return [], []
    if not import_steps:
        return [], [
            Problem(
                path_of(USER_STEPS),
                "names Python code to import, and this renderer imports none (the operator "
                "never imports code a SparkApplication names)",
                "submit natively from your own process (sparkplane submit/render, "
                "SparkPlane.submit), or remove the key",
            )
        ]
    steps: list[Step] = []
    problems: list[Problem] = []
    for path in paths:
        step, problem = _load(path)
        if problem:
            problems.append(Problem(path_of(USER_STEPS), problem, _LOAD_HINT))
        elif step is not None:
            steps.append(step)
    return steps, problems


_LOAD_HINT = "a Step class, zero-argument factory or step object, importable by the submitter"


def _load(path: str) -> tuple[Step | None, str]:
    if not _IMPORT_PATH.match(path):
        return None, f"{path!r} is not an import path module:attribute"
    module_name, _, attr = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        make = isinstance(target, type) or (callable(target) and not hasattr(target, "apply"))
        step = target() if make else target
    except Exception as exc:  # user code: any failure is the user's to fix, shown in one line
        return None, f"cannot load {path!r}: {type(exc).__name__}: {exc}"
    if not is_step(step):
        return None, f"{path!r} gave {type(step).__name__}, not a step"
    return step, ""


def is_step(obj: object) -> bool:
    """Whether ``obj`` has what :class:`Step` asks: a non-empty ``name`` and ``apply``."""
    name = getattr(obj, "name", None)
    return isinstance(name, str) and bool(name) and callable(getattr(obj, "apply", None))


def user_step_problems(steps: Iterable[tuple[Step, str]]) -> list[Problem]:
    """User steps (each with the field that gave it) that are not steps, or whose ids clash
    with a built-in's or each other's."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for step, where in steps:
        if not is_step(step):
            problems.append(
                Problem(where, f"{step!r} is not a step", "give it a str name and apply()")
            )
        elif step.name in DRIVER_STEP_IDS or step.name in seen:
            problems.append(
                Problem(
                    where,
                    f"user step id {step.name!r} is already taken",
                    f"give each user step its own id (built-in: {', '.join(DRIVER_STEP_IDS)})",
                )
            )
        else:
            seen.add(step.name)
    return problems


def choose(
    app: SparkApp, conf: Mapping[str, str], extra: Sequence[Step], *, import_steps: bool
) -> list[Step]:
    """The steps ``app`` gets: the built-ins that apply and are not excluded, then the user
    steps (``conf``'s, then ``extra``), then ``spark-conf``. Raises ValidationError naming the
    key of every problem."""
    exclude, problems = excluded(app, conf)
    problems += spark_key_problems(conf)
    named, more = named_steps(conf, import_steps=import_steps)
    problems += more
    problems += user_step_problems(
        [*((s, path_of(USER_STEPS)) for s in named), *((s, "extra_steps") for s in extra)]
    )
    if problems:
        raise ValidationError(problems, subject=f"driver steps of {app.name!r}")
    chosen = [s for s in DRIVER_STEPS if s.name not in exclude and s.when(app, conf)]
    head = [s.step for s in chosen if s.name != SPARK_CONF]
    tail = [s.step for s in chosen if s.name == SPARK_CONF]
    return [*head, *named, *extra, *tail]
