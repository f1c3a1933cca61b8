"""Localizing remote http(s) dependencies without a staging server (init-container path)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web

from sparkplane.staging.client import localize_uris
from sparkplane.staging.errors import StagingClientError, StagingError
from tests.staging_server import serving_app


def test_http_uris_are_downloaded_and_local_ones_kept(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "lib.jar").write_bytes(b"JAR" * 1000)
    (served / "data.zip").write_bytes(b"ZIP")
    app = web.Application()
    app.router.add_static("/files", served)
    dest = tmp_path / "dest"

    with serving_app(app) as url:
        result = localize_uris(
            [f"{url}/files/lib.jar", f"{url}/files/data.zip#data", "local:///opt/spark/x.jar"],
            dest,
        )
        assert result == {
            f"{url}/files/lib.jar": dest / "lib.jar",
            f"{url}/files/data.zip#data": dest / "data",
            "local:///opt/spark/x.jar": Path("/opt/spark/x.jar"),
        }
        with pytest.raises(StagingClientError, match="404"):
            localize_uris([f"{url}/files/missing.jar"], dest)
    assert (dest / "lib.jar").read_bytes() == b"JAR" * 1000
    assert (dest / "data").read_bytes() == b"ZIP"
    assert sorted(p.name for p in dest.iterdir()) == ["data", "lib.jar"]  # no .part left


@pytest.mark.parametrize(
    ("uris", "match"),
    [
        (["hdfs://nn/x.jar"], "cannot localize"),
        (["file:///home/me/x.jar"], "staging server"),
        (["http://a/x.jar", "http://b/x.jar"], "both be saved"),
        (["http://a/"], "file name"),
    ],
)
def test_unsupported_or_ambiguous_uris(tmp_path: Path, uris: list[str], match: str) -> None:
    with pytest.raises(StagingError, match=match):
        localize_uris(uris, tmp_path)
