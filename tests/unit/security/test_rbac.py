"""The RBAC catalogue and its rendering: least privilege as data, checked rule by rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.security.deploy import DEPLOY_FILES, render_files
from sparkplane.security.rbac import bodies, render, to_json, to_yaml
from sparkplane.security.rules import OPERATOR_LEASE, POLICIES, Identity

REPO = Path(__file__).resolve().parents[3]
SECRET_READS = {"get", "list", "watch", "patch", "update", "delete", "deletecollection", "*"}


def _grants(identity: Identity) -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs over every rule of an identity."""
    out: dict[tuple[str, str], set[str]] = {}
    p = POLICIES[identity]
    for rule in (*p.namespaced, *p.own_namespace, *p.cluster):
        for group in rule.groups:
            for res in rule.resources:
                out.setdefault((group, res), set()).update(rule.verbs)
    return out


@pytest.mark.parametrize("identity", list(Identity))
def test_every_rule_says_why_and_uses_no_wildcards(identity: Identity):
    policy = POLICIES[identity]
    for rule in (*policy.namespaced, *policy.own_namespace, *policy.cluster):
        assert len(rule.why) > 20, rule
        assert "*" not in rule.verbs and "*" not in rule.resources and "*" not in rule.groups


@pytest.mark.parametrize("identity", list(Identity))
def test_no_identity_can_read_a_secret(identity: Identity):
    verbs = _grants(identity).get(("", "secrets"), set())
    assert not verbs & SECRET_READS, f"{identity} may read Secrets through {verbs & SECRET_READS}"


def test_client_has_what_submit_monitor_and_kill_need():
    g = _grants(Identity.CLIENT)
    assert {"create", "get", "list", "watch", "delete"} <= g[("", "pods")]
    assert g[("", "pods/log")] == {"get"}
    assert "get" in g[("", "pods/portforward")]
    for res in ("configmaps", "services"):
        assert {"create", "delete"} <= g[("", res)]
    assert g[("", "secrets")] == {"create"}
    assert {"create", "delete"} <= g[("networking.k8s.io", "ingresses")]
    assert g[("", "events")] == {"get", "list", "watch", "create"}
    for group in ("spark.apache.org", "sparkoperator.k8s.io"):
        assert {"create", "get", "delete"} <= g[(group, "sparkapplications")]
    assert g[("", "nodes")] == {"get", "list"}
    assert g[("networking.k8s.io", "ingressclasses")] == {"list"}  # session create --expose
    assert [r.resources for r in POLICIES[Identity.CLIENT].cluster] == [
        ("nodes",),
        ("ingressclasses",),
    ]


def test_driver_touches_only_its_executors_objects():
    g = _grants(Identity.DRIVER)
    assert set(g) == {
        ("", "pods"),
        ("", "services"),
        ("", "configmaps"),
        ("", "persistentvolumeclaims"),
        ("apps", "statefulsets"),
    }
    assert {"create", "watch", "delete"} <= g[("", "pods")]
    # issue 27: the statefulset allocator, with the verbs of Apache's workload role
    assert g[("apps", "statefulsets")] == {
        "create",
        "get",
        "list",
        "watch",
        "update",
        "patch",
        "delete",
    }
    # issue 12: a driver cannot read any ConfigMap (other apps' spark.properties) or Service
    for kind in ("configmaps", "services"):
        assert g[("", kind)] == {"create", "delete", "deletecollection"}
    assert "watch" not in g[("", "persistentvolumeclaims")]
    assert not POLICIES[Identity.DRIVER].cluster
    assert not POLICIES[Identity.DRIVER].cluster_wide_allowed


def test_gc_and_staging_are_minimal():
    assert _grants(Identity.GC) == {
        ("", "pods"): {"get", "list", "delete"},
        ("", "pods/log"): {"get"},  # its log goes to the archive before the pod goes
        ("", "pods/portforward"): {"get", "create"},  # a session's idle time (Spark's REST API)
        # half-made check by name; creates in-cluster log archives, cannot list/change/delete
        ("", "configmaps"): {"get", "create"},
        ("", "services"): {"get"},
        ("", "persistentvolumeclaims"): {"get"},
        ("networking.k8s.io", "ingresses"): {"get"},
        ("networking.k8s.io", "networkpolicies"): {"get"},  # Spark 4.2+ apps
        ("", "resourcequotas"): {"list"},  # a namespace's cap on Spark Connect sessions
    }
    assert _grants(Identity.STAGING) == {
        ("", "pods"): {"get", "list"},
        ("authentication.k8s.io", "tokenreviews"): {"create"},  # who is an uploader's token?
        ("authorization.k8s.io", "subjectaccessreviews"): {"create"},  # may it create pods?
    }


