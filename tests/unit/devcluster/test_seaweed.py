"""The dev cluster's SeaweedFS: its command line and S3 identities (pure parts).

That the identities really confine a tenant to its prefix is tested against the running
server in tests/integration/test_log_archive_s3.py."""

from __future__ import annotations

import json
from pathlib import Path

from sparkplane_devcluster import seaweed
from sparkplane_devcluster.components import Ports


def test_loopback_ports_from_the_base_and_nothing_phoning_home(tmp_path: Path) -> None:
    argv = seaweed.argv(Path("/bin/weed"), tmp_path, Ports(20000).seaweedfs)
    assert argv[:2] == ["/bin/weed", "server"]
    assert "-ip.bind=127.0.0.1" in argv and "-master.telemetry=false" in argv
    ports = {a.split("=")[1] for a in argv if ".port" in a and a.split("=")[1] != "0"}
    assert ports == {str(p) for p in range(20007, 20015)}
    assert "-s3.port=20013" in argv and "-s3.port.iceberg=0" in argv


def test_keys_are_made_once_per_state_dir_and_tenants_are_scoped(tmp_path: Path) -> None:
    root, first = seaweed.prepare(tmp_path, "http://127.0.0.1:1", None)
    _, again = seaweed.prepare(tmp_path, "http://127.0.0.1:1", "http://10.217.3.1:1")
    assert first.admin == again.admin and first.tenants == again.tenants
    assert again.pod_endpoint == "http://10.217.3.1:1"
    assert (root / "s3.json").stat().st_mode & 0o777 == 0o600
    config = json.loads((root / "identities.json").read_text())
    by_name = {i["name"]: i for i in config["identities"]}
    assert "Admin" in by_name["sparkplane-admin"]["actions"]
    actions = by_name["tenant-spark-jobs"]["actions"]
    assert actions and all(a.endswith(":sparkplane/logs/spark-jobs/*") for a in actions)
    assert again.env("spark-jobs")["AWS_ACCESS_KEY_ID"] == first.tenants["spark-jobs"].access_key
