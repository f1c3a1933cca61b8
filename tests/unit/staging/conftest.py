"""Shared helpers for the staging tests: settings in a temp dir and a real server on 127.0.0.1."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from ssl import SSLContext
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from sparkplane.staging.auth import UploadSecret
from sparkplane.staging.server import create_app, start
from sparkplane.staging.settings import StagingSettings

TOKEN = "unit-test-upload-secret-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRETS = (UploadSecret("tests", TOKEN),)


@pytest.fixture
def settings(tmp_path: Path) -> StagingSettings:
    return StagingSettings(
        host="127.0.0.1",
        port=0,
        storage_dir=tmp_path / "bundles",
        db_path=tmp_path / "meta.sqlite3",
        fsync=False,
        secret_hash_iterations=1000,
        cleanup_interval_seconds=3600,
        upload_secrets=SECRETS,
    )


def with_(settings: StagingSettings, **changes: Any) -> StagingSettings:
    return replace(settings, **changes)


@contextlib.asynccontextmanager
async def running(app: web.Application, ssl: SSLContext | None = None) -> AsyncIterator[str]:
    """Serve ``app`` on a real 127.0.0.1 port; yields the base URL."""
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=ssl)
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        await server.close()


@contextlib.asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[str]:
    """Serve a staging ``app`` as production does (``server.start``: its connection guard)."""
    runner, port = await start(app)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def serve_app(
    settings: StagingSettings, **kwargs: Any
) -> contextlib.AbstractAsyncContextManager[str]:
    return serving(create_app(settings, **kwargs))
