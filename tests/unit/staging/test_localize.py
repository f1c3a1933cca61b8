"""Localizing remote http(s) dependencies without a staging server (init-container path)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web

from sparkplane.staging.client import localize_uris_async
from sparkplane.staging.errors import StagingClientError, StagingError

from .conftest import running


def test_http_uris_are_downloaded_and_local_ones_kept(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "lib.jar").write_bytes(b"JAR" * 1000)
    (served / "data.zip").write_bytes(b"ZIP")
    app = web.Application()
    app.router.add_static("/files", served)
    dest = tmp_path / "dest"

    async def scenario() -> None:
        async with running(app) as url:
            result = await localize_uris_async(
                [f"{url}/files/lib.jar", f"{url}/files/data.zip#data", "local:///opt/spark/x.jar"],
                dest,
            )
            assert result == {
                f"{url}/files/lib.jar": dest / "lib.jar",
                f"{url}/files/data.zip#data": dest / "data",
                "local:///opt/spark/x.jar": Path("/opt/spark/x.jar"),
            }
            with pytest.raises(StagingClientError, match="404"):
                await localize_uris_async([f"{url}/files/missing.jar"], dest)

    asyncio.run(scenario())
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
        asyncio.run(localize_uris_async(uris, tmp_path))
