"""Work queue, lease decisions, naming, CRDs and deploy manifests (no drift), CLI."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from sparkplane.cli.operator import app as cli
from sparkplane.operator.core.naming import OperatorIds, attempt_app_id
from sparkplane.operator.deploy import manifests as deploy
from sparkplane.operator.deploy.crd import application_crd, cluster_crd
from sparkplane.operator.runtime.leader import can_acquire
from sparkplane.operator.runtime.workqueue import WorkQueue
from sparkplane.vocab import format_micro_time as micro_time
from tests.unit.operator.opfixtures import T0

ROOT = Path(__file__).resolve().parents[3]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_queue_deduplicates_and_never_hands_a_key_to_two_workers() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert q.get(0) == "a"
    q.add("a")  # while processing: marked dirty, not queued twice
    assert q.get(0) == "b"
    assert q.get(0) is None
    q.done("a")
    assert q.get(0) == "a"


def test_queue_delays_and_earliest_request_wins() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 5)
    q.add_after("a", 20)
    assert q.get(0) is None
    clock.now = 5.0
    assert q.get(0) == "a"


def test_queue_folds_changes_that_arrive_together_into_one_pass() -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    for _ in range(5):  # five executors of one app change within the fold
        q.add_soon("app", 1.0)
    assert q.get(timeout=0) is None  # not yet due
    clock.now = 1.0
    assert q.get(timeout=0) == "app"
    q.done("app")
    assert q.get(timeout=0) is None  # one pass for the five
    q.add("other")
    q.add_soon("other", 1.0)  # already waiting: that pass will read the change, no second one
    assert q.get(timeout=0) == "other"
    q.done("other")
    clock.now = 5.0
    assert q.get(timeout=0) is None


def test_queue_backs_off_exponentially_until_forgotten() -> None:
    q: WorkQueue[str] = WorkQueue(base_delay=0.1, max_delay=0.5, clock=FakeClock())
    delays = [q.add_rate_limited("k") for _ in range(5)]
    assert delays == [0.1, 0.2, 0.4, 0.5, 0.5]
    q.forget("k")
    assert q.add_rate_limited("k") == 0.1


def test_queue_get_blocks_until_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue()
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    q.shutdown()
    t.join(2)
    assert got == [None]


def test_lease_can_be_taken_only_when_free_mine_or_expired() -> None:
    lease = {
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": micro_time(T0)}
    }
    assert can_acquire(None, "b", 0)
    assert can_acquire(lease, "a", 0)
    # "unchanged for" is measured on the candidate's own clock: renewTime is never compared
    assert not can_acquire(lease, "b", 10)
    assert can_acquire(lease, "b", 16)
    assert can_acquire({"spec": {"holderIdentity": None}}, "b", 0)
    assert micro_time(T0) == "2025-03-01T10:00:00.000000Z"


def test_attempt_names_are_apache_style_and_bounded() -> None:
    assert attempt_app_id("pi", "ns", 0) == "pi-0"
    long = attempt_app_id("a" * 60, "ns", 3)
    assert len(long) == 46
    assert long == attempt_app_id("a" * 60, "ns", 3)
    assert long != attempt_app_id("a" * 60, "ns", 4)
    ids = OperatorIds.for_attempt("pi", "ns", "uid", 2)
    assert (ids.default_driver_pod_name, ids.driver_service_name, ids.conf_map_name) == (
        "pi-2-driver",
        "pi-2-driver-svc",
        "pi-2-spark-drv-conf-map",
    )
    assert OperatorIds.for_attempt("9lives", "ns", "u", 0).driver_service_name.startswith("spark-")


def _walk(schema: Any, path: str = "") -> list[str]:
    """Paths where a schema is not structural."""
    bad = []
    if isinstance(schema, dict):
        for key in ("$ref", "anyOf", "oneOf", "allOf", "$defs", "default", "title"):
            if key in schema:
                bad.append(f"{path}.{key}")
        if "properties" in schema and "additionalProperties" in schema:
            bad.append(f"{path}: properties with additionalProperties")
        if (
            not any(
                k in schema
                for k in (
                    "type",
                    "x-kubernetes-preserve-unknown-fields",
                    "x-kubernetes-int-or-string",
                )
            )
            and path.count(".")
            and not path.endswith("properties")
        ):
            bad.append(f"{path}: no type")
        for key, value in schema.items():
            if key in ("properties",):
                for name, sub in value.items():
                    bad += _walk(sub, f"{path}.{name}")
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                bad += _walk(value, f"{path}.{key}")
    return bad


def test_crds_are_structural_with_status_and_printer_columns() -> None:
    for crd in (application_crd(), cluster_crd()):
        spec = crd["spec"]
        assert spec["group"] == "spark.apache.org"
        versions = {v["name"]: v for v in spec["versions"]}
        assert set(versions) == {"v1", "v1beta1", "v1alpha1"}
        assert [n for n, v in versions.items() if v["storage"]] == ["v1"]
        assert spec["conversion"] == {"strategy": "None"}
        for version in versions.values():
            assert version["served"] and version["subresources"] == {"status": {}}
            assert version["additionalPrinterColumns"][0]["jsonPath"] == (
                ".status.currentState.currentStateSummary"
            )
            schema = version["schema"]["openAPIV3Schema"]
            assert _walk(schema["properties"]["spec"], "spec") == []
    app = application_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = app["properties"]["spec"]
    assert spec["required"] == ["runtimeVersions"]
    template = spec["properties"]["driverSpec"]["properties"]["podTemplateSpec"]
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    tol = spec["properties"]["applicationTolerations"]["properties"]
    assert tol["restartConfig"]["properties"]["restartPolicy"]["enum"] == [
        "Always",
        "Never",
        "OnFailure",
        "OnInfrastructureFailure",
    ]


def test_deploy_files_match_the_generator() -> None:
    from sparkplane.manifests import chart

    for rel, text in chart.files().items():
        path = ROOT / "deploy" / rel
        assert path.is_file(), (
            f"deploy/{rel} missing: run `sparkplane operator manifests --write deploy`"
        )
        assert path.read_text() == text, f"deploy/{rel} drifted: regenerate it"


def test_namespaced_variant_has_nothing_cluster_scoped_but_its_namespace_and_reads() -> None:
    objs = deploy.namespaced(["a", "b"])
    scoped = [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert {o["metadata"]["name"] for o in scoped} == {deploy.CLUSTER_READS}
    rules = [r for o in scoped if o["kind"] == "ClusterRole" for r in o["rules"]]
    assert rules == [  # reads only: Kueue's flavors and the priority classes of Workloads
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["resourceflavors"], "verbs": ["get"]},
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloadpriorityclasses"],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["scheduling.k8s.io"],
            "resources": ["priorityclasses"],
            "verbs": ["get", "list"],
        },
    ]
    roles = [o for o in objs if o["kind"] == "Role" and o["metadata"]["name"] == deploy.NAME]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["a", "b"]
    args = next(o for o in objs if o["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]["args"]
    assert "--namespace=a" in args and "--all-namespaces" not in args
    for rule in deploy.workload_rules():
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]


def test_cli_manifests_prints_crds_and_operator() -> None:
    result = CliRunner().invoke(cli, ["manifests"])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.output) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds.count("CustomResourceDefinition") == 6  # + Kubeflow's v1beta2 kinds, SparkConnect
    assert "ClusterRole" in kinds and "Deployment" in kinds


def test_chart_versions_follow_the_package() -> None:
    import sparkplane
    from sparkplane.manifests import chart

    meta = yaml.safe_load((ROOT / "deploy" / chart.CHART / "Chart.yaml").read_text())
    assert meta["appVersion"] == sparkplane.__version__
    assert deploy.DEFAULT_IMAGE.endswith(f":{sparkplane.__version__}")
    values = yaml.safe_load((ROOT / "deploy" / chart.CHART / "values.yaml").read_text())
    assert f"{values['image']['repository']}:{meta['appVersion']}" == deploy.DEFAULT_IMAGE
