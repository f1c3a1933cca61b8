"""Hostile numbers and empty inputs of issue 26, finding 9: each is one problem naming its field,
never an error of Python's own (``int()`` of 5000 digits, ``float * heap`` = infinity)."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.spec import SparkApp, collect_problems, from_submit_args, validate
from sparkplane.spec.quantities import (
    MAX_EXECUTORS,
    QuantityError,
    memory_mib,
    overhead_factor,
    positive_int,
    positive_memory_mib,
    shown,
    whole_number,
)

BIG = "9" * 5000


def _app(conf: dict[str, str] | None = None, **spec: Any) -> SparkApp:
    base: dict[str, Any] = {
        "mainClass": "org.example.Main",
        "jars": "local:///app.jar",
        "image": "apache/spark:4.0.1",
        "sparkConf": conf or {},
    }
    base.update(spec)
    return SparkApp.model_validate({"metadata": {"name": "app"}, "spec": base})


def _one(app: SparkApp, *, native: bool = True) -> tuple[str, str]:
    with pytest.raises(ValidationError) as info:
        validate(app, native=native)
    (problem,) = info.value.problems
    assert len(str(info.value)) < 400, "a long value must not be echoed whole"
    return problem.path, problem.message


def test_shown_cuts_a_long_value() -> None:
    assert shown("512m") == "'512m'"
    assert shown(BIG) == "'999999999999...' (5000 characters)"


@pytest.mark.parametrize("parse", [memory_mib, positive_memory_mib, positive_int, overhead_factor])
def test_parsers_refuse_5000_digits_with_their_own_error(parse: Any) -> None:
    with pytest.raises(QuantityError, match=r"'999999999999\.\.\.' \(5000 characters\)"):
        parse(BIG)


def test_whole_number_bounds() -> None:
    assert whole_number(" 42 ", most=50) == 42
    with pytest.raises(QuantityError, match="is above the limit of 150000 executors"):
        whole_number(str(2**31), most=MAX_EXECUTORS, unit="executors")
    with pytest.raises(QuantityError, match="is above the limit"):
        whole_number(BIG, most=MAX_EXECUTORS)
    for bad in ("-1", "1.5", "", "٣"):
        with pytest.raises(QuantityError, match="is not a whole number"):
            whole_number(bad, most=10)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("spark.executor.instances", BIG, "above the limit of 150000 executors"),
        ("spark.executor.instances", str(2**31), "above the limit of 150000 executors"),
        ("spark.dynamicAllocation.maxExecutors", str(2**31), "above the limit of 2147483647"),
        ("spark.driver.memory", BIG, "more than any node has"),
        ("spark.driver.memory", "0", "less than 1 MiB"),
        ("spark.executor.memory", "0g", "less than 1 MiB"),
        ("spark.executor.memory", "1k", "less than 1 MiB"),
        ("spark.driver.memoryOverhead", "0", "less than 1 MiB"),
        ("spark.driver.cores", BIG, "more than any node has"),
        ("spark.kubernetes.driver.request.cores", BIG, "more than any node has"),
        ("spark.kubernetes.memoryOverheadFactor", "1e308", "more than any node has"),
        ("spark.executor.memoryOverheadFactor", "inf", "must be a finite number > 0"),
        ("spark.driver.memoryOverheadFactor", "nan", "must be a finite number > 0"),
        ("spark.driver.memoryOverheadFactor", BIG, "must be a finite number > 0"),
        ("spark.ui.port", BIG, "above the limit of 65535"),
        ("spark.driver.port", "http", "is not a whole number"),
    ],
)
def test_hostile_conf_values_are_one_problem_at_their_key(key: str, value: str, words: str) -> None:
    path, message = _one(_app({key: value}))
    assert path == f"spec.sparkConf[{key}]"
    assert words in message


def test_typed_fields_are_named_by_their_path() -> None:
    assert _one(_app(driver={"memory": "0"}))[0] == "spec.driver.memory"
    assert _one(_app(executor={"memoryOverhead": "0m"}))[0] == "spec.executor.memoryOverhead"
    path, message = _one(_app(executor={"instances": 2**31}))
    assert path == "spec.executor.instances" and "150000" in message


def test_min_overhead_may_be_zero() -> None:
    validate(_app({"spark.driver.minMemoryOverhead": "0"}))


def test_zero_executors_refused_natively_unless_dynamic_allocation() -> None:
    path, message = _one(_app({"spark.executor.instances": "0"}))
    assert path == "spec.sparkConf[spark.executor.instances]"
    assert "Number of executors must be a positive number" in message
    with pytest.raises(ValidationError) as info:
        validate(_app(executor={"instances": 0}))
    assert "spark.dynamicAllocation.enabled=true" in info.value.problems[0].hint
    validate(_app({"spark.executor.instances": "0", "spark.dynamicAllocation.enabled": "TRUE"}))


def test_zero_executors_accepted_for_apaches_operator() -> None:
    """Apache's operator (and its corpus) run driver-only apps: only native refuses them."""
    app = _app({"spark.executor.instances": "0"})
    validate(app, native=False)
    assert collect_problems(app) == []  # what the operator itself calls


def test_blank_primary_fields_are_empty() -> None:
    path, message = _one(_app(mainClass=" "))
    assert (path, message) == ("spec.mainClass", "is empty")
    problems = collect_problems(_app(jars=" , "))
    assert ("spec.jars", "is empty") in {(p.path, p.message) for p in problems}


def test_an_empty_primary_resource_on_the_command_line() -> None:
    with pytest.raises(ValidationError) as info:
        from_submit_args(["--class", "org.example.Main", ""])
    (problem,) = info.value.problems
    assert problem.path == "argv" and "the primary resource '' is empty" in problem.message


@pytest.mark.parametrize(
    "key",
    [
        "spark.driver.memory",
        "spark.driver.cores",
        "spark.executor.instances",
        "spark.ui.port",
        "spark.kubernetes.executor.limit.cores",
    ],
)
def test_leading_zeros_do_not_smuggle_a_long_number(key: str) -> None:
    """5000 zeros then a 1 is a small value, but ``int()`` (and the renderers) read it whole."""
    path, _ = _one(_app({key: "0" * 5000 + "1"}))
    assert path == f"spec.sparkConf[{key}]"
    validate(_app({key: "0002"}))
