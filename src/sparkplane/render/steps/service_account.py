"""Service account step (Spark's ``DriverKubernetesCredentialsFeatureStep``, no-credentials case).

Sets both ``serviceAccount`` and ``serviceAccountName`` from
``spark.kubernetes.authenticate.driver.serviceAccountName``. Uploading driver credentials into
a Secret is not supported (the driver uses its service account). Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, clone, section
from sparkplane.spec.conf import K8S

SA_KEY = f"{K8S}.authenticate.driver.serviceAccountName"


class ServiceAccountStep:
    """Run the driver as the configured service account."""

    name = "service-account"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        account = conf.get(SA_KEY)
        if not account:
            return state
        pod = clone(state.pod)
        spec = section(pod, "spec")
        spec["serviceAccount"] = account
        spec["serviceAccountName"] = account
        return state.evolve(pod=pod)
