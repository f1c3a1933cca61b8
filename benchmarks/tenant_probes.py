"""Issue 26's tenant probes (findings 1 and 2) against a cluster: probes tried / refused /
escalations.

Sets up a fresh namespace with ``sparkplane tenant setup`` (as the admin whose kubeconfig is
given), then runs every probe of ``tests/tenant_probes.py`` as a tenant identity: the
create-only-SparkApplications role (through the operator, which runs in-process with its shipped
RBAC), the client role, and the driver role with a pod-bound token (and with an unbound one).
Deletes the namespace afterwards. Rerunnable; exit 1 if any probe escalated.

    .venv/bin/python benchmarks/tenant_probes.py --kubeconfig /tmp/policy/kwok/kubeconfig
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from tests.tenant_probes import Outcome, Tenant, figures

from sparkplane.kube import Kube, connect


def run(admin: Kube, pod_security: str) -> tuple[list[Outcome], list[str]]:
    """Every probe in a fresh tenant namespace (deleted afterwards)."""
    namespace = f"sp-probes-{uuid.uuid4().hex[:6]}"
    admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        while admin.get_or_none("v1", "ServiceAccount", "default", namespace) is None:
            time.sleep(0.2)
        with tempfile.TemporaryDirectory() as work:
            tenant = Tenant(
                admin,
                namespace,
                Path(work),
                pod_security=pod_security,
                enforce=pod_security != "none",
            ).setup()
            try:
                with tenant.operator():
                    outcomes = [probe() for probe in tenant.probes()]
                    control = tenant.control()
            finally:
                tenant.close()
    finally:
        admin.delete("v1", "Namespace", namespace)
    return outcomes, control


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, help="an admin's kubeconfig")
    parser.add_argument(
        "--pod-security",
        action="append",
        help="Pod Security level(s) of the tenant namespace (default: baseline, then privileged: "
        "the admission policy alone); none: a namespace NOT set up (the figures before)",
    )
    args = parser.parse_args()
    admin = Kube(connect(kubeconfig=args.kubeconfig))
    failed = False
    try:
        for level in args.pod_security or ["baseline", "privileged"]:
            started = time.monotonic()
            outcomes, control = run(admin, level)
            print(f"== tenant namespace with Pod Security {level!r} ==")
            for o in outcomes:
                verdict = "refused" if o.refused else "ALLOWED"
                flag = " ESCALATION" if o.escalated else ""
                print(f"finding {o.finding}  {o.identity:15} {verdict}{flag}  {o.name}")
                print(f"    {o.detail[:240]}")
            numbers = figures(outcomes)
            print(
                f"probes tried: {numbers['tried']}  refused: {numbers['refused']}  "
                f"escalations: {numbers['escalations']}  ({time.monotonic() - started:.0f} s)"
            )
            print("control (own executor, a plain app's driver): " + ("; ".join(control) or "ok"))
            failed = failed or bool(numbers["escalations"] or control)
    finally:
        admin.close()
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
