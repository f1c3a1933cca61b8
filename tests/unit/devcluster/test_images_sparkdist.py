"""The pinned pyspark distributions of the Spark versions besides the venv's (no install)."""

from __future__ import annotations

import re

import pytest

from sparkplane.errors import DevClusterError
from sparkplane.version import SPARK_VERSION, SPARK_VERSIONS
from sparkplane_devcluster.images import sparkdist


@pytest.mark.parametrize("version", [v for v in SPARK_VERSIONS if v != SPARK_VERSION])
def test_each_extra_version_has_a_hash_pinned_lock_of_its_pyspark(version: str) -> None:
    lines = [ln.split("#", 1)[0].strip() for ln in sparkdist.lock_text(version).splitlines()]
    text = " ".join(ln.rstrip("\\").strip() for ln in lines if ln)
    assert re.fullmatch(rf"pyspark=={re.escape(version)} --hash=sha256:[0-9a-f]{{64}}", text), text


def test_a_version_without_a_lock_is_refused_naming_the_file() -> None:
    with pytest.raises(DevClusterError, match=r"locks/pyspark-3\.5\.1\.lock"):
        sparkdist.lock_text("3.5.1")
