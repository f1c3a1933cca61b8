"""Parity with the real spark-submit of every supported Spark version on the real control plane.

For each Spark version (``sparkplane.version.SPARK_VERSIONS``: 4.0.1, the venv's pyspark, and
4.1.4, 4.2.1 and 4.3.0, the distributions the dev cluster's image builder installs) and each
argument set (all of them for every version: one version's set takes ~2 min warm), the real
``spark-submit --master k8s://<server> --deploy-mode cluster`` of that version (Java 17), with the
argv's image tagged with that version, submits into one namespace and sparkplane submits the
same argv (``from_submit_args`` + ``submit_native``) into another. Everything each left in its
namespace is read back from the API server, ids are normalised, and the objects must be equal
apart from the deviations documented in ``docs/parity.md``. KWOK simulates the pods: objects
are compared, not execution. If spark-submit cannot run, the tests fail.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from sparkplane.kube import Kube
from sparkplane.usecases.create import SubmitOptions, submit_native
from sparkplane.version import SPARK_VERSION, SPARK_VERSIONS
from tests.integration import parity
from tests.integration.helpers import delete_namespace, wait_for

DOCS = Path(__file__).parents[2] / "docs" / "parity.md"
IMAGE = f"--conf=spark.kubernetes.container.image=apache/spark:{SPARK_VERSION}"


def versioned(version: str) -> str:
    return f"--conf=spark.kubernetes.container.image=apache/spark:{version}"


SERVICE_ACCOUNT = "spark-sa"
PRIORITY = f"sp-parity-{uuid.uuid4().hex[:6]}"
LONG_NAME = "secret-app-with-a-rather-long-name-that-goes-past-sixty-three-chars"

DRIVER_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "labels": {"team": "data"},
        "annotations": {"sim.sparkplane.io/run-for": "5s"},
    },
    "spec": {
        "priorityClassName": PRIORITY,
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
        ],
        "containers": [
            {"name": "main", "env": [{"name": "FROM_TEMPLATE", "value": "1"}]},
            {"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]},
        ],
    },
}
EXECUTOR_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"labels": {"team": "data"}},
    "spec": {
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
        ]
    },
}


def conf(*pairs: str) -> list[str]:
    return [arg for pair in pairs for arg in ("--conf", pair)]


CASES: dict[str, list[str]] = {
    "spark-pi": [
        "--name", "spark-pi", "--class", "org.apache.spark.examples.SparkPi", IMAGE,
        "--driver-memory", "2g", "--num-executors", "2",
        "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar", "1000",
    ],
    "python-pi": [
        "--name", "python-pi", IMAGE,
        "--py-files", "local:///opt/a.py,local:///opt/b.zip", "--files", "local:///opt/f.txt",
        "local:///opt/spark/examples/src/main/python/pi.py", "5",
    ],
    "many-conf": [
        "--name", "My App_1", "--class", "org.example.Main",
        "--driver-memory", "3g", "--driver-cores", "2", "--executor-memory", "3g",
        "--executor-cores", "2", "--num-executors", "3",
        "--jars", "local:///opt/x.jar,local:///opt/y.jar", "--proxy-user", "bob", IMAGE,
        *conf(
            "spark.kubernetes.driver.label.team=data",
            "spark.kubernetes.driver.annotation.owner=me-{{APP_ID}}",
            "spark.kubernetes.driverEnv.ZED=z",
            "spark.kubernetes.driverEnv.ALPHA=a",
            "spark.kubernetes.driver.limit.cores=3",
            "spark.kubernetes.driver.request.cores=500m",
            "spark.driver.memoryOverheadFactor=0.2",
            "spark.kubernetes.container.image.pullPolicy=Always",
            "spark.kubernetes.container.image.pullSecrets=reg1,reg2",
            "spark.kubernetes.driver.service.label.svc=yes",
            "spark.kubernetes.driver.service.annotation.note=n",
            "spark.driver.extraJavaOptions=-Dx=y -Da=b",
            "spark.kubernetes.driver.volumes.emptyDir.scratch.mount.path=/scratch",
            "spark.kubernetes.driver.volumes.emptyDir.scratch.options.sizeLimit=1Gi",
            "spark.kubernetes.driver.volumes.hostPath.hp.mount.path=/hp",
            "spark.kubernetes.driver.volumes.hostPath.hp.mount.readOnly=true",
            "spark.kubernetes.driver.volumes.hostPath.hp.options.path=/tmp",
            "spark.kubernetes.driver.volumes.persistentVolumeClaim.data.mount.path=/data",
            "spark.kubernetes.driver.volumes.persistentVolumeClaim.data.mount.subPath=sub",
            "spark.kubernetes.driver.volumes.persistentVolumeClaim.data.options.claimName=OnDemand",
            "spark.kubernetes.driver.volumes.persistentVolumeClaim.data.options.storageClass=std",
            "spark.kubernetes.driver.volumes.persistentVolumeClaim.data.options.sizeLimit=5Gi",
            "spark.eventLog.enabled=false",
            "spark.sql.shuffle.partitions=7",
        ),
        "local:///opt/app.jar", "arg1", "arg 2",
    ],
    "secrets-node-selector": [
        "--name", "secrets-app", "--class", "org.example.Main", IMAGE,
        *conf(
            f"spark.kubernetes.authenticate.driver.serviceAccountName={SERVICE_ACCOUNT}",
            "spark.kubernetes.driver.secrets.mysecret=/etc/secret",
            "spark.kubernetes.driver.secrets.other=/etc/other",
            "spark.kubernetes.driver.secretKeyRef.DB_PASS=db:password",
            "spark.kubernetes.driver.secretKeyRef.API_TOKEN=api:token",
            "spark.kubernetes.executor.secrets.mysecret=/etc/secret",
            "spark.kubernetes.node.selector.pool=spark",
            "spark.kubernetes.driver.node.selector.tier=driver",
        ),
        "local:///opt/app.jar",
    ],
    "long-name": ["--name", LONG_NAME, "--class", "org.example.Main", IMAGE, "local:///opt/app.jar"],
    "pod-templates": [
        "--name", "tmpl-app", "--class", "org.example.Main", IMAGE,
        *conf("spark.kubernetes.local.dirs.tmpfs=true"),
        "<templates>",
        "local:///opt/app.jar",
    ],
    # spark-submit argument shapes (issue 11): --verbose, --properties-file, a value with
    # spaces, {{APP_ID}} in a label value, existing Hadoop and krb5 ConfigMaps, and app
    # arguments that look like options (they follow the primary resource)
    "argv-shapes": [
        "--verbose", "--properties-file", "<props>", "--name", "shapes",
        "--class", "org.example.Main", IMAGE,
        "--driver-java-options", "-Dlog4j.configuration=file:/x -Dother=1",
        *conf(
            "spark.kubernetes.driver.label.run={{APP_ID}}",
            "spark.kubernetes.hadoop.configMapName=hadoop-cm",
            "spark.kubernetes.kerberos.krb5.configMapName=krb5-cm",
        ),
        "local:///opt/app.jar", "-n", "5", "--limit", "3", "-h",
    ],
    # spark-submit's own conventions (issue 23, item 6): spark-internal as the primary resource
    # (the main class comes from --jars), the submitter's SPARK_CONF_DIR files in the driver's
    # ConfigMap, and a volume setting Spark ignores (mount.sizeLimit: a warning, not a refusal)
    "conventions": [
        "--name", "conventions", "--class", "org.apache.spark.examples.SparkPi", IMAGE,
        "--jars", "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar",
        *conf(
            "spark.kubernetes.driver.volumes.emptyDir.scratch.mount.path=/scratch",
            "spark.kubernetes.driver.volumes.emptyDir.scratch.mount.sizeLimit=1Gi",
        ),
        "spark-internal", "5",
    ],
}  # fmt: skip
CONF_DIRS: dict[str, dict[str, str]] = {
    "conventions": {
        "log4j2.properties": (
            "rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\n"
            "appender.console.type = Console\nappender.console.name = console\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = parity %p %c: %m%n\n"
        ),
        "hive-site.xml": "<configuration/>\n",
    }
}
"""The submitter's SPARK_CONF_DIR for a case (both sides get the same directory)."""
PROPERTIES = (
    "spark.executor.memory 3g\nspark.driver.memory=1500m\nspark.sql.shuffle.partitions: 11\n"
)


