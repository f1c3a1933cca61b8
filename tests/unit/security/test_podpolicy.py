"""The tenant pod policy: the operator's pure check, the rendered admission policies, the tenant's
objects, and the bounded driver status the operator writes into a SparkApplication's history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sparkplane.cli.main import app as cli
from sparkplane.cli.main import main
from sparkplane.errors import ValidationError
from sparkplane.operator.core.observe import MESSAGE_LIMIT, reported_status
from sparkplane.security import admission
from sparkplane.security import podpolicy as pp
from sparkplane.vocab import TENANT_LABEL

REPO = Path(__file__).resolve().parents[3]


def _pod_spec(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "serviceAccountName": "spark-driver",
        "containers": [{"name": "spark-kubernetes-driver", "image": "spark"}],
    }
    spec.update(extra)
    return spec


def _sc(**sc: Any) -> dict[str, Any]:
    return _pod_spec(containers=[{"name": "c", "image": "i", "securityContext": sc}])


# Every hostile driver of issue 26, finding 1: (spec, the field the refusal must name)
HOSTILE = {
    "privileged": (_sc(privileged=True), "spec.containers[0].securityContext.privileged"),
    "hostNetwork": (_pod_spec(hostNetwork=True), "spec.hostNetwork"),
    "hostPID": (_pod_spec(hostPID=True), "spec.hostPID"),
    "hostIPC": (_pod_spec(hostIPC=True), "spec.hostIPC"),
    "hostPath /": (
        _pod_spec(volumes=[{"name": "root", "hostPath": {"path": "/"}}]),
        "spec.volumes[0].hostPath",
    ),
    "capabilities": (
        _sc(capabilities={"add": ["SYS_ADMIN"]}),
        "spec.containers[0].securityContext.capabilities.add",
    ),
    "escalation": (
        _sc(allowPrivilegeEscalation=True),
        "spec.containers[0].securityContext.allowPrivilegeEscalation",
    ),
    "system-node-critical": (
        _pod_spec(priorityClassName="system-node-critical"),
        "spec.priorityClassName",
    ),
    "as sparkplane-gc": (_pod_spec(serviceAccountName="sparkplane-gc"), "spec.serviceAccountName"),
    "as sparkplane-client": (
        _pod_spec(serviceAccountName="sparkplane-client"),
        "spec.serviceAccountName",
    ),
    "privileged init container": (
        _pod_spec(initContainers=[{"name": "i", "securityContext": {"privileged": True}}]),
        "spec.initContainers[0].securityContext.privileged",
    ),
}


@pytest.mark.parametrize("probe", sorted(HOSTILE))
def test_each_hostile_pod_is_refused_naming_its_field(probe: str) -> None:
    spec, field = HOSTILE[probe]
    problems = pp.check_pod(spec)
    assert [p.path for p in problems] == [field]
    assert "tenant pod policy" in str(problems[0]) or "sparkplane" in str(problems[0])


def test_a_plain_spark_pod_passes_and_opt_outs_are_per_check() -> None:
    assert pp.check_pod(_pod_spec()) == []
    assert pp.check_pod(_pod_spec(hostNetwork=True), allow=["host-namespaces"]) == []
    assert pp.check_pod(_sc(privileged=True), allow=["host-namespaces"]) != []
    problem = pp.check_pod(_sc(privileged=True))[0]
    assert "policy.sparkplane.io/allow-privileged=true" in str(problem)


def test_designated_service_accounts() -> None:
    assert pp.check_pod(_pod_spec(), service_accounts=["spark-driver"]) == []
    found = pp.check_pod(_pod_spec(serviceAccountName="default"), service_accounts=["spark"])
    assert [p.path for p in found] == ["spec.serviceAccountName"]


def test_objects_statefulset_templates_and_executor_templates_are_checked() -> None:
    sts = {
        "kind": "StatefulSet",
        "metadata": {"name": "c-master"},
        "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": _sc(privileged=True)}},
    }
    template = {"apiVersion": "v1", "kind": "Pod", "spec": _pod_spec(hostPID=True)}
    conf = {
        "kind": "ConfigMap",
        "metadata": {"name": "x-driver-podspec-conf-map"},
        "data": {pp.EXECUTOR_TEMPLATE_KEY: yaml.safe_dump(template)},
    }
    found = [str(p) for p in pp.check_objects([sts, conf])]
    assert found[0].startswith("StatefulSet c-master: template.spec.containers[0]")
    assert found[1].startswith("executor pod template: spec.hostPID")
    pods = pp.pods_to_admit([sts, conf])
    assert [p["metadata"]["name"] for p in pods] == ["c-master-0"]
    assert pods[0]["metadata"]["labels"] == {"a": "b"}


def test_deploy_policy_is_generated_from_code() -> None:
    folder = REPO / "deploy" / "policy"
    rendered = admission.render_files()
    assert sorted(p.name for p in folder.glob("*.yaml")) == sorted(rendered)
    for name, text in rendered.items():
        assert (folder / name).read_text() == text, (
            f"deploy/policy/{name} is stale: run `python -m sparkplane.security.admission`"
        )


def test_policies_bind_tenant_namespaces_and_cover_every_check() -> None:
    objects = admission.policies()
    kinds = [o["kind"] for o in objects]
    assert kinds == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"] * 3
    # issue 27: a driver's StatefulSet writes need the namespace's opt-in
    sts = objects[4]["spec"]
    assert sts["matchConstraints"]["resourceRules"][0]["apiGroups"] == ["apps"]
    assert "allow-driver-statefulsets" in sts["validations"][0]["expression"]
    pods = objects[0]["spec"]
    assert pods["failurePolicy"] == "Fail"
    messages = " ".join(v["message"] for v in pods["validations"])
    for check in pp.CHECKS:
        assert check.opt_out in messages
    assert pp.POD_UID_EXTRA in " ".join(v["expression"] for v in pods["variables"])
    binding = objects[1]["spec"]
    assert binding["validationActions"] == ["Deny"]
    assert binding["matchResources"]["namespaceSelector"]["matchLabels"] == {
        TENANT_LABEL: pp.TENANT_ENABLED
    }
    writes = objects[2]["spec"]["matchConstraints"]["resourceRules"]
    assert {r for rule in writes for r in rule["resources"]} == {
        "pods",
        "configmaps",
        "services",
        "persistentvolumeclaims",
    }


def test_tenant_objects_labels_roles_and_quotas() -> None:
    settings = admission.TenantSettings("team-a", allow=("host-namespaces",), secrets=("creds",))
    objects = admission.tenant_objects(settings)
    ns = next(o for o in objects if o["kind"] == "Namespace")
    assert ns["metadata"]["labels"][TENANT_LABEL] == "enabled"
    assert ns["metadata"]["labels"]["policy.sparkplane.io/allow-host-namespaces"] == "true"
    assert ns["metadata"]["labels"][admission.PSA_ENFORCE] == "privileged"
    assert ns["metadata"]["annotations"][pp.SERVICE_ACCOUNTS] == "spark-driver"
    assert ns["metadata"]["annotations"][pp.SECRETS] == "creds"
    roles = {o["metadata"]["name"] for o in objects if o["kind"] == "Role"}
    assert roles == {"sparkplane:client", "sparkplane:driver"}
    quotas = [o for o in objects if o["kind"] == "ResourceQuota"]
    assert [q["metadata"]["name"] for q in quotas] == [
        admission.QUOTA,
        admission.SYSTEM_PRIORITY_QUOTA,
    ]
    plain = admission.namespace_object(admission.TenantSettings("team-b"))
    assert plain["metadata"]["labels"][admission.PSA_ENFORCE] == "baseline"


def test_tenant_setup_refuses_bad_input_naming_each_field() -> None:
    bad = admission.TenantSettings(
        "Team_A", driver_service_account="sparkplane-gc", allow=("everything",)
    )
    with pytest.raises(ValidationError) as info:
        admission.tenant_objects(bad)
    assert [p.path for p in info.value.problems] == ["namespace", "service_account", "allow"]
    with pytest.raises(ValidationError):
        admission.parse_quota("pods")
    assert admission.parse_quota("pods=10, requests.cpu=4") == {
        "pods": "10",
        "requests.cpu": "4",
    }


def test_tenant_setup_cli_prints_and_refuses_with_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ok = CliRunner().invoke(cli, ["tenant", "setup", "-n", "team-a", "-o", "yaml"])
    assert ok.exit_code == 0, ok.output
    kinds = [d["kind"] for d in yaml.safe_load_all(ok.output)]
    assert "ValidatingAdmissionPolicy" in kinds
    assert "ResourceQuota" in kinds
    with pytest.raises(SystemExit) as info:
        main(["tenant", "setup", "-n", "team-a", "-o", "yaml", "--allow", "x"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "allow: unknown check(s) ['x']" in err
    assert "Traceback" not in err


def test_history_keeps_only_the_drivers_own_termination_message_bounded() -> None:
    secret = "c2VjcmV0"  # what an init container wrote to /dev/termination-log
    pod = {
        "spec": {"containers": [{"name": "spark-kubernetes-driver"}, {"name": "side"}]},
        "status": {
            "phase": "Failed",
            "initContainerStatuses": [
                {"name": "steal", "state": {"terminated": {"exitCode": 0, "message": secret}}}
            ],
            "containerStatuses": [
                {
                    "name": "spark-kubernetes-driver",
                    "state": {"terminated": {"exitCode": 1, "message": "x" * 5000}},
                },
                {
                    "name": "side",
                    "state": {"terminated": {"exitCode": 0, "message": secret}},
                    "lastState": {"terminated": {"exitCode": 0, "message": secret}},
                },
            ],
        },
    }
    out = reported_status(pod)
    assert secret not in yaml.safe_dump(out)
    main = out["containerStatuses"][0]["state"]["terminated"]["message"]
    assert len(main.encode()) <= MESSAGE_LIMIT + len(" [truncated]")
    assert out["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert pod["status"]["initContainerStatuses"][0]["state"]["terminated"]["message"] == secret
