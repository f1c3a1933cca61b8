"""Optional TLS (self-signed certificate trusted through --ca-file) and the fetch command."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from typer.testing import CliRunner

from sparkplane.cli.staging import fetch_app
from sparkplane.staging.bundle import pack_bundle
from sparkplane.staging.client import upload_bundle
from sparkplane.staging.errors import StagingClientError, StagingError
from sparkplane.staging.owner import ResourceOwner
from sparkplane.staging.server import create_app
from sparkplane.staging.settings import StagingSettings
from tests.staging_server import served, serving_app

from .conftest import TOKEN, with_

OWNER = ResourceOwner("ns", {"app": "a"})


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls_round_trip_and_untrusted_certificate(
    settings: StagingSettings, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    settings = with_(settings, tls_cert=cert, tls_key=key)
    (tmp_path / "f.txt").write_text("secure")
    bundle = tmp_path / "b.tgz"
    pack_bundle({"f.txt": tmp_path / "f.txt"}, bundle)

    with serving_app(create_app(settings), ssl=settings.ssl_context()) as url:
        assert url.startswith("https://")
        with pytest.raises(StagingClientError):
            upload_bundle(url, bundle, OWNER, token=TOKEN)  # self-signed, not trusted
        staged = upload_bundle(url, bundle, OWNER, ca_file=cert, token=TOKEN)
        result = CliRunner().invoke(
            fetch_app,
            [
                "--server",
                url,
                "--resource-id",
                staged.resource_id,
                "--ca-file",
                str(cert),
                "--dest",
                str(tmp_path / "out"),
            ],
            env={"SPARKPLANE_STAGING_SECRET": staged.secret},
        )
        assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "f.txt").read_text() == "secure"


def test_tls_needs_cert_and_key(settings: StagingSettings, tmp_path: Path) -> None:
    with pytest.raises(StagingError, match="both"):
        with_(settings, tls_cert=tmp_path / "c").ssl_context()
    with pytest.raises(StagingError, match="cannot load"):
        with_(settings, tls_cert=tmp_path / "c", tls_key=tmp_path / "k").ssl_context()


def test_fetch_command_wrong_secret_fails_with_message(
    settings: StagingSettings, tmp_path: Path
) -> None:
    (tmp_path / "f").write_text("x")
    bundle = tmp_path / "b.tgz"
    pack_bundle({"f": tmp_path / "f"}, bundle)
    secret_file = tmp_path / "secret"
    secret_file.write_text("wrong\n")

    with served(create_app(settings)) as url:
        staged = upload_bundle(url, bundle, OWNER, token=TOKEN)
        result = CliRunner().invoke(
            fetch_app,
            [
                "--server",
                url,
                "--resource-id",
                staged.resource_id,
                "--secret-file",
                str(secret_file),
                "--dest",
                str(tmp_path / "out"),
            ],
        )
        assert result.exit_code != 0
        assert "403" in result.output
        assert "wrong secret" in result.output
    assert not (tmp_path / "out" / "f").exists()
