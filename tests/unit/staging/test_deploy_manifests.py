"""deploy/staging is generated from code and the committed files match it."""

from __future__ import annotations

from pathlib import Path

import yaml

from sparkplane.staging.deploy import NAME, PORT, manifests, render_files
from sparkplane.version import SPARKPLANE_IMAGE

DEPLOY = Path(__file__).parents[3] / "deploy" / "staging"


def test_committed_files_match_the_generator() -> None:
    for name, text in render_files().items():
        assert (DEPLOY / name).read_text() == text, f"regenerate deploy/staging/{name}"


def test_deployment_runs_serve_with_cluster_credentials_and_minimal_rights() -> None:
    files = render_files()
    objects = list(yaml.safe_load_all(files["staging.yaml"]))
    kinds = [o["kind"] for o in objects]
    assert kinds == ["PersistentVolumeClaim", "Deployment", "Service"]
    deployment = objects[1]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    # args to the image's entrypoint (`tini -- sparkplane`), never a command that drops tini
    assert "command" not in container
    assert container["args"][:3] == ["staging", "serve", "--in-cluster"]
    assert container["image"] == SPARKPLANE_IMAGE
    # in a pod, the Service must reach it: all addresses (the command's default is loopback)
    assert container["args"][3:5] == ["--host", "0.0.0.0"]
    assert pod["serviceAccountName"] == NAME
    assert deployment["spec"]["replicas"] == 1
    assert objects[2]["spec"]["ports"][0]["port"] == PORT
    rules = [
        rule
        for o in yaml.safe_load_all(files["rbac.yaml"])
        if o["kind"] in ("Role", "ClusterRole")
        for rule in o["rules"]
    ]
    assert rules == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["tokenreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        },
    ]


def test_with_an_object_store_replicas_share_the_bucket_and_no_disk() -> None:
    objs = manifests("ops", store="s3://staging/bundles", s3_secret="staging-s3", replicas=3)
    assert [o["kind"] for o in objs] == ["Deployment", "Service"]  # no claim
    deployment = objs[0]["spec"]
    assert deployment["replicas"] == 3 and deployment["strategy"] == {"type": "RollingUpdate"}
    pod = deployment["template"]["spec"]
    [container] = pod["containers"]
    args = container["args"]
    assert args[args.index("--store") + 1] == "s3://staging/bundles"
    assert "--storage-dir" not in args and "--db-path" not in args
    assert container["envFrom"] == [{"secretRef": {"name": "staging-s3"}}]
    assert "volumeMounts" not in container and pod["volumes"] == []
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
