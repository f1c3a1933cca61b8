"""The acceptance corpus: every v1 field we honour, as resources with the states they must reach.

``tests/integration/corpus/{apps,clusters}/*.yaml`` are SparkApplications and SparkClusters
written from Apache's API reference (the cluster files follow the shapes of Apache's published
examples). Each carries what it must do on the dev cluster in ``corpus.sparkplane.io/*``
annotations: ``expect`` (states in order, ending at the current one), and optionally
``expect-properties``, ``expect-objects``, ``expect-attempt``, ``expect-deleted``,
``expect-workers`` (what the workers' HorizontalPodAutoscaler scales to) and
``bind-for-scheduler`` (the test binds pods meant for a scheduler the dev cluster lacks).
All of a kind run at once in one namespace with one operator (and the driver simulator).
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from sparkplane.render.properties import load as load_properties
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import API, history, running_operator

pytestmark = pytest.mark.integration
CORPUS = Path(__file__).parent / "corpus"
NOTE = "corpus.sparkplane.io/"


def corpus(kind: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((CORPUS / kind).glob("*.yaml"))]


def note(doc: dict[str, Any], key: str) -> str | None:
    value = (doc["metadata"].get("annotations") or {}).get(NOTE + key)
    return None if value is None else str(value)


def reached(kube: Kube, doc: dict[str, Any], namespace: str) -> dict[str, Any] | None:
    """The CR once its history follows ``expect`` and ends at its last state."""
    expected = str(note(doc, "expect")).split(">")
    cr = kube.get_or_none(API, doc["kind"], doc["metadata"]["name"], namespace)
    states = history(cr or {})
    remaining = iter(states)
    ok = bool(states) and states[-1] == expected[-1] and all(s in remaining for s in expected)
    return cr if ok else None


def wait_all(kube: Kube, docs: list[dict[str, Any]], namespace: str) -> dict[str, dict[str, Any]]:
    """Wait for every resource to reach its expectation; fail naming each one that did not."""
    found: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(found) < len(docs):
        for doc in docs:
            if doc["metadata"]["name"] not in found:
                cr = reached(kube, doc, namespace)
                if cr is not None:
                    found[doc["metadata"]["name"]] = cr
        time.sleep(0.3)
    missing = {
        d["metadata"]["name"]: (
            note(d, "expect"),
            history(kube.get_or_none(API, d["kind"], d["metadata"]["name"], namespace) or {}),
        )
        for d in docs
        if d["metadata"]["name"] not in found
    }
    assert not missing, f"expected history (got): {missing}"
    return found


@pytest.fixture
def crds(kube: Kube) -> None:
    install_crds(kube)


_APP_FIELDS = """
        mainClass jars pyFiles sparkRFiles files sparkConf driverArgs proxyUser deploymentMode
        runtimeVersions.sparkVersion runtimeVersions.scalaVersion runtimeVersions.jdkVersion
        driverSpec.podTemplateSpec executorSpec.podTemplateSpec configMapSpecs
        driverServiceIngressList driverHttpRouteList driverGrpcRouteList
        applicationTolerations.restartConfig.restartPolicy
        applicationTolerations.restartConfig.maxRestartAttempts
        applicationTolerations.restartConfig.restartBackoffMillis
        applicationTolerations.restartConfig.restartCounterResetMillis
        applicationTolerations.restartConfig.maxRestartOnFailure
        applicationTolerations.restartConfig.restartBackoffMillisForFailure
        applicationTolerations.restartConfig.maxRestartOnSchedulingFailure
        applicationTolerations.restartConfig.restartBackoffMillisForSchedulingFailure
        applicationTolerations.applicationTimeoutConfig.driverStartTimeoutMillis
        applicationTolerations.applicationTimeoutConfig.driverReadyTimeoutMillis
        applicationTolerations.applicationTimeoutConfig.executorStartTimeoutMillis
        applicationTolerations.applicationTimeoutConfig.forceTerminationGracePeriodMillis
        applicationTolerations.applicationTimeoutConfig.terminationRequeuePeriodMillis
        applicationTolerations.instanceConfig.initExecutors
        applicationTolerations.instanceConfig.minExecutors
        applicationTolerations.instanceConfig.maxExecutors
        applicationTolerations.resourceRetainPolicy
        applicationTolerations.resourceRetainDurationMillis
        applicationTolerations.ttlAfterStopMillis
