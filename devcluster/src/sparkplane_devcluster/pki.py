"""Certificates and keys of the dev cluster, made with ``cryptography``.

A self-signed CA signs the API server's serving certificate (SANs for loopback and the in-cluster
names), an admin client certificate in ``system:masters``, the API server's client certificate
for kubelets (logs, exec, port-forward) and KWOK's serving certificate (so the API server verifies
every kubelet it talks to); an RSA key pair signs service-account tokens. :func:`ensure_node_certs`
adds the real node's: the kubelet's client (``system:node:<name>`` in ``system:nodes``) and
serving certificates, kube-proxy's (``system:kube-proxy``) and CoreDNS's client certificates.
Go's verifier wants SANs, a positive serial, and keyCertSign on the CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_IP = "10.96.0.1"  # first address of --service-cluster-ip-range
API_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class Pki:
    """Paths of every file the components and kubeconfigs need."""

    root: Path

    def file(self, name: str) -> Path:
        """``file("ca.crt")`` -> the path of that file."""
        return self.root / name

    @property
    def complete(self) -> bool:
        stems = ("ca", "apiserver", "admin", "apiserver-kubelet-client", "kwok-serving")
        names = [f"{s}.{ext}" for s in stems for ext in ("crt", "key")]
        return all((self.root / n).exists() for n in (*names, "sa.key", "sa.pub"))


def ensure_pki(root: Path) -> Pki:
    """Create the CA, serving and client certificates and the SA key pair (once)."""
    pki = Pki(root)
    if pki.complete:
        return pki
    root.mkdir(parents=True, exist_ok=True)
    ca_key = _new_key()
    ca_name = _name("sparkplane-dev-ca")
    ca = _sign(ca_key, ca_name, ca_key, ca_name, is_ca=True)
    _write(root, "ca", ca, ca_key)

    api_key = _new_key()
    api = _sign(
        api_key,
        _name("kube-apiserver"),
        ca_key,
        ca_name,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        dns=API_DNS_NAMES,
        ips=("127.0.0.1", SERVICE_IP),
    )
    _write(root, "apiserver", api, api_key)

    admin_key = _new_key()
    admin = _sign(
        admin_key,
        _name("sparkplane-admin", org="system:masters"),
        ca_key,
        ca_name,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    _write(root, "admin", admin, admin_key)

    for stem, subject, usage, ips in (
        (
            "apiserver-kubelet-client",
            _name("kube-apiserver-kubelet-client", org="system:masters"),
            ExtendedKeyUsageOID.CLIENT_AUTH,
            (),
        ),
        ("kwok-serving", _name("kwok"), ExtendedKeyUsageOID.SERVER_AUTH, ("127.0.0.1",)),
    ):
        key = _new_key()
        cert = _sign(key, subject, ca_key, ca_name, usage=usage, dns=("localhost",), ips=ips)
        _write(root, stem, cert, key)

    sa_key = _new_key()
    (root / "sa.key").write_bytes(_key_pem(sa_key))
    (root / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    for path in root.iterdir():
        if path.suffix == ".key":
            path.chmod(0o600)
    return pki


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common_name: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org)] if org else []
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _sign(
    key: rsa.RSAPrivateKey,
    subject: x509.Name,
    ca_key: rsa.RSAPrivateKey,
    issuer: x509.Name,
    *,
    is_ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=not is_ca,
                key_cert_sign=is_ca,
                crl_sign=is_ca,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if dns or ips:
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _write(root: Path, stem: str, cert: x509.Certificate, key: rsa.RSAPrivateKey) -> None:
    (root / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (root / f"{stem}.key").write_bytes(_key_pem(key))


def ensure_node_certs(pki: Pki, node_name: str, node_ip: str) -> None:
    """The real node's certificates (once per node address), signed by the cluster's CA."""
    marker = pki.file("node.ip")
    if marker.exists() and marker.read_text() == node_ip:
        return
    ca_key = serialization.load_pem_private_key(pki.file("ca.key").read_bytes(), password=None)
    if not isinstance(ca_key, rsa.RSAPrivateKey):
        raise ValueError(f"{pki.file('ca.key')} is not an RSA key")
    ca_name = x509.load_pem_x509_certificate(pki.file("ca.crt").read_bytes()).subject
    client = ExtendedKeyUsageOID.CLIENT_AUTH
    for stem, subject, usage, dns, ips in (
        ("kubelet-client", _name(f"system:node:{node_name}", "system:nodes"), client, (), ()),
        (
            "kubelet-serving",
            _name(f"system:node:{node_name}", "system:nodes"),
            ExtendedKeyUsageOID.SERVER_AUTH,
            (node_name,),
            (node_ip,),
        ),
        ("kube-proxy", _name("system:kube-proxy"), client, (), ()),
        ("coredns", _name("sparkplane:coredns"), client, (), ()),
    ):
        key = _new_key()
        _write(
            pki.root, stem, _sign(key, subject, ca_key, ca_name, usage=usage, dns=dns, ips=ips), key
        )
        pki.file(f"{stem}.key").chmod(0o600)
    marker.write_text(node_ip)


def webhook_ca_and_serving(
    ca_common_name: str, dns: tuple[str, ...], ips: tuple[str, ...]
) -> dict[str, bytes]:
    """A throw-away CA (its common name also its DNS SAN, as cert-controller's rotator checks
    a CA) and a serving certificate it signs for ``dns`` and ``ips``, as PEM under the keys a
    webhook secret holds (``ca.crt``, ``ca.key``, ``tls.crt``, ``tls.key``). Never the cluster's
    CA: this CA's key is stored in a Secret."""
    ca_key = _new_key()
    ca_name = _name(ca_common_name)
    ca = _sign(ca_key, ca_name, ca_key, ca_name, is_ca=True, dns=(ca_common_name,))
    key = _new_key()
    cert = _sign(
        key,
        _name(dns[0] if dns else ca_common_name),
        ca_key,
        ca_name,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        dns=dns,
        ips=ips,
    )
    pem = serialization.Encoding.PEM
    return {
        "ca.crt": ca.public_bytes(pem),
        "ca.key": _key_pem(ca_key),
        "tls.crt": cert.public_bytes(pem),
        "tls.key": _key_pem(key),
    }
