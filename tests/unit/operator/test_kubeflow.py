"""Kubeflow's v1beta2 SparkApplication: the spec mapping, the refusals and the status flow.

The flow runs the real :class:`KubeflowAdapter` over the real :class:`AppAdapter` (its pod
index fed the pods an informer would deliver) with a stepping clock; no API server is needed
until a driver goes missing, which these tests never let happen.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.operator.core.decision import CreateResources, DeleteCustomResource
from sparkplane.operator.core.kubeflow_status import INTERNAL, kubeflow_status
from sparkplane.operator.core.naming import attempt_driver_pod_name, kubeflow_driver_pod_name
from sparkplane.operator.core.settings import ReconcileSettings
from sparkplane.operator.deploy.crd import kubeflow_application_crd
from sparkplane.operator.kinds.adapter import queue_kind
from sparkplane.operator.kinds.app_adapter import AppAdapter
from sparkplane.operator.kinds.kubeflow_io import KUBEFLOW_APP, KubeflowAdapter
from sparkplane.spec.kubeflow import APP_NAME_LABEL, to_apache
from sparkplane.vocab import KUBEFLOW_API_VERSION

from .opfixtures import UID, at, driver, executor


def kf_app(**spec: Any) -> dict[str, Any]:
    """Kubeflow's examples/spark-pi-python.yaml (image and sizes of the dev cluster)."""
    body: dict[str, Any] = {
        "type": "Python",
        "mode": "cluster",
        "image": "docker.io/sparkplane/spark:4.0.1",
        "imagePullPolicy": "IfNotPresent",
        "mainApplicationFile": "local:///opt/spark/examples/src/main/python/pi.py",
        "arguments": ["10"],
        "sparkVersion": "4.0.1",
        "volumes": [{"name": "config-vol", "configMap": {"name": "test-configmap"}}],
        "driver": {
            "cores": 1,
            "coreLimit": "1200m",
            "memory": "512m",
            "serviceAccount": "spark-operator-spark",
            "volumeMounts": [{"name": "config-vol", "mountPath": "/opt/spark/config"}],
            "env": [{"name": "FOO", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "securityContext": {"runAsNonRoot": True},
            "sidecars": [{"name": "side", "image": "busybox"}],
        },
        "executor": {"cores": 1, "instances": 1, "memory": "512m"},
        **spec,
    }
    return {
        "apiVersion": KUBEFLOW_API_VERSION,
        "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": "ns1", "uid": UID, "resourceVersion": "1"},
        "spec": body,
    }


def test_spec_maps_onto_apaches_fields_and_the_webhooks_pod_fields_onto_templates() -> None:
    spec = to_apache(kf_app(hadoopConf={"fs.s3a.impl": "x"}, timeToLiveSeconds=60))["spec"]
    assert spec["pyFiles"] == "local:///opt/spark/examples/src/main/python/pi.py"
    assert spec["driverArgs"] == ["10"]
    assert spec["runtimeVersions"] == {"sparkVersion": "4.0.1"}
    assert spec["sparkConf"]["spark.hadoop.fs.s3a.impl"] == "x"
    assert spec["driver"]["coreLimit"] == "1200m" and spec["executor"]["instances"] == 1
    assert spec["driver"]["labels"][APP_NAME_LABEL] == "pi"
    pod = spec["driverSpec"]["podTemplateSpec"]["spec"]
    main, side = pod["containers"]
    assert main["volumeMounts"] == [{"name": "config-vol", "mountPath": "/opt/spark/config"}]
    assert main["env"][0]["valueFrom"] and main["securityContext"] == {"runAsNonRoot": True}
    assert side["name"] == "side"
    assert pod["volumes"] == [{"name": "config-vol", "configMap": {"name": "test-configmap"}}]
    tolerations = spec["applicationTolerations"]
    assert tolerations["ttlAfterStopMillis"] == 60_000
    assert tolerations["resourceRetainPolicy"] == "Always"  # Kubeflow keeps its driver pod


def test_restart_policy_and_dynamic_allocation() -> None:
    policy = {
        "type": "OnFailure",
        "onFailureRetries": 3,
        "onFailureRetryInterval": 10,
        "onSubmissionFailureRetries": 1,
    }
    dyn = {"enabled": True, "minExecutors": 1, "maxExecutors": 4}
    spec = to_apache(kf_app(restartPolicy=policy, dynamicAllocation=dyn))["spec"]
    restart = spec["applicationTolerations"]["restartConfig"]
    assert restart["restartPolicy"] == "OnFailure"
    assert restart["maxRestartAttempts"] == 4 and restart["maxRestartOnSchedulingFailure"] == 1
    assert restart["maxRestartOnFailure"] is None  # Apache's counts failed submissions too
    assert restart["restartBackoffMillisForFailure"] == 10_000
    assert restart["restartBackoffMillisForSchedulingFailure"] == 5_000  # Kubeflow's default
    conf = spec["sparkConf"]
    assert conf["spark.dynamicAllocation.enabled"] == "true"
    assert conf["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert conf["spark.dynamicAllocation.maxExecutors"] == "4"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("monitoring", {"exposeDriverMetrics": True}),
        ("batchScheduler", "volcano"),
        ("mode", "client"),
    ],
)
def test_unsupported_fields_are_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as err:
        to_apache(kf_app(**{field: value}))
    assert f"spec.{field}: not supported by sparkplane's operator" in str(err.value)


