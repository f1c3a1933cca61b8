"""The operator's settings: one object, merged in one place (defaults, environment, flags)."""

from __future__ import annotations

from pathlib import Path

import sparkplane.operator
from sparkplane.operator.core.settings import (
    LIMIT_SETTINGS,
    Limits,
    OperatorSettings,
    ReconcileSettings,
    merge,
)
from sparkplane.settings import Settings

#: the defaults, whatever this process's environment says (OperatorSettings() reads it)
DEFAULTS = OperatorSettings(process=Settings.load({}))


def test_nothing_given_is_the_defaults() -> None:
    assert merge({}) == DEFAULTS
    assert merge({}, {}) == DEFAULTS


def test_the_pod_name_from_the_environment_is_the_identity() -> None:
    assert merge({}, {"POD_NAME": "sparkplane-operator-7d9f-abcde"}).identity == (
        "sparkplane-operator-7d9f-abcde"
    )
    assert merge({}, {"POD_NAME": ""}).identity == ""  # empty: the runner picks one
    assert merge({}, {"HOME": "/root"}) == DEFAULTS  # nothing else is read


def test_the_process_settings_come_from_the_same_environment() -> None:
    """Where deleted drivers' logs go (the chart sets ``SPARKPLANE_LOG_ARCHIVE=kube``)."""
    got = merge({}, {"SPARKPLANE_LOG_ARCHIVE": "kube", "POD_NAME": "op-0"})
    assert got.process == Settings.load({"SPARKPLANE_LOG_ARCHIVE": "kube"})
    assert (got.process.log_archive, got.identity) == ("kube", "op-0")


def test_flags_win_over_the_environment() -> None:
    assert merge({"identity": "given"}, {"POD_NAME": "pod"}).identity == "given"


def test_flat_flags_land_in_the_nested_settings() -> None:
    got = merge(
        {
            "workers": 3,
            "operator_name": "shard-a",
            "max_executors": 40,
            "min_schedule_seconds": 5,
            "namespaces": ("a", "b"),
        }
    )
    assert got.workers == 3 and got.namespaces == ("a", "b")
    assert got.reconcile == ReconcileSettings(
        operator_name="shard-a", limits=Limits(max_executors=40, min_schedule_seconds=5)
    )


def test_a_short_lease_is_renewed_in_time_unless_renew_is_given() -> None:
    assert merge({"lease_seconds": 4.0}).renew_seconds == 1.0
    assert merge({"lease_seconds": 60.0}).renew_seconds == OperatorSettings.renew_seconds
    assert merge({"lease_seconds": 4.0, "renew_seconds": 0.5}).renew_seconds == 0.5


def test_every_limit_has_its_flag_and_helm_value() -> None:
    assert set(LIMIT_SETTINGS) == set(vars(Limits()))
    for flag, value in LIMIT_SETTINGS.values():
        assert flag.startswith("--") and value.startswith("limits.")


def test_no_module_of_the_operator_reads_the_environment() -> None:
    root = Path(sparkplane.operator.__file__).parent
    readers = [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*.py"))
        if any(word in path.read_text() for word in ("os.environ", "getenv("))
    ]
    assert readers == []