@dataclass
class Outcome:
    """Both sides' normalised objects for one case, or why a side could not run."""

    theirs: list[dict[str, Any]] = field(default_factory=list)
    ours: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


def _with_trailing(case: str) -> int:
    """How many trailing arguments are the app resource and its args."""
    tail = {"spark-pi": 2, "python-pi": 2, "many-conf": 3, "argv-shapes": 6, "conventions": 2}
    return tail.get(case, 1)


def argv_for(
    case: str, namespace: str, templates: dict[str, Path], version: str = SPARK_VERSION
) -> list[str]:
    """The case's argv with the namespace and the no-wait option before the app resource, its
    image tagged with Spark ``version`` (sparkplane reads the version from the tag, as it does
    for any user's image)."""
    out: list[str] = []
    for arg in (a.replace(IMAGE, versioned(version)) for a in CASES[case]):
        if arg == "<templates>":
            for role, path in templates.items():
                out += ["--conf", f"{parity.TEMPLATE_KEYS[role]}={path}"]
        elif arg == "<props>":
            props = templates["driver"].with_name("spark-defaults.conf")
            props.write_text(PROPERTIES)
            out.append(str(props))
        else:
            out.append(arg)
    tail = _with_trailing(case)
    extra = conf(
        "spark.kubernetes.submission.waitAppCompletion=false",
        f"spark.kubernetes.namespace={namespace}",
    )
    return [*out[:-tail], *extra, *out[-tail:]]


