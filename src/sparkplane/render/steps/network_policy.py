"""Per-app NetworkPolicy step (Spark 4.2+'s ``NetworkPolicyFeatureStep``).

From Spark 4.2, spark-submit creates one NetworkPolicy per application, ``<prefix>-policy``
(labelled ``spark-app-selector=<app id>``): it selects the app's executors
(``spark-role=executor`` and the app id) and admits ingress only from pods of the same app
(its driver and its other executors), so no other pod of the namespace reaches an executor's
block manager. Earlier versions create none. Checked in the ``spark-kubernetes_2.13`` jars:
``KubernetesDriverBuilder`` lists the step after ``DriverServiceFeatureStep`` in 4.2.0 and
4.3.0, and not in 4.1.1 or 4.0.1. Where the network enforces no NetworkPolicies it changes
nothing. Pure.

Deviation: Spark creates the policy before the driver pod and then adopts it (a pre-resource);
sparkplane creates it right after the pod, owned from the start (no executor exists before the
driver runs, so the policy is in place as early for them, and the submitter needs no ``patch``
on NetworkPolicies). The object left on the cluster is the same.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf, _spark_version, at_least
from sparkplane.render.state import DriverState, Obj
from sparkplane.spec.models import SparkApp
from sparkplane.vocab import APP_SELECTOR_LABEL, EXECUTOR_ROLE, ROLE_LABEL

SINCE = (4, 2)
"""The first Spark version whose spark-submit creates the policy."""


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """Spark 4.2 or newer (``runtimeVersions.sparkVersion``, else the image tag)."""
    return at_least(_spark_version(app), SINCE)


def network_policy(conf: DriverConf) -> Obj:
    """The app's NetworkPolicy: its executors admit its own pods only."""
    app_id = conf.ids.app_id
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": f"{conf.ids.resource_prefix}-policy",
            "labels": {APP_SELECTOR_LABEL: app_id},
        },
        "spec": {
            "podSelector": {"matchLabels": {ROLE_LABEL: EXECUTOR_ROLE, APP_SELECTOR_LABEL: app_id}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {APP_SELECTOR_LABEL: app_id}}}]}],
        },
    }


class NetworkPolicyStep:
    """Only the app's own pods reach its executors."""

    name = "network-policy"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        return state.evolve(resources=[network_policy(conf)])
