"""Service account step (Spark's ``DriverKubernetesCredentialsFeatureStep``, no-credentials case).

Sets both ``serviceAccount`` and ``serviceAccountName`` from
``spark.kubernetes.authenticate.driver.serviceAccountName``. Uploading driver credentials into
a Secret is not supported (the driver uses its service account). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, clone, section
from sparkplane.spec.conf import K8S
from sparkplane.spec.models import SparkApp

SA_KEY = f"{K8S}.authenticate.driver.serviceAccountName"


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When a service account is named."""
    return bool(conf.get(SA_KEY))


class ServiceAccountStep:
    """Run the driver as the configured service account."""

    name = "service-account"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        account = conf.conf[SA_KEY]
        pod = clone(state.pod)
        spec = section(pod, "spec")
        spec["serviceAccount"] = account
        spec["serviceAccountName"] = account
        return state.evolve(pod=pod)