"""
_CLUSTER_FIELDS = """
        sparkConf runtimeVersions.sparkVersion runtimeVersions.scalaVersion
        clusterTolerations.instanceConfig.initWorkers clusterTolerations.instanceConfig.minWorkers
        clusterTolerations.instanceConfig.maxWorkers
        masterSpec.statefulSetSpec masterSpec.statefulSetMetadata masterSpec.serviceSpec
        masterSpec.serviceMetadata workerSpec.statefulSetSpec workerSpec.statefulSetMetadata
        workerSpec.serviceSpec workerSpec.serviceMetadata workerSpec.horizontalPodAutoscalerSpec
"""
# Apache's v1 API (reference §9.2, §9.3, §9.7)
APACHE_FIELDS = {"SparkApplication": _APP_FIELDS.split(), "SparkCluster": _CLUSTER_FIELDS.split()}


def _paths(value: Any, prefix: str = "") -> set[str]:
    out = {prefix} if prefix else set()
    if isinstance(value, dict):
        for key, sub in value.items():
            out |= _paths(sub, f"{prefix}.{key}" if prefix else key)
    return out


def test_corpus_covers_every_apache_field() -> None:
    """Each v1 spec field of Apache's API appears in at least one corpus resource."""
    seen: dict[str, set[str]] = {"SparkApplication": set(), "SparkCluster": set()}
    for doc in corpus("apps") + corpus("clusters"):
        seen[doc["kind"]] |= _paths(doc["spec"])
    for kind, fields in APACHE_FIELDS.items():
        assert set(fields) - seen[kind] == set(), kind


@pytest.fixture
def binder(kube: Kube, namespace: str) -> Iterator[None]:
    """Plays the schedulers named by ``bind-for-scheduler``: binds their pods to a node."""
    wanted = {note(d, "bind-for-scheduler") for d in corpus("clusters")} - {None}
    node = kube.list("v1", "Node")[0]["metadata"]["name"]
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.5):
            for pod in kube.list("v1", "Pod", namespace):
                spec = pod["spec"]
                if spec.get("schedulerName") in wanted and not spec.get("nodeName"):
                    binding = {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": pod["metadata"]["name"]},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                    }
                    kube.create(binding, namespace=namespace)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join()


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_subset(v, got.get(k)) for k, v in want.items())
    return bool(want == got)


def _check_cluster(kube: Kube, doc: dict[str, Any], namespace: str) -> None:
    name, spec = doc["metadata"]["name"], doc["spec"]
    conf = spec.get("sparkConf") or {}
    bounds = (spec.get("clusterTolerations") or {}).get("instanceConfig") or {}
    hpa = kube.get_or_none(
        "autoscaling/v2", "HorizontalPodAutoscaler", f"{name}-worker-hpa", namespace
    )
    if "SchedulingFailure" in str(note(doc, "expect")):
        assert kube.get_or_none("apps/v1", "StatefulSet", f"{name}-master", namespace) is None
        return
    for role in ("master", "worker"):
        sts = kube.get("apps/v1", "StatefulSet", f"{name}-{role}", namespace)
        pod = sts["spec"]["template"]["spec"]
        assert pod["schedulerName"] == conf.get(
            "spark.kubernetes.scheduler.name", "default-scheduler"
        )
        containers = {c["name"]: c for c in pod["containers"]}
        image = conf["spark.kubernetes.container.image"].replace(
            "{{SPARK_VERSION}}", spec["runtimeVersions"]["sparkVersion"]
        )
        assert containers[role]["image"] == image
        env = {e["name"]: e.get("value") for e in containers[role]["env"]}
        opts = dict(
            a.removeprefix("-D").split("=", 1)
            for a in shlex.split(env[f"SPARK_{role.upper()}_OPTS"])
        )
        assert {k: opts[k] for k in conf if k != "spark.kubernetes.namespace"} == {
            k: str(v).replace("{{SPARK_VERSION}}", spec["runtimeVersions"]["sparkVersion"])
            for k, v in conf.items()
        }
        part = spec.get(f"{role}Spec") or {}
        template = (part.get("statefulSetSpec") or {}).get("template") or {}
        for wanted in (template.get("spec") or {}).get("containers") or []:
            assert _subset(wanted, containers[wanted["name"]]), (name, role, wanted["name"])
        assert _subset((template.get("metadata") or {}).get("annotations") or {},
                       sts["spec"]["template"]["metadata"].get("annotations") or {})  # fmt: skip
        assert _subset(part.get("statefulSetMetadata") or {}, sts["metadata"])
        svc = kube.get("v1", "Service", f"{name}-{role}-svc", namespace)
        assert _subset(part.get("serviceMetadata") or {}, svc["metadata"])
        assert _subset(part.get("serviceSpec") or {}, svc["spec"])
    low, high = bounds.get("minWorkers", 0), bounds.get("maxWorkers", 0)
    if low < high:
        assert hpa is not None
        assert hpa["spec"]["scaleTargetRef"]["name"] == f"{name}-worker"
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (low, high)
        user = spec["workerSpec"].get("horizontalPodAutoscalerSpec") or {}
        assert _subset({k: user[k] for k in ("metrics", "behavior") if k in user}, hpa["spec"])
    else:
        assert hpa is None