def test_airflows_spec_labels_reach_both_roles_pods() -> None:
    """Airflow's SparkKubernetesOperator writes ``spec.labels`` (not Kubeflow's field; its
    structural CRD prunes it): they label both roles' pods, a role's own winning."""
    app = to_apache(
        kf_app(labels={"dag_id": "d", "task_id": "t"}, executor={"labels": {"task_id": "x"}})
    )
    assert app["spec"]["driver"]["labels"]["dag_id"] == "d"
    assert app["spec"]["executor"]["labels"]["task_id"] == "x"


def test_an_unknown_field_is_named() -> None:
    with pytest.raises(ValidationError) as err:
        to_apache(kf_app(sparkConff={}))
    assert "spec.sparkConff" in str(err.value)


def test_crd_has_kubeflows_printer_columns_and_keeps_unknown_fields() -> None:
    crd = kubeflow_application_crd()
    version = crd["spec"]["versions"][0]
    assert crd["metadata"]["name"] == "sparkapplications.sparkoperator.k8s.io"
    assert version["name"] == "v1beta2" and version["subresources"] == {"status": {}}
    names = [c["name"] for c in version["additionalPrinterColumns"]]
    assert names == ["Status", "Attempts", "Start", "Finish", "Age"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["x-kubernetes-preserve-unknown-fields"] is True
    assert "monitoring" in spec["properties"]  # stored, so it can be refused by name


class _Clock:
    def __init__(self) -> None:
        self.now = at(0)

    def __call__(self) -> datetime:
        return self.now


def _adapter() -> tuple[KubeflowAdapter, AppAdapter, _Clock]:
    clock = _Clock()
    apps = AppAdapter(None, ReconcileSettings(), clock)  # type: ignore[arg-type]
    return KubeflowAdapter(apps), apps, clock


def _kf_pod(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"].setdefault("uid", pod["metadata"]["name"])
    for ref in pod["metadata"]["ownerReferences"]:
        if ref["kind"] == "SparkApplication":
            ref["apiVersion"] = KUBEFLOW_API_VERSION
    return pod


def test_state_flow_submitted_running_completed() -> None:
    adapter, apps, clock = _adapter()
    cr = kf_app()
    first = adapter.decide(cr)
    assert first.status is not None
    assert first.status["applicationState"] == {"state": "SUBMITTED"}
    assert first.status["submissionAttempts"] == 1
    assert first.status["driverInfo"]["podName"] == "pi-driver"  # Kubeflow's name
    create = next(a for a in first.actions if isinstance(a, CreateResources))
    owners = [r for o in create.objects for r in o["metadata"]["ownerReferences"]]
    assert {r["apiVersion"] for r in owners if r["uid"] == UID} == {KUBEFLOW_API_VERSION}
    cr["status"] = first.status

    clock.now = at(5)
    for pod in (_kf_pod(driver()), _kf_pod(executor(1))):
        keys = list(apps._on_pod("ADDED", pod))
    assert keys == [(KUBEFLOW_APP, "ns1", "pi")]  # executor events wake the v1beta2 resource
    running = adapter.decide(cr)
    assert running.status is not None
    assert running.status["applicationState"]["state"] == "RUNNING"
    assert running.status["executorState"] == {"pi-x-exec-1": "RUNNING"}
    assert running.status["executionAttempts"] == 1
    cr["status"] = running.status

    clock.now = at(30)
    list(apps._on_pod("DELETED", _kf_pod(executor(1))))
    list(apps._on_pod("MODIFIED", _kf_pod(driver(phase="Succeeded"))))
    done = adapter.decide(cr)
    assert done.status is not None
    assert done.status["applicationState"] == {"state": "COMPLETED"}
    assert done.status["terminationTime"] and done.status["sparkApplicationId"] == "pi-0"
    assert done.status["executorState"] == {"pi-x-exec-1": "RUNNING"}  # last seen, kept
    assert not done.actions  # the driver pod stays, as Kubeflow's does
    assert INTERNAL in done.status


def test_ttl_deletes_the_v1beta2_resource() -> None:
    adapter, apps, clock = _adapter()
    cr = kf_app(timeToLiveSeconds=10)
    cr["status"] = adapter.decide(cr).status
    list(apps._on_pod("ADDED", _kf_pod(driver(phase="Succeeded"))))
    clock.now = at(5)
    cr["status"] = adapter.decide(cr).status
    clock.now = at(100)
    actions = adapter.decide(cr).actions
    delete = next(a for a in actions if isinstance(a, DeleteCustomResource))
    assert delete.api_version == KUBEFLOW_API_VERSION and delete.name == "pi"


def test_refused_spec_ends_submission_failed_and_creates_nothing() -> None:
    adapter, _, _ = _adapter()
    cr = kf_app(monitoring={"exposeDriverMetrics": True})
    decision = adapter.decide(cr)
    assert decision.status is not None and not decision.actions
    state = decision.status["applicationState"]
    assert state["state"] == "SUBMISSION_FAILED" and "spec.monitoring" in state["errorMessage"]
    assert decision.status["driverInfo"] == {}  # never omitted (the Kubeflow SDK requires it)
    cr["status"] = decision.status
    assert adapter.decide(cr).status is None  # written once


@pytest.mark.parametrize(
    ("spec", "first", "retry"),
    [
        ({}, "pi-driver", "pi-2-driver"),
        ({"sparkConf": {"spark.kubernetes.driver.pod.name": "conf-driver"}}, "conf-driver", None),
        (
            {"driver": {"podName": "mine"}, "sparkConf": {"spark.kubernetes.driver.pod.name": "x"}},
            "mine",
            "mine-2-driver",
        ),
    ],
)
def test_driver_pod_names_are_kubeflows_and_a_retry_gets_its_own(
    spec: dict[str, Any], first: str, retry: str | None
) -> None:
    """GetDriverPodName (kubeflow/spark-operator pkg/util/sparkapplication.go): podName, else
    the conf, else ``<name>-driver``; retries are renamed, never waiting on the old pod."""
    cr = {"metadata": {"name": "pi"}, "spec": spec}
    assert kubeflow_driver_pod_name(cr) == first
    assert attempt_driver_pod_name(first, 0) == first
    assert attempt_driver_pod_name(first, 2) == (retry or "conf-2-driver")


def _pod_names(actions: Any) -> list[str]:
    return [
        str(o["metadata"]["name"])
        for a in actions
        if isinstance(a, CreateResources)
        for o in a.objects
        if o["kind"] == "Pod"
    ]


def test_a_retried_driver_never_takes_the_failed_ones_name() -> None:
    """OnFailure: attempt 0's driver is ``pi-driver`` (what Airflow's SparkKubernetesOperator
    waits for), attempt 1's ``pi-1-driver``, so it never collides with a terminating one."""
    adapter, apps, clock = _adapter()
    policy = {"type": "OnFailure", "onFailureRetries": 1, "onFailureRetryInterval": 1}
    cr = kf_app(restartPolicy=policy)
    created: list[str] = []
    podnames: list[str] = []
    for step in range(12):
        if step == 1:
            list(apps._on_pod("ADDED", _kf_pod(driver(phase="Failed"))))
        clock.now = at(5 * step)
        decided = adapter.decide(cr)
        created += _pod_names(decided.actions)
        if decided.status is not None:
            cr["status"] = decided.status
            podnames.append(decided.status["driverInfo"]["podName"])
        if len(created) == 2:
            break  # attempt 1 requested (its pod never arrives here)
    assert created == ["pi-driver", "pi-1-driver"], created
    assert podnames[0] == "pi-driver" and podnames[-1] == "pi-1-driver", podnames
    assert cr["status"]["submissionAttempts"] == 2


def test_a_driver_that_fails_ends_failed_with_its_message() -> None:
    adapter, apps, clock = _adapter()
    cr = kf_app()
    cr["status"] = adapter.decide(cr).status
    list(apps._on_pod("ADDED", _kf_pod(driver(phase="Failed"))))
    clock.now = at(5)
    status = adapter.decide(cr).status
    assert status is not None
    assert status["applicationState"]["state"] == "FAILED"
    assert status["applicationState"]["errorMessage"]


def test_no_internal_status_keeps_what_is_there() -> None:
    assert kubeflow_status({"status": {"x": 1}}, None) == {"x": 1}
    assert queue_kind("spark.apache.org/v1", "SparkApplication") == "SparkApplication"


def test_failed_submissions_retry_then_end_failed_as_kubeflow_says() -> None:
    """Kubeflow's fail-submission e2e: SUBMISSION_FAILED between attempts, FAILED once the
    ``onSubmissionFailureRetries`` are out, ``submissionAttempts`` = retries + 1."""
    adapter, _, clock = _adapter()
    policy = {"type": "OnFailure", "onSubmissionFailureRetries": 2}
    cr = kf_app(restartPolicy=policy)
    refused = 'pods "pi-0-driver" is forbidden: serviceaccount "non-existent" not found'
    seen = []
    for step in range(12):
        clock.now = at(60 * step)
        status = adapter.decide(cr, create_error=refused).status
        if status is None:
            break
        cr["status"] = status
        seen.append(status["applicationState"]["state"])
    final = cr["status"]
    assert final["applicationState"]["state"] == "FAILED", seen
    assert final["applicationState"]["errorMessage"].startswith("failed to submit the driver")
    assert "non-existent" in final["applicationState"]["errorMessage"]
    assert final["submissionAttempts"] == 3 and final["executionAttempts"] == 0
    assert set(seen[:-1]) == {"SUBMISSION_FAILED"}, seen


@pytest.mark.parametrize("example", ["spark-pi.yaml", "python-pi.yaml"])
def test_what_mode_kubeflow_writes_is_served(example: str) -> None:
    """``submit --mode kubeflow`` writes a v1beta2 resource sparkplane's operator accepts."""
    from pathlib import Path

    import yaml

    from sparkplane.render.kubeflow_cr import render_kubeflow_cr
    from sparkplane.spec import load_manifest

    path = Path(__file__).parents[3] / "examples" / example
    cr = render_kubeflow_cr(load_manifest(yaml.safe_load(path.read_text())))
    cr["metadata"] |= {"namespace": "ns1", "uid": UID}
    assert to_apache(cr)["spec"]["runtimeVersions"] == {"sparkVersion": "4.0.1"}


def test_the_pod_policy_holds_for_kubeflows_pod_fields() -> None:
    """What the webhook-free rendering puts in the pods goes through the same pod policy as an
    Apache app's: a v1beta2 author gains nothing (here: the node's network and privilege)."""
    from sparkplane.security import podpolicy

    adapter, _, _ = _adapter()
    driver_spec = {
        **kf_app()["spec"]["driver"],
        "hostNetwork": True,
        "securityContext": {"privileged": True},
    }
    create = next(
        a
        for a in adapter.decide(kf_app(driver=driver_spec)).actions
        if isinstance(a, CreateResources)
    )
    found = " ".join(str(p) for p in podpolicy.check_objects(create.objects))
    assert "hostNetwork" in found and "privileged" in found, found


class _SweepHost:
    """What :func:`sweep.sweep` reads and deletes through, over in-memory objects."""

    name = "spark-kubernetes-operator"
    namespaces = ("ns1",)

    def __init__(self, crs: dict[Any, Any], pods: list[dict[str, Any]]) -> None:
        self.crs, self.pods, self.deleted = crs, pods, []
        self.reader = self.kube = self

    def list(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    def delete(self, api_version: str, kind: str, name: str, *args: Any, **kw: Any) -> None:
        self.deleted.append(name)

    def clock(self) -> datetime:
        return at(1000)

    def current(self, key: Any) -> Any:
        return self.crs.get(key)

    def driver_pods(self) -> list[dict[str, Any]]:
        return self.pods

    def deleting(self, uid: str) -> None:
        return None


def test_the_sweeper_takes_a_v1beta2_apps_leftovers_by_its_internal_state() -> None:
    from sparkplane.operator.runtime import sweep

    adapter, _, _ = _adapter()
    cr = kf_app()
    cr["status"] = adapter.decide(cr).status  # attempt 0 requested
    old = _kf_pod(driver(attempt=7))  # an attempt that is not the current one
    old["metadata"]["ownerReferences"][0]["controller"] = True
    old["metadata"]["creationTimestamp"] = "2025-03-01T10:00:00Z"
    current = _kf_pod(driver(attempt=0))
    current["metadata"]["ownerReferences"][0]["controller"] = True
    current["metadata"]["creationTimestamp"] = "2025-03-01T10:00:00Z"
    host = _SweepHost({(KUBEFLOW_APP, "ns1", "pi"): cr}, [old, current])
    assert sweep.sweep(host, 10) == 1  # type: ignore[arg-type]
    assert host.deleted == ["pi-7-driver"]
