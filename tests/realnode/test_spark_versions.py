"""Issue 23 item 5 / issue 27 "several Spark versions": each extra Spark version on the real node.

The dev cluster builds a Spark image per supported version (sparkplane.version.SPARK_VERSIONS,
each from its pyspark distribution). Through the operator and Apache's API, a SparkPi naming
only ``runtimeVersions.sparkVersion`` (no image) runs on that version's image and reaches
Succeeded, its driver log saying which Spark ran it: one per version besides the venv's (whose
image every other real-node test runs), parametrized. A version with no image is refused by the
operator with a message naming the field and the supported versions, before any pod exists.
One real Spark app per extra version (CI time).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.core.states import history_states
from sparkplane.operator.deploy.install import install_crds
from sparkplane.version import SPARK_VERSION, SPARK_VERSIONS, spark_image
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator
from tests.realnode.sparkapps import pod_logs, spec
from tests.realnode.test_spark import PI_LINE

API = "spark.apache.org/v1"
EXTRA = [v for v in SPARK_VERSIONS if v != SPARK_VERSION]


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[str]:
    install_crds(kube)
    with running_operator(kube, namespace, simulate=False):
        yield namespace


def _app(name: str, namespace: str, version: str) -> dict[str, Any]:
    body = spec(name, namespace, executors=1, args=["4"])
    del body["spec"]["image"]  # the version picks it
    body["spec"]["runtimeVersions"] = {"sparkVersion": version}
    body["spec"]["applicationTolerations"] = {"resourceRetainPolicy": "Always"}
    return body


def _ended(kube: Kube, namespace: str, name: str, timeout: float) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        cr = kube.get_or_none(API, "SparkApplication", name, namespace)
        states = history_states((cr or {}).get("status") or {})
        return cr if {"Succeeded", "Failed", "SchedulingFailure"} & set(states) else None

    found: dict[str, Any] = wait_for(check, timeout=timeout, what=f"{name} ended", interval=0.5)
    return found


@pytest.mark.timeout(600)  # run alone, its setup starts the real-node cluster (3+ min)
def test_a_version_without_an_image_is_refused_by_the_operator(kube: Kube, operator: str) -> None:
    ns = operator
    kube.create(_app("pi-old", ns, "3.5.1"), namespace=ns)
    refused = _ended(kube, ns, "pi-old", timeout=120)
    message = str(refused["status"])
    assert "spec.runtimeVersions.sparkVersion" in message, message
    assert all(v in message for v in SPARK_VERSIONS), message
    assert kube.get_or_none("v1", "Pod", "pi-old-0-driver", ns) is None


@pytest.mark.timeout(600)
@pytest.mark.parametrize("version", EXTRA)
def test_each_extra_spark_version_runs_through_the_operator(
    kube: Kube, operator: str, version: str
) -> None:
    ns = operator
    name = f"pi-{version.replace('.', '-')}"
    kube.create(_app(name, ns, version), namespace=ns)
    done = _ended(kube, ns, name, timeout=480)
    states = history_states(done["status"])
    assert "Succeeded" in states, done["status"]
    driver = kube.get("v1", "Pod", f"{name}-0-driver", ns)
    images = {c["name"]: c["image"] for c in driver["spec"]["containers"]}
    assert set(images.values()) == {spark_image(version)}, images
    log = pod_logs(kube, ns, f"{name}-0-driver")
    assert f"Running Spark version {version}" in log, log[-3000:]
    assert PI_LINE in log