def _flat(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {
        (g, r, v, tuple(rule.get("resourceNames", ())))
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


def test_operator_rules_equal_what_the_operator_installs():
    """One truth: the operator's own manifests (deploy/operator/) grant exactly these rules."""
    from sparkplane.operator.deploy import manifests as operator_deploy

    policy = POLICIES[Identity.OPERATOR]
    assert _flat([r.body() for r in policy.namespaced]) == _flat(operator_deploy.workload_rules())
    assert _flat([r.body() for r in policy.own_namespace]) == _flat(operator_deploy.lease_rules())
    assert OPERATOR_LEASE == operator_deploy.LEASE
    g = _grants(Identity.OPERATOR)
    assert {"patch", "update"} <= g[("spark.apache.org", "sparkapplications/status")]
    # a SparkCluster's generated spark.authenticate secret: created, never read back
    assert g[("", "secrets")] == {"create"}


def test_resource_names_render_before_verbs():
    lease = POLICIES[Identity.OPERATOR].own_namespace[1].body()
    assert list(lease) == ["apiGroups", "resources", "resourceNames", "verbs"]
    assert lease["resourceNames"] == [OPERATOR_LEASE]


def test_client_render_is_a_role_in_its_namespace_and_a_node_reader():
    objs = bodies(render("client", "spark-jobs"))
    kinds = [(o["kind"], o["metadata"]["name"]) for o in objs]
    assert kinds == [
        ("ServiceAccount", "sparkplane-client"),
        ("Role", "sparkplane:client"),
        ("ClusterRole", "sparkplane:client:cluster"),
        ("RoleBinding", "sparkplane:client:spark-jobs:sparkplane-client"),
        ("ClusterRoleBinding", "sparkplane:client:cluster:spark-jobs:sparkplane-client"),
    ]
    subject = {"kind": "ServiceAccount", "name": "sparkplane-client", "namespace": "spark-jobs"}
    for binding in objs[3:]:
        assert binding["subjects"] == [subject]
    assert objs[3]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "sparkplane:client",
    }
    assert objs[1]["metadata"]["namespace"] == "spark-jobs"
    assert "namespace" not in objs[2]["metadata"]


def test_bindings_point_at_rendered_roles_for_every_variant():
    variants = [
        render(i, "ns", cluster_wide=c)
        for i in Identity
        for c in (False, True)
        if c is False or POLICIES[i].cluster_wide_allowed
    ]
    for objs in map(bodies, variants):
        roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs}
        for b in (o for o in objs if o["kind"].endswith("Binding")):
            ref = b["roleRef"]
            ns = b["metadata"].get("namespace") if ref["kind"] == "Role" else None
            assert (ref["kind"], ns, ref["name"]) in roles


def test_operator_namespaced_binds_its_account_in_each_target_namespace():
    objs = bodies(render("operator", "sparkplane-system", namespaces=["a", "b", "a"]))
    roles = [(o["kind"], o["metadata"].get("namespace")) for o in objs if "rules" in o]
    # + one ClusterRole: Kueue's ResourceFlavors are cluster-scoped (get only)
    assert roles == [
        ("Role", "a"),
        ("Role", "b"),
        ("Role", "sparkplane-system"),
        ("ClusterRole", None),
    ]
    leases = next(o for o in objs if o["metadata"]["name"].endswith("leader-election"))
    assert leases["rules"][0]["resources"] == ["leases"]
    for b in (o for o in objs if o["kind"] == "RoleBinding"):
        assert b["subjects"][0]["namespace"] == "sparkplane-system"


def test_operator_cluster_wide_uses_a_cluster_role_but_leases_stay_namespaced():
    objs = bodies(render("operator", "sparkplane-system", cluster_wide=True))
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == sorted(
        # a second ClusterRole and binding: the cluster-scoped reads (ResourceFlavors)
        ["ServiceAccount", "Role", "RoleBinding", *(["ClusterRole", "ClusterRoleBinding"] * 2)]
    )


def test_invalid_requests_list_every_problem():
    with pytest.raises(ValidationError) as info:
        render("driver", "Bad_NS", service_account="no/slash", cluster_wide=True)
    fields = [p.path for p in info.value.problems]
    assert {"namespace", "service_account", "cluster_wide"} <= set(fields)
    with pytest.raises(ValidationError, match="acts only in its own namespace"):
        render("client", "a", namespaces=["b"])
    with pytest.raises(ValidationError, match="unknown identity 'root'"):
        render("root", "a")
    with pytest.raises(ValidationError, match="already covers every namespace"):
        render("gc", "a", namespaces=["b"], cluster_wide=True)


def test_custom_service_account_names_objects():
    objs = bodies(render("gc", "jobs", service_account="cleaner"))
    assert objs[0]["metadata"]["name"] == "cleaner"
    assert objs[-1]["metadata"]["name"] == "sparkplane:gc:jobs:cleaner"


@pytest.mark.parametrize("identity", list(Identity))
def test_yaml_round_trips_and_comments_every_rule(identity: Identity):
    objects = render(identity, "ns")
    text = to_yaml(objects, header="a header")
    assert text.startswith("# a header\n")
    assert list(yaml.safe_load_all(text)) == bodies(objects)
    comments = " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))
    for obj in objects:
        for why in obj.reasons:
            assert " ".join(why.split()) in comments
    assert json.loads(to_json(objects))["items"] == bodies(objects)


def test_deploy_files_are_generated_from_code():
    folder = REPO / "deploy" / "rbac"
    rendered = render_files()
    assert sorted(p.name for p in folder.glob("*.yaml")) == sorted(rendered)
    for name, text in rendered.items():
        assert (folder / name).read_text() == text, (
            f"deploy/rbac/{name} is stale: run `python -m sparkplane.security.deploy`"
        )
    assert DEPLOY_FILES["operator.yaml"].command().endswith("--cluster-wide")
