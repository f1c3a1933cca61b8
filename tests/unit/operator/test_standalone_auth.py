"""Closed standalone clusters (issue 26, finding 4): spark.authenticate with a generated secret
for the master, the workers and the same-namespace apps of a SparkCluster, and its
NetworkPolicy; and template shapes refused with the field (finding 8)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.operator.core import standalone_auth as auth
from sparkplane.operator.core.cluster import cluster_objects, decide_cluster
from sparkplane.operator.core.driver import build_attempt
from sparkplane.operator.core.observe import Observed
from sparkplane.operator.core.reconciler import decide
from tests.unit.operator.opfixtures import UID, at, make_cr


def cluster(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkCluster",
        "metadata": {"name": "sc", "namespace": "team-a", "uid": UID},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.1"},
            "clusterTolerations": {"instanceConfig": {"initWorkers": 1}},
            **spec,
        },
    }


def objects(cr: dict[str, Any]) -> dict[str, dict[str, Any]]:
    made = cluster_objects(cr, "op", new_secret=lambda: "s3cret")
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in made}


def test_daemons_authenticate_with_the_clusters_secret_never_in_the_pod_spec() -> None:
    objs = objects(cluster(sparkConf={"spark.authenticate": "false",
                                      "spark.authenticate.secret": "in-the-clear"}))  # fmt: skip
    secret = objs["Secret/sc-spark-auth"]
    assert secret["stringData"] == {"secret": "s3cret"} and secret["immutable"] is True
    assert secret["metadata"]["ownerReferences"][0]["uid"] == UID  # goes with the SparkCluster
    for role in ("master", "worker"):
        (container,) = objs[f"StatefulSet/sc-{role}"]["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e for e in container["env"]}
        assert env["_SPARK_AUTH_SECRET"]["valueFrom"] == {
            "secretKeyRef": {"name": "sc-spark-auth", "key": "secret"}
        }
        opts = env[f"SPARK_{role.upper()}_OPTS"]["value"]
        assert '-Dspark.authenticate="true"' in opts
        text = json.dumps(objs[f"StatefulSet/sc-{role}"])
        assert "s3cret" not in text and "in-the-clear" not in text


def test_network_policy_admits_only_the_clusters_pods_and_its_apps() -> None:
    policy = objects(cluster())["NetworkPolicy/sc-spark-cluster"]
    own = {"spark.operator/spark-cluster-name": "sc"}
    assert policy["spec"]["podSelector"] == {"matchLabels": own}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    sources = [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]
    assert sources == [
        {"podSelector": {"matchLabels": own}},
        {"podSelector": {"matchLabels": {"sparkplane.io/spark-cluster": "sc"}}},
    ]  # podSelector alone: this namespace only
    pods = objects(cluster())["StatefulSet/sc-worker"]["spec"]["template"]["metadata"]["labels"]
    assert pods["spark.operator/spark-cluster-name"] == "sc"


def test_release_never_deletes_the_secret_by_name() -> None:
    cr = cluster()
    cr["status"] = decide_cluster(cr, {}, at(0), "op").status
    d = decide_cluster(cr, {"master": None, "worker": None}, at(1), "op",
                       create_error="refused")  # fmt: skip
    refs = [r for a in d.actions for r in getattr(a, "refs", ())]
    assert ("networking.k8s.io/v1", "NetworkPolicy", "sc-spark-cluster") in refs
    assert not [r for r in refs if r[1] == "Secret"]


@pytest.mark.parametrize(
    ("master", "namespace", "target"),
    [
        ("spark://sc-master-svc.team-a.svc:7077", "team-a", "sc"),
        ("spark://sc-master-svc:7077", "team-a", "sc"),
        ("spark://sc-master-svc.team-a.svc.cluster.local:7077", "team-a", "sc"),
        ("spark://sc-master-0.sc-master-svc.team-a.svc:7077", "team-a", "sc"),
        ("spark://sc-master-svc.team-a.svc:7077", "team-b", None),  # another namespace's
        ("spark://sc-master-svc.team-a:7077,other-master-svc.team-a:7077", "team-a", None),
        ("k8s://https://kubernetes.default.svc", "team-a", None),
        ("spark://10.0.0.1:7077", "team-a", None),
        (None, "team-a", None),
    ],
)
def test_which_cluster_an_app_targets(master: str | None, namespace: str, target: str | None):
    assert auth.target_cluster(master, namespace) == target


def app(**conf: str) -> dict[str, Any]:
    return make_cr(conf={"spark.master": "spark://sc-master-svc.ns1.svc:7077", **conf})


def test_an_app_of_the_cluster_gets_the_secret_from_the_secret_and_the_label() -> None:
    built = build_attempt(app(**{"spark.authenticate": "false"}), "op", auth_cluster="sc")
    pod = built.driver_pod
    assert pod["metadata"]["labels"]["sparkplane.io/spark-cluster"] == "sc"
    env = pod["spec"]["containers"][0]["env"]
    names = [e["name"] for e in env]
    # the kubelet expands $(VAR) only from variables defined before it
    assert names.index("_SPARK_AUTH_SECRET") < names.index("SPARK_SUBMIT_OPTS")
    opts = next(e for e in env if e["name"] == "SPARK_SUBMIT_OPTS")["value"]
    assert opts == "-Dspark.authenticate.secret=$(_SPARK_AUTH_SECRET)"
    (config_map,) = [o for o in built.objects if o["kind"] == "ConfigMap"]
    assert "spark.authenticate=true" in config_map["data"]["spark.properties"]
    plain = build_attempt(app(), "op")
    assert "_SPARK_AUTH_SECRET" not in json.dumps(plain.driver_pod)


def test_the_reconciler_passes_the_observed_cluster_to_the_build() -> None:
    d = decide(app(), Observed(auth_cluster="sc"), at(0))
    (pod,) = [o for a in d.actions for o in getattr(a, "objects", ()) if o["kind"] == "Pod"]
    assert pod["metadata"]["labels"]["sparkplane.io/spark-cluster"] == "sc"


@pytest.mark.parametrize(
    "template",
    [
        {"spec": {"containers": "x"}},
        {"spec": "x"},
        {"metadata": {"labels": "x"}},
        {"spec": {"containers": [{"name": "a", "env": "x"}]}},
    ],
)
def test_a_malformed_pod_template_is_refused_with_its_field(template: dict[str, Any]) -> None:
    cr = make_cr(driverSpec={"podTemplateSpec": template})
    with pytest.raises(ValidationError, match=r"spec\.driverSpec\.podTemplateSpec.*must be a"):
        build_attempt(cr, "op")
    d = decide(cr, Observed(), at(0))
    assert [t.dst for t in d.transitions][-2:] == ["Failed", "ResourceReleased"]
    assert "must be" in d.transitions[1].message and d.transitions[1].warning


def test_a_malformed_cluster_template_fails_the_cluster_with_its_field() -> None:
    cr = cluster(masterSpec={"statefulSetSpec": {"template": {"spec": {"containers": "x"}}}})
    d = decide_cluster(cr, {}, at(0), "op")
    assert [t.dst for t in d.transitions] == ["Submitted", "SchedulingFailure", "ResourceReleased"]
    assert "spec.masterSpec.statefulSetSpec: not a Kubernetes StatefulSetSpec: " in (
        d.transitions[1].message
    )
    assert "template.spec.containers: must be a list (got str)" in d.transitions[1].message
    assert not d.creates