def test_cluster_corpus(kube: Kube, namespace: str, crds: None, binder: None) -> None:
    docs = corpus("clusters")
    # Apache's "cluster-with-template" shape asks for system-cluster-critical, which the pod
    # policy refuses by default (docs/security.md): this corpus's admin opts the check out
    with running_operator(kube, namespace, simulate=False, pod_policy_allow=("system-priority",)):
        for doc in docs:
            kube.create(doc, namespace=namespace)
        wait_all(kube, docs, namespace)
        for doc in docs:
            _check_cluster(kube, doc, namespace)
        for doc in docs:
            workers = note(doc, "expect-workers")
            if workers is None:
                continue
            sts_name = f"{doc['metadata']['name']}-worker"
            wait_for(
                lambda n=sts_name, w=int(workers): (
                    kube.get("apps/v1", "StatefulSet", n, namespace)["spec"]["replicas"] == w
                ),
                timeout=120,
                what=f"the HPA scales {sts_name} to {workers}",
            )
        # Deleting a cluster removes what it owns (the garbage collector follows the owner).
        kube.delete(API, "SparkCluster", "autoscaled", namespace)
        for kind, api, obj in (
            ("StatefulSet", "apps/v1", "autoscaled-worker"),
            ("HorizontalPodAutoscaler", "autoscaling/v2", "autoscaled-worker-hpa"),
            ("PodDisruptionBudget", "policy/v1", "autoscaled-worker-pdb"),
        ):
            wait_for(
                lambda k=kind, a=api, o=obj: kube.get_or_none(a, k, o, namespace) is None,
                timeout=60,
                what=f"{kind} {obj} garbage-collected",
            )


def _check_app(kube: Kube, doc: dict[str, Any], cr: dict[str, Any], namespace: str) -> None:
    name = doc["metadata"]["name"]
    props_note = note(doc, "expect-properties")
    if props_note:
        cm = kube.get("v1", "ConfigMap", f"{name}-0-spark-drv-conf-map", namespace)
        props = load_properties(cm["data"]["spark.properties"])
        for pair in props_note.format(namespace=namespace).split(";"):
            key, value = pair.split("=", 1)
            assert props.get(key) == value, (name, key, props.get(key))
    for ref in (note(doc, "expect-objects") or "").split(";"):
        if ref:
            kind, obj = ref.split("/")
            api = "networking.k8s.io/v1" if kind == "Ingress" else "v1"
            assert kube.get_or_none(api, kind, obj, namespace) is not None, ref
    container = note(doc, "expect-driver-container")
    if container:
        pod = kube.get("v1", "Pod", f"{name}-0-driver", namespace)
        names = [c["name"] for c in pod["spec"]["containers"]]
        assert container in names and len(names) == 2
        spark = next(c for c in pod["spec"]["containers"] if c["name"] == container)
        assert spark["image"] and spark["terminationMessagePolicy"] == "FallbackToLogsOnError"
        assert {"name": "ACCEPTANCE", "value": "from-template"} in spark["env"]
    attempt = note(doc, "expect-attempt")
    if attempt:
        assert cr["status"]["currentAttemptSummary"]["attemptInfo"]["id"] == int(attempt)
    if note(doc, "expect-deleted"):
        wait_for(
            lambda: kube.get_or_none(API, "SparkApplication", name, namespace) is None,
            timeout=30,
            what=f"SparkApplication {name} deleted after ttlAfterStopMillis",
        )


def test_application_corpus(kube: Kube, namespace: str, crds: None) -> None:
    docs = corpus("apps")
    with running_operator(kube, namespace):
        for doc in docs:
            kube.create(doc, namespace=namespace)
        found = wait_all(kube, docs, namespace)
        for doc in docs:
            _check_app(kube, doc, found[doc["metadata"]["name"]], namespace)
