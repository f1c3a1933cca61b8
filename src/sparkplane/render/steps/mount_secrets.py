"""Secret volumes step (Spark's ``MountSecretsFeatureStep``).

For each ``spark.kubernetes.driver.secrets.<name>=<path>``: a volume ``<name>-volume`` from
Secret ``<name>`` mounted at ``<path>``. Deviation: sorted by secret name (Spark: hash order).
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, with_volumes
from sparkplane.spec.conf import K8S
from sparkplane.spec.conf_keys import with_prefix
from sparkplane.spec.models import SparkApp

PREFIX = f"{K8S}.driver.secrets."


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When a secret is to be mounted."""
    return bool(with_prefix(conf, PREFIX))


class MountSecretsStep:
    """Mount the driver's secrets as volumes."""

    name = "mount-secrets"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        secrets = conf.prefixed(PREFIX)
        volumes = [{"name": f"{n}-volume", "secret": {"secretName": n}} for n in secrets]
        mounts = [{"mountPath": p, "name": f"{n}-volume"} for n, p in secrets.items()]
        pod, container = with_volumes(state.pod, state.container, volumes, mounts)
        return state.evolve(pod=pod, container=container)
