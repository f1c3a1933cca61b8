"""Issue 26, findings 1 and 2, from the tenant's side: every probe runs as a tenant identity
(create-only-SparkApplications, the client role, the driver role with a pod-bound token) against
a namespace set up by ``sparkplane tenant setup``, with the operator running on its shipped RBAC.
The API server (the ValidatingAdmissionPolicies) or the operator must refuse each, and nothing
hostile may exist afterwards; the driver still creates and deletes its own executors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.kube import Kube
from tests.tenant_probes import Outcome, Tenant, figures


@pytest.fixture(params=["baseline", "privileged"])
def tenant(
    kube: Kube, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Tenant]:
    """A tenant namespace; with Pod Security ``privileged`` the admission policy stands alone."""
    made = Tenant(kube, namespace, tmp_path, pod_security=request.param).setup()
    yield made
    made.close()


def test_every_probe_of_findings_1_and_2_is_refused(tenant: Tenant) -> None:
    outcomes: list[Outcome] = []
    with tenant.operator():
        for probe in tenant.probes():
            outcomes.append(probe())
        control = tenant.control()
    report = "\n".join(
        f"{o.finding} {o.identity:15} {'refused' if o.refused else 'ALLOWED'}"
        f"{' ESCALATION' if o.escalated else ''} {o.name}: {o.detail}"
        for o in outcomes
    )
    print(report)
    numbers = figures(outcomes)
    assert numbers["escalations"] == 0, report
    assert numbers["refused"] == numbers["tried"], report
    assert numbers["tried"] >= 25
    # the refusals name the field (operator: status message; API server: the policy's message)
    by_name = {o.name: o.detail for o in outcomes}
    assert "hostNetwork" in by_name["SparkApplication: hostNetwork driver"]
    assert "serviceAccountName" in by_name["SparkApplication: driver as an undesignated account"]
    assert "ownerReferences" in by_name["pod not owned by the driver"]
    assert "driver-statefulsets" in by_name["executor StatefulSet without the opt-in"]
    assert control == []


def test_operator_refusal_is_an_event_and_a_status_naming_the_field(tenant: Tenant) -> None:
    with tenant.operator():
        outcome = tenant.probes()[0]()  # the privileged driver
    assert outcome.refused, outcome
    assert "securityContext.privileged" in outcome.detail
    events = tenant.admin.list("v1", "Event", tenant.namespace)
    texts = [str(e.get("message")) for e in events if e["involvedObject"].get("name") == "h-priv"]
    assert any("securityContext.privileged" in t for t in texts), texts
