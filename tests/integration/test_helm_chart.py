"""The Helm chart with a real ``helm`` (built from Go modules): render, install, upgrade, uninstall.

``helm template`` must print exactly what the Python generators say (``chart.expected``), for
the cluster-wide and the namespaced values, so the templates cannot drift from the code that
also writes ``deploy/``. Then the namespaced variant is installed into the dev cluster, upgraded
from an older copy of the chart (a CRD printer column and the gc schedule change; Helm 4 applies
them server-side) and uninstalled (the CRDs stay: ``helm.sh/resource-policy: keep``). The
operator image only runs on a real node, so here the operator runs in-process with the
credentials of the chart's ServiceAccount: the installed RBAC and CRDs must be enough for it to
reconcile an application to the end.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sparkplane.cli import security as security_cli
from sparkplane.kube import Kube, connect
from sparkplane.manifests.chart import CHART, ChartValues, expected
from sparkplane.operator.deploy.crd import scheduled_crd
from sparkplane_devcluster.cluster import default_cache_dir
from sparkplane_devcluster.helmbin import ensure_helm
from tests.integration.helpers import delete_namespace, wait_for
from tests.integration.operator_helpers import leftover, running_operator, spark_app, wait_state

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "deploy" / CHART
SCHEDULED_CRD = str(scheduled_crd()["metadata"]["name"])
CORPUS = Path(__file__).parent / "corpus"


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_helm(default_cache_dir(), progress=lambda m: print(f"[helm] {m}", flush=True))


def run_helm(helm: Path, *args: str, kubeconfig: Path | None = None) -> str:
    cmd = [str(helm), *args, *(["--kubeconfig", str(kubeconfig)] if kubeconfig else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, f"helm {' '.join(args)}:\n{proc.stderr}"
    return proc.stdout


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], str(meta.get("namespace", "")), str(meta["name"]))


def _by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {_key(o): o for o in objects}


@pytest.mark.parametrize(
    ("flags", "values"),
    [
        ([], ChartValues(namespace="ops")),
        (
            [
                "--set", "spark.jobNamespaces={team-a,team-b}",
                "--set", "gc.namespaces={team-a}",
                "--set", "controller.replicas=3",
                "--set", "prometheus.metrics.enable=false",
                "--set", "image.tag=9.9.9",
                "--set", "logArchive.store=off",
                "--set", "spark.resourceSelector=foo=bar\\,keyx=valuey",
                "--set", "dynamicConfig.enabled=true",
            ],
            ChartValues(
                namespace="ops",
                job_namespaces=("team-a", "team-b"),
                gc_namespaces=("team-a",),
                replicas=3,
                metrics_port=None,
                image="ghcr.io/sparkplane/sparkplane:9.9.9",
                log_archive="off",
                resource_selector="foo=bar,keyx=valuey",
                dynamic_config=True,
            ),
        ),
        (
            ["--set", "logArchive.store=s3://spark-logs/sp", "--set", "logArchive.s3Secret=aws"],
            ChartValues(namespace="ops", log_archive="s3://spark-logs/sp", archive_secret="aws"),
        ),
    ],
)  # fmt: skip
def test_template_renders_what_the_generators_say(
    helm: Path, flags: list[str], values: ChartValues
) -> None:
    out = run_helm(helm, "template", "sp", str(SOURCE), "-n", "ops", *flags)
    rendered = _by_key([d for d in yaml.safe_load_all(out) if d])
    wanted = _by_key(expected(values))
    assert sorted(rendered) == sorted(wanted)
    for key, obj in wanted.items():
        assert rendered[key] == obj, key
    if values.job_namespaces:  # the operator's part: nothing cluster-scoped but reads
        operator = {k for k, o in rendered.items() if k[2].startswith("sparkplane-operator")}
        scoped = {k for k in operator if k[0].startswith("Cluster")}
        assert operator and all(k[1] for k in operator - scoped)
        assert {k[2] for k in scoped} == {"sparkplane-operator-cluster"}
        reads = [r for k in scoped if k[0] == "ClusterRole" for r in rendered[k]["rules"]]
        assert reads and all(set(r["verbs"]) <= {"get", "list", "watch"} for r in reads)


def test_lint_and_crds_keep_off(helm: Path) -> None:
    out = run_helm(helm, "lint", str(SOURCE), "--set", "spark.jobNamespaces={a}")
    assert "0 chart(s) failed" in out
    rendered = run_helm(helm, "template", "sp", str(SOURCE), "--set", "crds.keep=false")
    crds = [
        d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "CustomResourceDefinition"
    ]
    assert len(crds) == 6  # + Kubeflow's v1beta2 two and SparkConnect: api-approved only
    assert not any(
        set(c["metadata"].get("annotations") or {}) - {"api-approved.kubernetes.io"} for c in crds
    )
    bare = run_helm(helm, "template", "sp", str(SOURCE), "--set", "crds.install=false")
    assert "CustomResourceDefinition" not in bare
    bad = subprocess.run(
        [str(helm), "template", "sp", str(SOURCE), "--set", "logArchive.store=s3"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0 and 'logArchive.store is "s3": use kube' in bad.stderr


def _old_chart(tmp: Path) -> Path:
    """A copy of the chart as an older release: one printer column less, another gc schedule."""
    old = tmp / "sparkplane-old"
    shutil.copytree(SOURCE, old)
    crd_file = old / "files" / "crds" / f"{SCHEDULED_CRD}.yaml"
    crd = yaml.safe_load(crd_file.read_text())
    for version in crd["spec"]["versions"]:
        version["additionalPrinterColumns"] = [
            c for c in version["additionalPrinterColumns"] if c["name"] != "Last Run Name"
        ]
    crd_file.write_text(yaml.safe_dump(crd, sort_keys=False))
    chart = yaml.safe_load((old / "Chart.yaml").read_text())
    chart["version"] = "0.0.9"
    (old / "Chart.yaml").write_text(yaml.safe_dump(chart, sort_keys=False))
    return old


def _columns(kube: Kube) -> list[str]:
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", SCHEDULED_CRD)
    return [c["name"] for c in crd["spec"]["versions"][0].get("additionalPrinterColumns", [])]


@pytest.fixture
def release_namespace(kube: Kube) -> Iterator[str]:
    name = f"sp-helm-{uuid.uuid4().hex[:8]}"
    yield name
    delete_namespace(kube, name)


def _mint_kubeconfig(kubeconfig: Path, namespace: str, target: Path) -> Path:
    args = ["kubeconfig", "--service-account", "sparkplane-operator", "-n", namespace]
    args += ["--duration", "15m", "-o", str(target), "--kubeconfig", str(kubeconfig)]
    result = CliRunner().invoke(security_cli.app, args)
    assert result.exit_code == 0, result.output
    return target


def test_install_upgrade_uninstall_and_the_installed_rbac_reconciles(
    helm: Path,
    kube: Kube,
    kubeconfig: Path,
    namespace: str,
    release_namespace: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    common = ["-n", release_namespace, "--set", f"spark.jobNamespaces={{{namespace}}}"]
    common += ["--set", "controller.replicas=1", "--force-conflicts"]
    # install an "older" chart; --take-ownership adopts the CRDs other tests applied (with
    # `sparkplane operator install`), --force-conflicts takes their fields over
    old = _old_chart(tmp_path)
    run_helm(
        helm, "install", "sp", str(old), "--create-namespace", "--take-ownership", *common,
        kubeconfig=kubeconfig,
    )  # fmt: skip
    assert "Last Run Name" not in _columns(kube)
    operator = kube.get("apps/v1", "Deployment", "sparkplane-operator", release_namespace)
    args = operator["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--namespace={namespace}" in args and "--all-namespaces" not in args
    assert kube.get("v1", "ServiceAccount", "sparkplane-operator", release_namespace)
    assert kube.get("rbac.authorization.k8s.io/v1", "Role", "sparkplane-operator", namespace)
    assert kube.get("batch/v1", "CronJob", "sparkplane-gc", namespace)
    assert kube.get("apps/v1", "Deployment", "sparkplane-staging", release_namespace)

    # upgrade to this chart: the CRD change arrives server-side, values change in place
    run_helm(
        helm, "upgrade", "sp", str(SOURCE), *common, "--set", "gc.schedule=*/5 * * * *",
        kubeconfig=kubeconfig,
    )  # fmt: skip
    wait_for(lambda: "Last Run Name" in _columns(kube), timeout=30, what="CRD upgraded")
    crd = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", SCHEDULED_CRD)
    managers = {m.get("manager") for m in crd["metadata"].get("managedFields") or []}
    assert any("helm" in str(m) for m in managers), managers
    assert any(
        m.get("operation") == "Apply" and "helm" in str(m.get("manager"))
        for m in crd["metadata"]["managedFields"]
    )
    cron = kube.get("batch/v1", "CronJob", "sparkplane-gc", namespace)
    assert cron["spec"]["schedule"] == "*/5 * * * *"
    history = run_helm(helm, "history", "sp", "-n", release_namespace, kubeconfig=kubeconfig)
    assert "0.0.9" in history and "0.1.0" in history

    # the operator, acting as the chart's ServiceAccount, reconciles an app in its namespace
    minted = _mint_kubeconfig(kubeconfig, release_namespace, tmp_path / "operator.kubeconfig")
    as_operator = Kube(connect(kubeconfig=minted))
    caplog.set_level(logging.DEBUG, logger="sparkplane")
    monkeypatch.setenv("SPARKPLANE_LOG_ARCHIVE", "kube")  # the chart's logArchive.store
    try:
        quick = {"sweep_seconds": 1.0, "sweep_min_age_seconds": 1.0, "archive_prune_seconds": 1.0}
        with running_operator(kube, namespace, operator_kube=as_operator, leader_election=True,
                              lease_namespace=release_namespace, **quick) as op:  # fmt: skip
            app = spark_app("via-chart", sim={"outcome": "Succeeded", "run-for": "2s"})
            kube.create(app, namespace=namespace)
            cluster = yaml.safe_load((CORPUS / "clusters" / "hpa-template.yaml").read_text())
            kube.create(cluster, namespace=namespace)
            template = spark_app("unused", sim={"outcome": "Succeeded"})["spec"]
            kube.create(
                {
                    "apiVersion": "sparkplane.io/v1alpha1",
                    "kind": "ScheduledSparkApplication",
                    "metadata": {"name": "every-2s"},
                    "spec": {"schedule": "@every 2s", "template": template},
                },
                namespace=namespace,
            )
            cr = wait_state(kube, namespace, "via-chart", "ResourceReleased", timeout=60)
            assert cr["status"]["stateTransitionHistory"]
            for obj in [
                kube.create(leftover(kind, cr), namespace) for kind in ("Service", "ConfigMap")
            ]:
                wait_for(
                    lambda o=obj: kube.get_or_none("v1", o["kind"], o["metadata"]["name"],
                                                   namespace) is None,  # type: ignore[misc]
                    timeout=30,
                    what=f"the sweep (chart RBAC) to delete a leftover {obj['kind']}",
                )  # fmt: skip
            name = cluster["metadata"]["name"]
            wait_for(
                lambda: kube.get_or_none("autoscaling/v2", "HorizontalPodAutoscaler",
                                         f"{name}-worker-hpa", namespace),
                timeout=30,
                what="the cluster's HPA, created with the chart's RBAC",
            )  # fmt: skip
            wait_for(
                lambda: kube.list("spark.apache.org/v1", "SparkApplication", namespace,
                                  label_selector="sparkplane.io/scheduled-by=every-2s"),
                timeout=30,
                what="a scheduled run, created with the chart's RBAC",
            )  # fmt: skip
            op.events.flush()
            assert op.events.posted and not op.events.failed
    finally:
        as_operator.close()
    assert "sweep failed" not in caplog.text, caplog.text[-3000:]
    assert "forbidden" not in caplog.text.lower(), caplog.text[-3000:]

    # uninstall: everything goes but the CRDs (kept, with every custom resource)
    run_helm(helm, "uninstall", "sp", "-n", release_namespace, kubeconfig=kubeconfig)
    wait_for(
        lambda: (
            kube.get_or_none("apps/v1", "Deployment", "sparkplane-operator", release_namespace)
            is None
        ),
        timeout=60,
        what="operator Deployment removed",
    )
    assert kube.get_or_none("rbac.authorization.k8s.io/v1", "Role", "sparkplane-operator",
                            namespace) is None  # fmt: skip
    assert kube.get_or_none("batch/v1", "CronJob", "sparkplane-gc", namespace) is None
    assert kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", SCHEDULED_CRD)
    assert kube.get_or_none("spark.apache.org/v1", "SparkApplication", "via-chart", namespace)
