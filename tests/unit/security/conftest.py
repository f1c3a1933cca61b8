"""Throw-away PKI for configuration tests: a CA and a client certificate, as PEM bytes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca: bytes
    cert: bytes
    key: bytes


def _cert(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer_key: ec.EllipticCurvePrivateKey,
    issuer: str,
    ca: bool,
) -> bytes:
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(issuer_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


@pytest.fixture(scope="session")
def pki() -> Pki:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    user_key = ec.generate_private_key(ec.SECP256R1())
    return Pki(
        ca=_cert("test-ca", ca_key, ca_key, "test-ca", True),
        cert=_cert("tester", user_key, ca_key, "test-ca", False),
        key=user_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
