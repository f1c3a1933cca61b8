"""Uploads need an identity, fit the quotas and take a bounded number of slots.

A real server on 127.0.0.1 (``server.start``). Kubernetes identities are covered against the
real API server in tests/integration/test_staging_security.py; here the reviewer is a plain
function standing in for the cluster's answers (no Kubernetes client is involved).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from sparkplane.staging.auth import Review, UploadSecret, load_upload_secrets
from sparkplane.staging.errors import StagingError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.settings import StagingSettings

from .conftest import AUTH, TOKEN, serve_app, with_

RESOURCES = "/api/v0/resources"
JOBS = ResourceOwner("jobs", {"spark-app-selector": "spark-1"})
OTHER = ResourceOwner("other", {"spark-app-selector": "spark-2"})


async def post(
    url: str, data: bytes, owner: ResourceOwner, token: str | None
) -> tuple[int, dict[str, str]]:
    headers = owner.to_headers()
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as s,
        s.post(url + RESOURCES, data=data, headers=headers) as r,
    ):
        return r.status, await r.json()


def test_settings_default_to_loopback_and_no_anonymous_uploads() -> None:
    defaults = StagingSettings()
    assert defaults.host == "127.0.0.1"
    assert not defaults.allow_anonymous_uploads and defaults.upload_secrets == ()
    assert defaults.total_quota_bytes > 0 and defaults.namespace_quota_bytes > 0


def test_upload_needs_a_credential(settings: StagingSettings) -> None:
    async def scenario() -> None:
        async with serve_app(settings) as url:
            status, body = await post(url, b"data", JOBS, None)
            assert (status, body["error"]) == (401, "unauthorized")
            assert "upload secret" in body["message"]
            status, body = await post(url, b"data", JOBS, "a-guess-at-the-upload-secret")
            assert status == 401
            assert (await post(url, b"data", JOBS, TOKEN))[0] == 201

    asyncio.run(scenario())
    assert len(list(settings.storage_dir.glob("*.bundle"))) == 1


def test_server_without_any_credential_source_refuses_every_upload(
    settings: StagingSettings,
) -> None:
    async def scenario() -> None:
        async with serve_app(with_(settings, upload_secrets=())) as url:
            status, body = await post(url, b"data", JOBS, TOKEN)
            assert status == 401 and "accepts no uploads" in body["message"]

    asyncio.run(scenario())


def test_upload_secret_limited_to_namespaces(settings: StagingSettings) -> None:
    scoped = UploadSecret("team-a", "team-a-secret-0123456789", ("jobs",))

    async def scenario() -> None:
        async with serve_app(with_(settings, upload_secrets=(scoped,))) as url:
            assert (await post(url, b"x", JOBS, scoped.secret))[0] == 201
            status, body = await post(url, b"x", OTHER, scoped.secret)
            assert status == 403
            assert "'team-a'" in body["message"] and "'other'" in body["message"]

    asyncio.run(scenario())


def test_kubernetes_identities_are_reviewed(settings: StagingSettings) -> None:
    """The reviewer's verdicts become 201 / 401 / 403 / 503 with messages naming the cause;
    a confirmed identity is cached (one review per token and namespace)."""
    calls: list[tuple[str, str]] = []

    def reviewer(token: str, namespace: str) -> Review:
        calls.append((token, namespace))
        if token == "broken":
            raise ConnectionError("API server unreachable")
        if token != "alice-token":
            return Review(False, reason="invalid bearer token")
        return Review(True, "alice", allowed=namespace == "jobs", reason="no RBAC rule")

    async def scenario() -> None:
        async with serve_app(settings, token_reviewer=reviewer) as url:
            assert (await post(url, b"x", JOBS, "alice-token"))[0] == 201
            assert (await post(url, b"x", JOBS, "alice-token"))[0] == 201
            status, body = await post(url, b"x", OTHER, "alice-token")
            assert status == 403
            assert "alice may not create pods in namespace 'other'" in body["message"]
            status, body = await post(url, b"x", JOBS, "mallory-token")
            assert status == 401 and "invalid bearer token" in body["message"]
            status, body = await post(url, b"x", JOBS, "broken")
            assert (status, body["error"]) == (503, "auth_unavailable")
            assert (await post(url, b"x", JOBS, TOKEN))[0] == 201  # secrets still work

    asyncio.run(scenario())
    assert calls.count(("alice-token", "jobs")) == 1


def test_failed_upload_attempts_are_braked_per_client_and_namespace(
    settings: StagingSettings,
) -> None:
    settings = with_(settings, max_failed_attempts=3)

    async def scenario() -> None:
        async with serve_app(settings) as url:
            for _ in range(3):
                assert (await post(url, b"x", JOBS, "wrong-secret-guess"))[0] == 401
            status, body = await post(url, b"x", JOBS, "another-guess")
            assert status == 429 and "namespace 'jobs'" in body["message"]
            # a neighbour behind the same address (NAT) with a valid secret is not locked out,
            assert (await post(url, b"x", JOBS, TOKEN))[0] == 201
            # nor are attempts on another namespace, nor requests without credentials
            assert (await post(url, b"x", OTHER, "wrong-secret-guess"))[0] == 401
            assert (await post(url, b"x", JOBS, None))[0] == 401

    asyncio.run(scenario())


def test_quotas_refuse_with_507_naming_the_quota(settings: StagingSettings) -> None:
    settings = with_(settings, namespace_quota_bytes=1000, total_quota_bytes=1500)

    async def scenario() -> None:
        async with serve_app(settings) as url:
            assert (await post(url, b"a" * 800, JOBS, TOKEN))[0] == 201
            status, body = await post(url, b"b" * 300, JOBS, TOKEN)
            assert (status, body["error"]) == (507, "namespace_quota_exceeded")
            assert "namespace 'jobs' holds 800 of 1000 bytes" in body["message"]
            assert (await post(url, b"c" * 600, OTHER, TOKEN))[0] == 201
            status, body = await post(url, b"d" * 200, OTHER, TOKEN)
            assert (status, body["error"]) == (507, "total_quota_exceeded")
            assert "1400 of 1500 bytes" in body["message"]
            # refused bundles took nothing: the namespace quota still counts 800 bytes
            assert (await post(url, b"f" * 100, JOBS, TOKEN))[0] == 201

    asyncio.run(scenario())


def test_upload_slots_per_client(settings: StagingSettings) -> None:
    """A client holding its slots with stalled bodies gets 429 for one more; another client
    (another upload secret) still uploads."""
    other = UploadSecret("other-team", "other-team-secret-0123456789")
    settings = with_(
        settings,
        upload_secrets=(*settings.upload_secrets, other),
        max_uploads_per_client=2,
        body_timeout_seconds=30,
    )

    async def scenario() -> None:
        async with serve_app(settings) as url:
            host, port = url.removeprefix("http://").split(":")
            stalled = []
            head = {**JOBS.to_headers(), **AUTH, "Content-Length": "1000000"}
            for _ in range(2):
                _, writer = await asyncio.open_connection(host, int(port))
                lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
                writer.write(f"POST {RESOURCES} HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode())
                writer.write(b"z" * 1000)
                await writer.drain()
                stalled.append(writer)
            await asyncio.sleep(0.3)
            status, body = await post(url, b"x", JOBS, TOKEN)
            assert (status, body["error"]) == (429, "too_many_uploads")
            assert (await post(url, b"x", JOBS, other.secret))[0] == 201
            for writer in stalled:
                writer.transport.abort()

    asyncio.run(scenario())


def test_upload_secret_file_format(tmp_path: Path) -> None:
    good = tmp_path / "secrets"
    good.write_text("# teams\nteam-a:aaaaaaaaaaaaaaaaaaaa:jobs,etl\n\nci:cccccccccccccccccccc\n")
    assert load_upload_secrets(good) == (
        UploadSecret("team-a", "a" * 20, ("jobs", "etl")),
        UploadSecret("ci", "c" * 20),
    )
    short = tmp_path / "short"
    short.write_text("team:tooshort\n")
    with pytest.raises(StagingError, match=r"line 1.*at least 16 characters"):
        load_upload_secrets(short)
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    with pytest.raises(StagingError, match="holds no secret"):
        load_upload_secrets(empty)
    with pytest.raises(StagingError, match="cannot read"):
        load_upload_secrets(tmp_path / "missing")


def test_secret_brute_force_on_one_bundle_leaves_the_others_alone(
    settings: StagingSettings,
) -> None:
    """Failures are counted per (address, bundle): clients behind one NAT fetching other
    bundles are not locked out by a neighbour guessing one bundle's secret."""
    settings = with_(settings, max_failed_attempts=3)

    async def get(url: str, rid: str, secret: str) -> int:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            aiohttp.ClientSession() as s,
            s.get(f"{url}{RESOURCES}/{rid}", headers=headers) as r,
        ):
            return r.status

    async def upload(url: str) -> tuple[str, str]:
        headers = {**JOBS.to_headers(), **AUTH}
        async with (
            aiohttp.ClientSession() as s,
            s.post(url + RESOURCES, data=b"d", headers=headers) as r,
        ):
            body = await r.json()
        return body["resourceId"], body["resourceSecret"]

    async def scenario() -> None:
        async with serve_app(settings) as url:
            (attacked, right), (other, other_secret) = await upload(url), await upload(url)
            assert [await get(url, attacked, "guess") for _ in range(4)] == [403, 403, 403, 429]
            assert await get(url, attacked, right) == 429  # locked even with the right secret
            assert await get(url, other, other_secret) == 200

    asyncio.run(scenario())


