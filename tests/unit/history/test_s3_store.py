"""The S3 store's pure parts: the location, key layout, and which store the setting picks.

Its requests are tested against a real S3 server (SeaweedFS on the dev cluster) in
tests/integration/test_log_archive_s3.py."""

from __future__ import annotations

import pytest

from sparkplane.errors import ConfigError
from sparkplane.history.s3_store import S3Location, S3Store, is_s3, parse_location
from sparkplane.history.stores import FsStore, open_store, reading_stores
from sparkplane.settings import Settings


def test_locations() -> None:
    assert parse_location("s3://spark-logs") == S3Location("spark-logs", "")
    assert parse_location("s3://spark-logs/") == S3Location("spark-logs", "")
    assert parse_location("S3://spark-logs/a//b/") == S3Location("spark-logs", "a/b/")
    assert parse_location("s3://spark-logs/a/b").uri == "s3://spark-logs/a/b/"
    assert is_s3("s3://x") and not is_s3("/var/s3") and not is_s3("kube")


@pytest.mark.parametrize(
    "bad", ["s3://", "s3://A_B", "s3://ab", "s3://x..y/p", "s3://bucket/../up", "s3:/bucket"]
)
def test_bad_locations_name_the_setting_and_the_fix(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"SPARKPLANE_LOG_ARCHIVE=.*s3://BUCKET/PREFIX") as exc:
        parse_location(bad)
    assert exc.value.exit_code == 3


def test_keys_live_under_the_prefix_and_refuse_path_tricks() -> None:
    store = S3Store(S3Location("b", "logs/"), client=object())
    assert store._key("ns/app/driver.log") == "logs/ns/app/driver.log"
    assert store._key("ns/app/") == "logs/ns/app/"
    for bad in ("", "/", "ns/../x", "ns//x", "./x"):
        with pytest.raises(ValueError, match="bad archive key"):
            store._key(bad)


def test_the_setting_picks_the_s3_store() -> None:
    settings = Settings(log_archive="s3://spark-logs/sp")
    store = open_store(settings, namespaces=["a", "b"])
    assert isinstance(store, S3Store) and store.namespaces == ("a", "b")
    assert store.location == S3Location("spark-logs", "sp/")
    found = reading_stores(settings, None, "jobs")
    assert len(found) == 1 and isinstance(found[0], S3Store) and found[0].namespaces == ("jobs",)
    assert not any(isinstance(s, FsStore) for s in found)  # no local directory beside it
    with pytest.raises(ConfigError):
        open_store(Settings(log_archive="s3://Bad_Bucket"))
