"""A throw-away certificate authority and one server certificate it signs (PEM), for a
session's Ingress TLS when no Secret is given (:mod:`sparkplane.usecases.exposure`).

The CA's private key is never written anywhere: it signs the server certificate and is
dropped, so nothing else can ever be signed by it. The client trusts the CA certificate alone
(``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH``, or any TLS client's root file).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = timedelta(days=30)  # longer than any session's maximum lifetime


@dataclass(frozen=True)
class ServerCert:
    """PEM texts: the CA's certificate, the server's certificate and its private key."""

    ca: str
    cert: str
    key: str


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def server_cert(host: str, *, now: datetime | None = None) -> ServerCert:
    """A new CA (named after ``host``) and a server certificate for ``host`` signed by it."""
    start = (now or datetime.now(UTC)) - timedelta(minutes=5)  # clocks differ a little
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"sparkplane session CA for {host}"))
        .issuer_name(_name(f"sparkplane session CA for {host}"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(host))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ServerCert(
        ca=ca.public_bytes(pem).decode(),
        cert=cert.public_bytes(pem).decode(),
        key=key_pem.decode(),
    )
