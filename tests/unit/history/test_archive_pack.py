"""The in-cluster archive's pure part: one app's files as one ConfigMap under the size limit."""

from __future__ import annotations

import base64
import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparkplane.history import pack
from sparkplane.history.archive import META, ArchiveMeta
from sparkplane.history.stores import FsStore

META_BYTES = ArchiveMeta(
    namespace="jobs",
    app="pi",
    driver_pod="pi-driver",
    archived_at=datetime(2026, 11, 23, 12, tzinfo=UTC).isoformat(),
    reason="released by the operator",
    retain_seconds=600,
    app_id="spark-1",
    pod_uid="uid-1",
).to_json()


def _noise(lines: int) -> bytes:
    """Incompressible log lines (random hex), so gzip cannot rescue the size."""
    rnd = os.urandom(lines * 40)
    return b"".join(
        b"line %06d %s\n" % (i, rnd[i * 40 : i * 40 + 40].hex().encode()) for i in range(lines)
    )


def test_small_app_round_trips_compressed_and_labelled() -> None:
    files = {
        "driver.log": b"Pi is roughly 3.14\n" * 1000,
        "executor-1.log": b"ok\n",
        META: META_BYTES,
    }
    cm = pack.configmap("jobs", "pi", files)
    assert cm["metadata"]["name"] == "sparkplane-logs-pi"
    assert cm["metadata"]["labels"][pack.LABEL] == "true"
    assert cm["metadata"]["annotations"][pack.APP_ANNOTATION] == "pi"
    assert cm["metadata"]["annotations"]["sparkplane.io/log-retention-seconds"] == "600"
    assert set(cm["binaryData"]) == {"driver.log.gz", "executor-1.log.gz"}
    assert len(base64.b64decode(cm["binaryData"]["driver.log.gz"])) < 200  # gzip did its job
    assert json.loads(cm["data"][META])["truncated"] is False
    assert pack.unpack(cm) == files
    assert pack.files_of(cm) == ["driver.log", "executor-1.log", META]


def test_over_the_budget_keeps_head_and_tail_and_marks_truncated() -> None:
    driver = _noise(40_000)  # ~3.5 MB raw, does not compress below the budget
    files = {"driver.log": driver, "executor-2.log": _noise(5_000), META: META_BYTES}
    cm = pack.configmap("jobs", "pi", files, budget=200_000)
    stored = sum(len(base64.b64decode(v)) for v in cm["binaryData"].values())
    assert stored <= 200_000
    assert len(json.dumps(cm)) < 1024 * 1024
    kept = pack.unpack(cm)
    text = kept["driver.log"].decode()
    assert text.startswith("line 000000 ") and text.rstrip().split("\n")[-1].startswith(
        "line 039999"
    )
    assert "lines dropped here" in text
    assert kept["executor-2.log"]  # the executor kept its share
    assert json.loads(cm["data"][META])["truncated"] is True


def test_shares_favour_the_driver_and_give_back_what_others_leave() -> None:
    assert pack.shares({"driver.log": 10, "executor-1.log": 10}, 100) == {
        "driver.log": 10,
        "executor-1.log": 10,
    }
    got = pack.shares({"driver.log": 1000, "executor-1.log": 10, "executor-2.log": 1000}, 400)
    assert got == {"executor-1.log": 10, "executor-2.log": 90, "driver.log": 300}
    assert sum(got.values()) <= 400
    assert pack.shares({"driver.log": 1000}, 400) == {"driver.log": 400}


def test_long_app_names_get_a_hashed_configmap_name() -> None:
    app = "a" * 250
    name = pack.configmap_name(app)
    assert len(name) <= 253 and name.startswith("sparkplane-logs-aaa")
    assert name != pack.configmap_name("a" * 249)


def test_inflate_refuses_a_bomb() -> None:
    bomb = gzip.compress(b"\0" * (2 * 1024 * 1024))
    assert pack.inflate(bomb, limit=4 * 1024 * 1024) == b"\0" * (2 * 1024 * 1024)
    with pytest.raises(ValueError, match="inflates beyond"):
        pack.inflate(bomb, limit=1024 * 1024)


def test_fs_store_replace_swaps_a_whole_app(tmp_path: Path) -> None:
    store = FsStore(tmp_path)
    store.put("jobs/pi/executor-7.log", b"old run")
    store.replace("jobs/pi/", {"driver.log": b"new", META: META_BYTES})
    assert store.keys("jobs/pi/") == ["jobs/pi/driver.log", "jobs/pi/meta.json"]
    assert store.get("jobs/pi/driver.log") == b"new"
