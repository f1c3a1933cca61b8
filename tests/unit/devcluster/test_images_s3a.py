"""The S3A connector's pinned jars (pure parts: no download)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkplane.errors import DevClusterError
from sparkplane_devcluster.images import s3a


@pytest.mark.parametrize(
    ("hadoop", "sdk"), [("3.4.1", "2.24.8"), ("3.4.2", "2.29.52"), ("3.5.0", "2.35.4")]
)
def test_each_lock_pins_hadoop_aws_of_its_version_and_one_sdk_version(hadoop: str, sdk: str):
    jars = s3a.parse_lock(s3a.lock_text(hadoop))
    by_name = {j.artifact: j for j in jars}
    assert by_name["hadoop-aws"].version == hadoop
    assert {"s3", "s3-transfer-manager", "sts", "apache-client"} <= set(by_name)
    assert {j.version for j in jars if j.group == "software.amazon.awssdk"} == {sdk}
    assert "bundle" not in by_name and not any(j.group == "io.netty" for j in jars)
    assert all(len(j.sha256) == 64 for j in jars)
    url = by_name["hadoop-aws"].url
    assert url.endswith(f"/org/apache/hadoop/hadoop-aws/{hadoop}/hadoop-aws-{hadoop}.jar")


def test_hadoop_version_comes_from_the_distributions_client_jar(tmp_path: Path):
    (tmp_path / "hadoop-client-api-3.4.1.jar").write_bytes(b"")
    (tmp_path / "hadoop-client-runtime-3.4.1.jar").write_bytes(b"")
    assert s3a.hadoop_version(tmp_path) == "3.4.1"
    with pytest.raises(DevClusterError, match="hadoop-client-api"):
        s3a.hadoop_version(tmp_path / "missing")
    with pytest.raises(DevClusterError, match=r"no S3A jars pinned for Hadoop 9\.9\.9"):
        s3a.lock_text("9.9.9")


def test_layer_puts_the_jars_in_spark_jars_owned_by_185(tmp_path: Path):
    jars = s3a.parse_lock(s3a.lock_text("3.4.1"))
    for jar in jars:
        (tmp_path / jar.file_name).write_bytes(b"x")
    entries = s3a.layer(tmp_path, "3.4.1", 185)
    files = [e for e in entries if e.kind == "file"]
    assert len(files) == len(jars)
    assert all(e.path.startswith("opt/spark/jars/") for e in files)
    assert all(e.uid == 185 for e in entries)
