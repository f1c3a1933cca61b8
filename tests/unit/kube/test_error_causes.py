"""403s and failed requests name their real cause: RBAC, quota, admission, too large, network."""

from __future__ import annotations

import json
import ssl

from sparkplane.errors import (
    AdmissionDeniedError,
    ForbiddenError,
    QuotaExceededError,
    TooLargeError,
    TransportError,
)
from sparkplane.kube.errors import error_for, transport_error


def status(message: str, code: int = 403) -> bytes:
    return json.dumps(
        {"kind": "Status", "reason": "Forbidden", "message": message, "code": code}
    ).encode()


def err(message: str, code: int = 403) -> Exception:
    return error_for(
        code, status(message, code), verb="create", plural="pods", namespace="ns", obj="Pod ns/d"
    )


def test_quota_is_not_rbac() -> None:
    exc = err(
        'pods "d" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'
    )
    assert type(exc) is QuotaExceededError and exc.exit_code == 5
    assert "ResourceQuota exceeded" in str(exc) and "not an RBAC problem" in str(exc)
    assert "auth can-i" not in str(exc)


def test_rbac_keeps_the_can_i_hint() -> None:
    exc = err(
        'pods is forbidden: User "u" cannot create resource "pods" in API group "" '
        'in the namespace "ns"'
    )
    assert type(exc) is ForbiddenError and exc.exit_code == 6
    assert "kubectl auth can-i create pods -n ns" in str(exc)


def test_admission_is_named() -> None:
    exc = err('pods "d" is forbidden: violates PodSecurity "restricted:latest": privileged')
    assert type(exc) is AdmissionDeniedError and "admission refused" in str(exc)
    exc = err('admission webhook "deny.example.com" denied the request: no')
    assert type(exc) is AdmissionDeniedError


def test_too_large_answers() -> None:
    assert type(err("Request entity too large: limit is 3145728", 413)) is TooLargeError
    assert type(err("etcdserver: request is too large", 500)) is TooLargeError


def test_transport_errors_are_too_large_or_network() -> None:
    cut = ssl.SSLEOFError(8, "EOF occurred in violation of protocol")
    big = transport_error(cut, method="POST", url="/api/v1/pods", body_bytes=10 * 1024 * 1024)
    assert isinstance(big, TooLargeError) and "10.0 MiB" in str(big)
    small = transport_error(
        ConnectionRefusedError(111, "refused"), method="GET", url="/x", body_bytes=10
    )
    assert isinstance(small, TransportError) and "cannot reach the Kubernetes API server" in str(
        small
    )
