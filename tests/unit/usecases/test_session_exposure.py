"""A session exposed through an Ingress with TLS: its options, objects and URL (pure)."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime

import pytest
from cryptography import x509

from sparkplane.security.selfsigned import server_cert
from sparkplane.spec.connect import CONNECT_PORT
from sparkplane.usecases import exposure
from sparkplane.usecases.session import SessionOptions, session_argv
from sparkplane.usecases.sources import read_source
from sparkplane.vocab import SESSION_ENDPOINT_KEY, SESSION_LABEL

EXPOSED = exposure.Exposure("spark.example.com", 8443, "traefik", None)


@pytest.mark.parametrize(
    ("opts", "fields"),
    [
        (SessionOptions(expose="ingress"), ["host"]),
        (SessionOptions(expose="gateway", host="a.example.com"), ["expose"]),
        (SessionOptions(expose="ingress", host="a.example.com:443"), ["host"]),
        (SessionOptions(expose="ingress", host="10.0.0.1"), ["host"]),
        (SessionOptions(expose="ingress", host="a.example.com", ingress_port=0), ["ingress_port"]),
        (SessionOptions(host="a.example.com"), ["host"]),  # a host without --expose
    ],
)
def test_bad_exposure_names_the_field(opts: SessionOptions, fields: list[str]) -> None:
    assert [p.path for p in opts.problems()] == fields


def test_good_exposure_has_no_problem() -> None:
    assert SessionOptions(expose="ingress", host="localhost").problems() == []


def test_objects_route_the_host_to_the_grpc_port_with_tls() -> None:
    made, ca = exposure.objects("nb", "ns", EXPOSED, "alice")
    service, secret, ingress = made
    assert [o["kind"] for o in made] == ["Service", "Secret", "Ingress"]
    assert service["spec"]["selector"] == {SESSION_LABEL: "nb"}
    port = service["spec"]["ports"][0]
    assert (port["port"], port["appProtocol"]) == (CONNECT_PORT, "kubernetes.io/h2c")
    assert service["metadata"]["annotations"] == exposure.SERVICE_ANNOTATIONS
    assert secret["type"] == "kubernetes.io/tls" and secret["metadata"]["name"] == "nb-connect-tls"
    spec = ingress["spec"]
    assert spec["ingressClassName"] == "traefik"
    assert spec["tls"] == [{"hosts": ["spark.example.com"], "secretName": "nb-connect-tls"}]
    backend = spec["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "nb-connect", "port": {"name": exposure.PORT_NAME}}
    assert ca == secret["stringData"]["ca.crt"]


def test_a_given_secret_is_used_and_none_is_made() -> None:
    given = exposure.Exposure("spark.example.com", 443, "nginx", "my-cert")
    made, ca = exposure.objects("nb", "ns", given, "alice")
    assert [o["kind"] for o in made] == ["Service", "Ingress"] and ca == ""
    assert made[1]["spec"]["tls"][0]["secretName"] == "my-cert"


def test_the_certificate_verifies_for_the_host_against_its_ca(tmp_path: object) -> None:
    made = server_cert("spark.example.com")
    cert = x509.load_pem_x509_certificate(made.cert.encode())
    ca = x509.load_pem_x509_certificate(made.ca.encode())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["spark.example.com"]
    assert cert.not_valid_before_utc < datetime.now(UTC) < cert.not_valid_after_utc
    ctx = ssl.create_default_context(cadata=made.ca)  # a TLS client trusts the CA alone
    assert ctx.get_ca_certs()[0]["subject"]


def test_the_endpoint_is_a_driver_annotation_and_the_url_uses_tls() -> None:
    argv = session_argv(SessionOptions(), "nb", "nb-connect-token", "a", EXPOSED.endpoint)
    app = read_source(argv=argv, namespace="ns").app
    assert app is not None
    key = f"spark.kubernetes.driver.annotation.{SESSION_ENDPOINT_KEY}"
    assert app.spec.spark_conf[key] == "spark.example.com:8443"
    assert exposure.url(EXPOSED.endpoint, "t0k") == (
        "sc://spark.example.com:8443/;use_ssl=true;token=t0k"
    )
    assert exposure.url(EXPOSED.endpoint, None) == "sc://spark.example.com:8443/;use_ssl=true"
