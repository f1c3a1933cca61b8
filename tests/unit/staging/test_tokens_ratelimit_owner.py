"""Secrets hashing, the failure limiter and owner validation (pure modules)."""

from __future__ import annotations

import pytest

from sparkplane.errors import ValidationError
from sparkplane.staging import tokens
from sparkplane.staging.owner import (
    LABELS_HEADER,
    NAMESPACE_HEADER,
    OwnerType,
    ResourceOwner,
    owner_from_headers,
)
from sparkplane.staging.ratelimit import FailureLimiter


def test_secret_hash_verifies_only_the_right_secret() -> None:
    secret = tokens.new_secret()
    stored = tokens.hash_secret(secret, iterations=1000)
    assert secret not in stored
    assert tokens.verify_secret(secret, stored)
    assert not tokens.verify_secret(secret + "x", stored)
    assert not tokens.verify_secret("", stored)


def test_same_secret_hashes_differently_thanks_to_salt() -> None:
    assert tokens.hash_secret("s", iterations=10) != tokens.hash_secret("s", iterations=10)


@pytest.mark.parametrize("stored", ["", "garbage", "md5$1$00$00", "pbkdf2_sha256$x$00$00"])
def test_malformed_hash_never_verifies(stored: str) -> None:
    assert not tokens.verify_secret("s", stored)


def test_resource_ids_are_unique_and_recognisable() -> None:
    ids = {tokens.new_resource_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(tokens.is_resource_id(i) for i in ids)
    assert not tokens.is_resource_id("../etc/passwd")


def test_limiter_blocks_after_max_failures_until_window_passes() -> None:
    limiter = FailureLimiter(max_failures=3, window=10.0)
    for t in (0.0, 1.0, 2.0):
        assert limiter.retry_after("a", t) == 0
        limiter.record_failure("a", t)
    assert limiter.retry_after("a", 3.0) == pytest.approx(7.0)
    assert limiter.retry_after("b", 3.0) == 0  # per client
    assert limiter.retry_after("a", 10.5) == 0  # oldest failure aged out


def test_limiter_memory_is_bounded() -> None:
    limiter = FailureLimiter(max_failures=1, window=100.0, max_clients=5)
    for i in range(50):
        limiter.record_failure(f"c{i}", float(i))
    assert len(limiter._failures) <= 5
    assert limiter.retry_after("c49", 49.0) > 0


def test_owner_headers_round_trip() -> None:
    owner = ResourceOwner("spark-jobs", {"spark-app-selector": "spark-123", "a.b/c": "d"})
    assert owner_from_headers(owner.to_headers()) == owner
    assert owner_from_headers(owner.to_headers()).owner_type is OwnerType.POD


def test_owner_validation_reports_every_problem() -> None:
    headers = {NAMESPACE_HEADER: "Bad_NS", LABELS_HEADER: '{"ok": "v", "bad key!": "x"}'}
    headers["X-Sparkplane-Owner-Type"] = "Deployment"
    with pytest.raises(ValidationError) as info:
        owner_from_headers(headers)
    paths = [p.path for p in info.value.problems]
    assert paths == ["owner.namespace", "owner.labels.bad key!", "owner.type"]


@pytest.mark.parametrize("labels", ["", "{}", "[]", "not json"])
def test_owner_needs_a_non_empty_label_object(labels: str) -> None:
    with pytest.raises(ValidationError) as info:
        owner_from_headers({NAMESPACE_HEADER: "ns", LABELS_HEADER: labels})
    assert info.value.problems[0].path == "owner.labels"