def _namespace(kube: Kube, case: str, side: str) -> str:
    name = f"sp-parity-{side}-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    wait_for(
        lambda: kube.get_or_none("v1", "ServiceAccount", "default", name) is not None,
        timeout=30,
        what=f"service account {name}/default",
    )
    kube.create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT}},
        name,
    )
    return name


@pytest.fixture(scope="module", params=SPARK_VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    """The Spark version whose spark-submit the module's cases run against."""
    return str(request.param)


@pytest.fixture(scope="module")
def outcomes(
    kube: Kube, kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory, version: str
) -> Iterator[dict[str, Outcome]]:
    """Submit every case both ways with Spark ``version`` (spark-submit two at a time) and read
    both back."""
    server = kube.api.configuration.host
    folder = tmp_path_factory.mktemp("templates")
    templates = {
        "driver": folder / "driver.yaml",
        "executor": folder / "executor.yaml",
    }
    templates["driver"].write_text(yaml.safe_dump(DRIVER_TEMPLATE, sort_keys=False))
    templates["executor"].write_text(yaml.safe_dump(EXECUTOR_TEMPLATE, sort_keys=False))
    kube.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": PRIORITY},
            "value": 1000,
        }
    )
    conf_dirs: dict[str, Path] = {}
    for case, files in CONF_DIRS.items():
        conf_dirs[case] = tmp_path_factory.mktemp(f"conf-{case}")
        for name, text in files.items():
            (conf_dirs[case] / name).write_text(text)
    spaces = {case: (_namespace(kube, case, "s"), _namespace(kube, case, "p")) for case in CASES}
    kinds = parity.namespaced_kinds(kube)
    before = {ns: parity.snapshot(kube, ns, kinds) for pair in spaces.values() for ns in pair}
    results = {case: Outcome() for case in CASES}

    def theirs(case: str) -> None:
        ns = spaces[case][0]
        try:
            env = {"SPARK_CONF_DIR": str(conf_dirs[case])} if case in conf_dirs else None
            parity.run_spark_submit(
                server, argv_for(case, ns, templates, version), kubeconfig, env=env, version=version
            )
        except Exception as exc:  # reported by the case's test, not here
            results[case].error = f"spark-submit: {exc}"

    def ours(case: str) -> None:
        ns = spaces[case][1]
        try:
            argv = argv_for(case, ns, templates, version)
            source = parity.sparkplane_source(argv, conf_dirs.get(case))
            assert source.app is not None
            submit_native(kube, source.app, SubmitOptions(conf_files=source.conf_files))
        except Exception as exc:
            results[case].error += f"\nsparkplane: {type(exc).__name__}: {exc}"

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(theirs, CASES))
        for case in CASES:
            ours(case)
        for case, (ns_theirs, ns_ours) in spaces.items():
            if results[case].error:
                continue
            for ns, side in ((ns_theirs, "theirs"), (ns_ours, "ours")):
                known = {(o["kind"], o["metadata"]["name"]) for o in before[ns]}
                found = [
                    o
                    for o in parity.snapshot(kube, ns, kinds)
                    if (o["kind"], o["metadata"]["name"]) not in known
                ]
                setattr(results[case], side, parity.normalise(found, ns))
        yield results
    finally:
        for pair in spaces.values():
            for ns in pair:
                delete_namespace(kube, ns)
        kube.delete("scheduling.k8s.io/v1", "PriorityClass", PRIORITY)


