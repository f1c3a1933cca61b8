"""Apache's e2e expectations that need no real Spark, written from apache/spark-kubernetes-operator
``tests/e2e`` (issue 27) and run with KWOK playing the drivers: ``resource-selector`` (an
operator with ``spark.kubernetes.operator.reconciler.labelSelector=foo=bar,keyx=valuey`` leaves
a SparkApplication without status until it carries both labels, then reconciles it) and
``watched-namespaces`` (only the watched namespaces' resources get a status). The others are in
test_operator_paths.py, test_operator_reused_name.py and tests/realnode/test_apache_conformance.py
(docs/operator.md lists them all).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sparkplane.kube import Kube
from sparkplane.operator.deploy.install import install_crds
from tests.integration.helpers import delete_namespace, wait_for
from tests.integration.operator_helpers import API, history, running_operator, spark_app

pytestmark = pytest.mark.integration
TERMINAL = ("ResourceReleased", "TerminatedWithoutReleaseResources")
SELECTOR = "foo=bar,keyx=valuey"  # Apache's selector-config-values.yaml


@pytest.fixture(scope="module")
def crds(kube: Kube) -> None:
    install_crds(kube)


@pytest.fixture
def other_namespace(kube: Kube) -> Iterator[str]:
    name = f"sp-test-{uuid.uuid4().hex[:8]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    delete_namespace(kube, name)


def _status(kube: Kube, namespace: str, name: str) -> object:
    return (kube.get_or_none(API, "SparkApplication", name, namespace) or {}).get("status")


def _ended(kube: Kube, namespace: str, name: str) -> dict[str, object] | None:
    cr = kube.get_or_none(API, "SparkApplication", name, namespace) or {}
    states = history(cr)
    return cr if states and states[-1] in TERMINAL else None


def _labelled(name: str, labels: dict[str, str]) -> dict[str, object]:
    app = spark_app(name, sim={"outcome": "Succeeded"})
    app["metadata"]["labels"] = labels
    return app


def test_resource_selector(kube: Kube, namespace: str, crds: None) -> None:
    with running_operator(kube, namespace, label_selector=SELECTOR):
        kube.create(spark_app("unlabelled", sim={"outcome": "Succeeded"}), namespace=namespace)
        kube.create(_labelled("half", {"keyx": "valuey"}), namespace=namespace)
        # a resource the selector matches, created last: once it has ended, the operator has
        # seen the other two long before (one watch, in order) and left them alone
        kube.create(_labelled("matched", {"foo": "bar", "keyx": "valuey"}), namespace=namespace)
        wait_for(lambda: _ended(kube, namespace, "matched"), timeout=60, what="matched ended")
        assert _status(kube, namespace, "unlabelled") is None
        assert _status(kube, namespace, "half") is None
        # Apache's last step: the missing label makes it the operator's
        kube.patch(
            API, "SparkApplication", "half", {"metadata": {"labels": {"foo": "bar"}}}, namespace
        )
        cr = wait_for(lambda: _ended(kube, namespace, "half"), timeout=60, what="half ended")
        assert history(cr)[0] == "Submitted" and "Succeeded" in history(cr)
        assert _status(kube, namespace, "unlabelled") is None


def test_watched_namespaces(kube: Kube, namespace: str, other_namespace: str, crds: None) -> None:
    with running_operator(kube, namespace):
        kube.create(spark_app("elsewhere", sim={"outcome": "Succeeded"}), namespace=other_namespace)
        kube.create(spark_app("watched", sim={"outcome": "Succeeded"}), namespace=namespace)
        wait_for(lambda: _ended(kube, namespace, "watched"), timeout=60, what="watched ended")
        assert _status(kube, other_namespace, "elsewhere") is None
        assert not kube.list("v1", "Pod", other_namespace)
