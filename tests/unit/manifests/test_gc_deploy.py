"""The deployable clean-up bundle: least-privilege RBAC plus the CronJob, without drift."""

from __future__ import annotations

from pathlib import Path

import yaml

from sparkplane.manifests.gc import deploy_yaml, gc_bundle

ROOT = Path(__file__).parents[3]


def test_committed_file_matches_the_generator():
    assert (ROOT / "deploy" / "gc" / "cronjob.yaml").read_text() == deploy_yaml()


def test_bundle_runs_gc_under_its_own_service_account_deleting_only_pods():
    objs = gc_bundle("team-a", older_than="6h")
    kinds = [o["kind"] for o in objs]
    assert kinds == ["ServiceAccount", "Role", "RoleBinding", "CronJob"]
    role = objs[1]
    writes = {
        (r, v)
        for rule in role["rules"]
        for r in rule["resources"]
        for v in rule["verbs"]
        if v != "get"  # the half-made check reads dependents by name
    }
    # + creating log archives (ConfigMaps); never list, update or delete them; + forwarding to
    # a session's driver to read its idle time from Spark's REST API; + reading the namespace's
    # cap on sessions (a ResourceQuota entry)
    assert writes == {
        ("resourcequotas", "list"),
        ("pods", "list"),
        ("pods", "delete"),
        ("configmaps", "create"),
        ("pods/portforward", "create"),
    }
    pod = objs[-1]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == objs[0]["metadata"]["name"]
    # args to the image's entrypoint `tini -- sparkplane`
    assert pod["containers"][0]["args"] == [
        "gc",
        "-n",
        "team-a",
        "--older-than",
        "6h",
        "--in-cluster",
    ]
    assert pod["containers"][0]["env"] == [{"name": "SPARKPLANE_LOG_ARCHIVE", "value": "kube"}]
    assert yaml.safe_load_all(deploy_yaml())