def test_serve_reports_a_bad_upload_secret_file_without_a_traceback(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sparkplane.cli.staging import app

    bad = tmp_path / "secrets"
    bad.write_text("team:short\n")
    args = ["serve", "--port", "0", "--storage-dir", str(tmp_path / "b")]
    args += ["--db-path", str(tmp_path / "m.sqlite3"), "--upload-secret-file", str(bad)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 10
    assert "line 1: expected 'name:secret[:namespaces]'" in result.output
    assert "Traceback" not in result.output


def test_unknown_tokens_sprayed_over_namespaces_hit_the_address_backstop(
    settings: StagingSettings,
) -> None:
    """Changing the namespace does not buy unlimited guesses (each one a TokenReview): one
    address gets 10x the per-namespace limit over all namespaces; valid secrets still pass."""
    settings = with_(settings, max_failed_attempts=2)
    reviews: list[str] = []

    def reviewer(token: str, namespace: str) -> Review:
        reviews.append(namespace)
        return Review(False, reason="invalid bearer token")

    async def scenario() -> None:
        async with serve_app(settings, token_reviewer=reviewer) as url:
            statuses = []
            for n in range(30):
                owner = ResourceOwner(f"ns-{n}", {"app": "x"})
                statuses.append((await post(url, b"x", owner, "sprayed-token"))[0])
            assert statuses[:20] == [401] * 20 and statuses[20:] == [429] * 10
            assert (await post(url, b"x", JOBS, TOKEN))[0] == 201

    asyncio.run(scenario())
    assert len(reviews) == 20
