"""The dynamic configuration laid over the started settings (issue 27): all of it or none."""

from __future__ import annotations

from sparkplane.operator.core.settings import OperatorSettings, apply_dynamic

NS = "spark.kubernetes.operator.watchedNamespaces"
INTERVAL = "spark.kubernetes.operator.reconciler.intervalSeconds"
BASE = OperatorSettings(namespaces=("a",), resync_seconds=300.0)


def test_good_values_apply_and_a_missing_key_falls_back() -> None:
    got = apply_dynamic(BASE, {NS: " a, b ,a", INTERVAL: "30"})
    assert got.problems == () and got.settings.namespaces == ("a", "b")
    assert got.settings.resync_seconds == 30.0
    assert apply_dynamic(BASE, {}).settings == BASE


def test_a_bad_value_keeps_everything_and_names_its_key() -> None:
    got = apply_dynamic(BASE, {NS: "a,Bad_Name", INTERVAL: "30"})
    assert got.settings is BASE
    assert len(got.problems) == 1 and got.problems[0].startswith(NS)
    assert "Bad_Name" in got.problems[0]
    bad = apply_dynamic(BASE, {INTERVAL: "soon"}).problems
    assert bad and bad[0].startswith(INTERVAL)


def test_unknown_keys_are_ignored_and_listed() -> None:
    got = apply_dynamic(BASE, {"spark.kubernetes.operator.events.minIntervalSeconds": "1"})
    assert got.settings == BASE and got.problems == ()
    assert got.ignored == ("spark.kubernetes.operator.events.minIntervalSeconds",)


def test_an_operator_of_every_namespace_keeps_them_all() -> None:
    everywhere = OperatorSettings()
    got = apply_dynamic(everywhere, {NS: "a"})
    assert got.settings is everywhere and got.problems[0].startswith(NS)


def test_a_label_selector_is_checked() -> None:
    key = "spark.kubernetes.operator.reconciler.labelSelector"
    assert apply_dynamic(BASE, {key: "team=a, tier!=b"}).settings.label_selector == "team=a,tier!=b"
    assert apply_dynamic(BASE, {key: ""}).settings.label_selector == ""
    bad = apply_dynamic(BASE, {key: "team=a,=b"}).problems
    assert bad and bad[0].startswith(key)
