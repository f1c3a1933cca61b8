"""Spark memory/CPU parsing and Kubernetes naming rules (reference §3.1)."""

from __future__ import annotations

import pytest

from sparkplane.spec import AppIds, app_name_label, memory_mib, resource_name_prefix
from sparkplane.spec.naming import conf_map_name, label_key_problem, label_value_problem
from sparkplane.spec.quantities import QuantityError, check_cpu, positive_int
from sparkplane.vocab import is_dns1035_label, is_dns1123_label, is_dns1123_subdomain


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        ("2g", 2048),
        ("512m", 512),
        ("1024", 1024),
        ("1G", 1024),
        ("2gb", 2048),
        ("1t", 1048576),
        ("1536k", 1),
        ("3MB", 3),
    ],
)
def test_memory_mib_follows_spark(text: str, mib: int) -> None:
    assert memory_mib(text) == mib


@pytest.mark.parametrize(
    ("text", "hint"),
    [("1Gi", "write 1g"), ("1.5g", "1536m"), ("lots", "whole number"), ("2x", "Spark units")],
)
def test_memory_mib_rejects_with_hint(text: str, hint: str) -> None:
    with pytest.raises(QuantityError) as err:
        memory_mib(text)
    assert hint in err.value.hint


@pytest.mark.parametrize("ok", ["1", "0.5", "500m", ".5", "2.0"])
def test_cpu_ok(ok: str) -> None:
    check_cpu(ok)


@pytest.mark.parametrize("bad", ["1 core", "-1", "0", "1Gi", "m", "0m"])
def test_cpu_bad(bad: str) -> None:
    with pytest.raises(QuantityError):
        check_cpu(bad)


def test_positive_int() -> None:
    assert positive_int("4") == 4
    for bad in ("0", "1.5", "x"):
        with pytest.raises(QuantityError):
            positive_int(bad)


def test_resource_prefix_sanitises_like_spark() -> None:
    assert resource_name_prefix("My App_1", "b509f3a1fe208079") == "my-app-1-b509f3a1fe208079"
    assert resource_name_prefix("--x", "ab") == "x-ab"
    assert resource_name_prefix("9lives", "ab") == "xlives-ab"
    assert resource_name_prefix("a..b", "ab") == "a-b-ab"


def test_app_name_label_is_cut_to_63_without_edge_dashes() -> None:
    long = "this-is-a-very-long-application-name-that-goes-past-the-limit-of-63"
    assert app_name_label(long) == "this-is-a-very-long-application-name-that-goes-past-the-limit-o"
    assert app_name_label("My App_1") == "my-app-1"
    assert app_name_label("x" * 62 + "-y") == "x" * 62
    assert len(app_name_label("a" * 100)) == 63


def test_dns_rules() -> None:
    assert is_dns1123_label("a-b1") and not is_dns1123_label("A") and not is_dns1123_label("a" * 64)
    assert is_dns1035_label("svc") and not is_dns1035_label("1svc")
    assert is_dns1123_subdomain("a.b-c") and not is_dns1123_subdomain("a_b")
    assert conf_map_name("x" * 300).endswith("-conf-map")
    assert len(conf_map_name("x" * 300)) == 253


def test_label_rules() -> None:
    assert label_key_problem("example.com/team") == ""
    assert "prefix" in label_key_problem("Bad_Prefix/x")
    assert "63" in label_key_problem("a" * 64)
    assert label_value_problem("") == ""
    assert "63" in label_value_problem("v" * 64)
    assert label_value_problem("-x") != ""


def test_app_ids_new_are_spark_shaped_and_unique() -> None:
    ids = AppIds.new("spark-pi", now_ms=0x18C3F2E5D1)
    assert ids.app_id.startswith("spark-") and len(ids.app_id) == 38
    assert ids.unique_id.endswith("18c3f2e5d1") and len(ids.unique_id) == 16
    assert ids.default_driver_pod_name == f"spark-pi-{ids.unique_id}-driver"
    assert ids.driver_service_name == f"spark-pi-{ids.unique_id}-driver-svc"
    assert ids.conf_map_name == f"spark-drv-{ids.unique_id}-conf-map"
    many = {AppIds.new("a", now_ms=1).unique_id for _ in range(300)}
    assert len(many) > 290


def test_app_ids_for_submission_are_deterministic() -> None:
    first = AppIds.for_submission("order-42", "spark-pi")
    assert first == AppIds.for_submission("order-42", "spark-pi")
    assert first.app_id != AppIds.for_submission("order-43", "spark-pi").app_id
    assert first.submission_id == "order-42"
    with pytest.raises(ValueError, match="empty"):
        AppIds.for_submission(" ", "x")


def test_service_name_falls_back_when_too_long() -> None:
    ids = AppIds.for_submission("s", "n" * 60)
    assert ids.driver_service_name == f"spark-{ids.unique_id}-driver-svc"
    assert len(ids.driver_service_name) <= 63
    assert ids.default_driver_pod_name.startswith("n" * 60)
