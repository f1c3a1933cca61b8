"""Issue 23 item 5 / issue 27 "several Spark versions": a second Spark version on the real node.

The dev cluster builds a Spark image per supported version (sparkplane.version.SPARK_VERSIONS,
each from its pyspark distribution). Through the operator and Apache's API, a SparkPi naming
only ``runtimeVersions.sparkVersion`` (no image) runs on that version's image and reaches
Succeeded, its driver log saying which Spark ran it. A version with no image is refused by the
operator with a message naming the field and the supported versions, before any pod exists.
One real Spark app (CI time).
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
OTHER = next(v for v in SPARK_VERSIONS if v != SPARK_VERSION)


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


@pytest.mark.timeout(600)
def test_the_second_spark_version_runs_through_the_operator(kube: Kube, operator: str) -> None:
    ns = operator
    kube.create(_app("pi-old", ns, "3.5.1"), namespace=ns)
    kube.create(_app("pi-next", ns, OTHER), namespace=ns)

    refused = _ended(kube, ns, "pi-old", timeout=120)
    message = str(refused["status"])
    assert "spec.runtimeVersions.sparkVersion" in message, message
    assert all(v in message for v in SPARK_VERSIONS), message
    assert kube.get_or_none("v1", "Pod", "pi-old-0-driver", ns) is None

    done = _ended(kube, ns, "pi-next", timeout=480)
    states = history_states(done["status"])
    assert "Succeeded" in states, done["status"]
    driver = kube.get("v1", "Pod", "pi-next-0-driver", ns)
    images = {c["name"]: c["image"] for c in driver["spec"]["containers"]}
    assert set(images.values()) == {spark_image(OTHER)}, images
    log = pod_logs(kube, ns, "pi-next-0-driver")
    assert f"Running Spark version {OTHER}" in log, log[-3000:]
    assert PI_LINE in log