PARAMS = CASES


@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", PARAMS)
def test_sparkplane_creates_what_spark_submit_creates(
    outcomes: dict[str, Outcome], case: str
) -> None:
    outcome = outcomes[case]
    assert not outcome.error, outcome.error
    kinds = sorted(o["kind"] for o in outcome.theirs)
    assert {"Pod", "Service", "ConfigMap"} <= set(kinds), kinds
    found, used = parity.compare(outcome.theirs, outcome.ours)
    assert not found, f"{len(found)} undocumented difference(s):\n" + "\n".join(found)
    assert used <= set(parity.DEVIATIONS)


def test_every_deviation_is_documented() -> None:
    text = DOCS.read_text()
    missing = [key for key in parity.DEVIATIONS if f"`{key}`" not in text]
    assert not missing, f"docs/parity.md does not explain: {missing}"


def test_the_comparison_sees_a_changed_field(outcomes: dict[str, Outcome]) -> None:
    """Guard against a normalisation that hides everything: one changed field must show."""
    outcome = outcomes["spark-pi"]
    assert not outcome.error, outcome.error
    ours = copy.deepcopy(outcome.ours)
    pod = next(o for o in ours if o["kind"] == "Pod")
    pod["spec"]["containers"][0]["image"] = "apache/spark:3.5.0"
    next(o for o in ours if o["kind"] == "Service")["metadata"]["labels"]["extra"] = "1"
    found, _ = parity.compare(outcome.theirs, ours)
    assert len(found) == 2, found
    assert any("image" in line and "3.5.0" in line for line in found)


def _since(version: str, minor: int) -> bool:
    major, minor_of, *_ = (int(p) for p in version.split("."))
    return (major, minor_of) >= (4, minor)


def test_what_each_version_renders_differently_is_in_the_comparison(
    outcomes: dict[str, Outcome], version: str
) -> None:
    """The version table of docs/parity.md, read from what the real spark-submit of ``version``
    created for SparkPi (and sparkplane matched it, above): the driver's Spark Connect port on
    the pod and the Service from 4.1, ``appProtocol: grpc`` on it and the app's NetworkPolicy
    from 4.2, the driver container's ``allowPrivilegeEscalation`` from 4.3."""
    outcome = outcomes["spark-pi"]
    assert not outcome.error, outcome.error
    for side in (outcome.theirs, outcome.ours):
        pod = next(o for o in side if o["kind"] == "Pod")
        service = next(o for o in side if o["kind"] == "Service")
        driver = pod["spec"]["containers"][0]
        pod_ports = {p.get("name") for p in driver.get("ports", [])}
        connect = [p for p in service["spec"]["ports"] if p.get("name") == "spark-connect"]
        assert ("spark-connect" in pod_ports) == _since(version, 1), pod_ports
        assert bool(connect) == _since(version, 1), service["spec"]["ports"]
        if connect:
            assert (connect[0].get("appProtocol") == "grpc") == _since(version, 2), connect
        policies = [o for o in side if o["kind"] == "NetworkPolicy"]
        assert len(policies) == (1 if _since(version, 2) else 0), policies
        escalation = (driver.get("securityContext") or {}).get("allowPrivilegeEscalation")
        assert (escalation is False) == _since(version, 3), driver.get("securityContext")
