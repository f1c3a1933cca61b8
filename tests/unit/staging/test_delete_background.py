"""DELETE of a bundle (the submitter's rollback), the in-process server, the owner selector."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkplane.staging.bundle import pack_bundle
from sparkplane.staging.client import delete_bundle, fetch, upload_bundle
from sparkplane.staging.errors import StagingClientError
from sparkplane.staging.kube_owner import label_selector
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.settings import StagingSettings
from tests.staging_server import serve_in_background

from .conftest import TOKEN

OWNER = ResourceOwner("spark-jobs", {"spark-app-selector": "spark-1"})


def test_delete_needs_the_secret_and_removes_bytes_and_row(
    settings: StagingSettings, tmp_path: Path
) -> None:
    (tmp_path / "a.jar").write_bytes(os.urandom(10_000))
    bundle = tmp_path / "b.tar.gz"
    pack_bundle({"a.jar": tmp_path / "a.jar"}, bundle)
    with serve_in_background(settings) as url:
        assert url.startswith("http://127.0.0.1:")
        res = upload_bundle(url, bundle, OWNER, token=TOKEN)
        with pytest.raises(StagingClientError) as wrong:
            delete_bundle(url, res.resource_id, "not-the-secret")
        assert wrong.value.status == 403
        assert fetch(url, res.resource_id, res.secret, tmp_path / "x") == ["a.jar"]
        delete_bundle(url, res.resource_id, res.secret)
        assert list(settings.storage_dir.rglob(f"*{res.resource_id}*")) == []
        with pytest.raises(StagingClientError) as gone:
            delete_bundle(url, res.resource_id, res.secret)
        assert gone.value.status == 404
    # the server is stopped: nothing listens any more
    with pytest.raises(StagingClientError):
        upload_bundle(url, bundle, OWNER, token=TOKEN)


def test_owner_labels_become_a_sorted_selector() -> None:
    assert label_selector({"b": "2", "a": "1"}) == "a=1,b=2"
    assert label_selector({"spark-app-selector": "spark-x"}) == "spark-app-selector=spark-x"
