"""Issue 27: Apache's dynamic configuration. The operator, running with its shipped RBAC and
``dynamic_config`` on, applies the ConfigMap ``spark-kubernetes-operator-dynamic-configuration``
of its own namespace without a restart: a namespace added to
``spark.kubernetes.operator.watchedNamespaces`` starts being reconciled, one removed stops, and a
bad value is reported naming its key while the previous settings stay.

The operator's own namespace is not one it watches, so reading the ConfigMap relies on the one
rule the shipped Role grants there (that ConfigMap, by name); any ``forbidden`` in its log fails
the test. KWOK plays the drivers (``sim.sparkplane.io/*``).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkplane.kube import Kube, connect
from sparkplane.operator.core.settings import (
    DYNAMIC_CONFIG_NAME,
    OperatorSettings,
    ReconcileSettings,
)
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.security.rbac import render as render_rbac
from sparkplane.security.rules import Identity
from sparkplane.usecases.kubeconfig import mint_kubeconfig, write_private
from sparkplane_devcluster.simulator import DriverSimulator
from tests.integration.helpers import delete_namespace, wait_for
from tests.integration.operator_helpers import (
    OPERATOR_ACCOUNT,
    TEST_LIMITS,
    no_forbidden,
    spark_app,
    state_of,
    wait_state,
)

pytestmark = pytest.mark.integration
KEY = "spark.kubernetes.operator.watchedNamespaces"
SELECT = "spark.kubernetes.operator.reconciler.labelSelector"
DONE = ("ResourceReleased", "TerminatedWithoutReleaseResources")
SUCCEED = {"outcome": "Succeeded"}


@pytest.fixture
def workloads(kube: Kube) -> Iterator[tuple[str, str]]:
    """Two namespaces for the apps (the operator's own is the ``namespace`` fixture)."""
    names = tuple(f"sp-dyn-{uuid.uuid4().hex[:6]}" for _ in range(2))
    for name in names:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for name in names:
        wait_for(
            lambda n=name: kube.get_or_none("v1", "ServiceAccount", "default", n),
            timeout=30,
            what=f"service account {name}/default",
        )
    yield names[0], names[1]
    for name in names:
        delete_namespace(kube, name)


def _config(namespaces: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": DYNAMIC_CONFIG_NAME},
        "data": {KEY: namespaces},
    }


def _set(kube: Kube, home: str, namespaces: str) -> None:
    kube.patch("v1", "ConfigMap", DYNAMIC_CONFIG_NAME, {"data": {KEY: namespaces}}, home)


def test_watched_namespaces_follow_the_configmap(
    kube: Kube, namespace: str, workloads: tuple[str, str]
) -> None:
    home, (watched, added) = namespace, workloads
    install_crds(kube)
    # the shipped RBAC: its rules in both workload namespaces (as an admin grants them before
    # naming a namespace in the ConfigMap), its own-namespace Role (Lease, this ConfigMap) at home
    for obj in render_rbac(Identity.OPERATOR, home, namespaces=[watched, added]):
        kube.apply(obj.body)
    kube.create(_config(watched), namespace=home)
    settings = OperatorSettings(
        namespaces=(watched,),
        leader_election=False,
        workers=2,
        lease_namespace=home,
        dynamic_config=True,
        reconcile=ReconcileSettings(limits=TEST_LIMITS),
    )
    with tempfile.TemporaryDirectory(prefix="sp-operator-") as tmp:
        minted = mint_kubeconfig(kube, OPERATOR_ACCOUNT, home)
        path = write_private(Path(tmp) / "operator.kubeconfig", minted.text())
        acting = Kube(connect(kubeconfig=path))
    sims = [DriverSimulator(kube, ns).start() for ns in (watched, added)]
    try:
        with no_forbidden() as log:
            operator = Operator(acting, settings).start()
            try:
                # not watched: untouched while an app of the watched namespace runs to its end
                kube.create(spark_app("outside", sim=SUCCEED), namespace=added)
                kube.create(spark_app("inside", sim=SUCCEED), namespace=watched)
                wait_state(kube, watched, "inside", *DONE, timeout=90)
                assert state_of(kube, added, "outside") is None

                # added to the ConfigMap: reconciled, without a restart
                _set(kube, home, f"{watched},{added}")
                wait_state(kube, added, "outside", *DONE, timeout=90)
                assert operator.namespaces == (watched, added)

                # a bad value: reported naming its key, the previous settings kept
                _set(kube, home, f"{watched},Not_A_Namespace")
                wait_for(
                    lambda: any(KEY in line and "Not_A_Namespace" in line for line in log),
                    timeout=30,
                    what="a warning naming the bad key",
                )
                assert operator.namespaces == (watched, added)

                # removed: no longer reconciled (a new app there stays untouched)
                _set(kube, home, watched)
                wait_for(
                    lambda: operator.namespaces == (watched,),
                    timeout=30,
                    what="the namespace removed",
                )
                kube.create(spark_app("after", sim=SUCCEED), namespace=added)
                kube.create(spark_app("control", sim=SUCCEED), namespace=watched)
                wait_state(kube, watched, "control", *DONE, timeout=90)
                assert state_of(kube, added, "after") is None

                # a label selector: only the resources carrying it from now on
                kube.patch(
                    "v1", "ConfigMap", DYNAMIC_CONFIG_NAME, {"data": {SELECT: "team=a"}}, home
                )
                wait_for(
                    lambda: operator.settings.label_selector == "team=a",
                    timeout=30,
                    what="the selector applied",
                )
                kube.create(spark_app("unlabelled", sim=SUCCEED), namespace=watched)
                labelled = spark_app("labelled", sim=SUCCEED)
                labelled["metadata"]["labels"] = {"team": "a"}
                kube.create(labelled, namespace=watched)
                wait_state(kube, watched, "labelled", *DONE, timeout=90)
                assert state_of(kube, watched, "unlabelled") is None
            finally:
                operator.events.flush()
                operator.stop()
    finally:
        for sim in sims:
            sim.stop()
        acting.close()
