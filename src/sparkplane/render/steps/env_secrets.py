"""Secret env step (Spark's ``EnvSecretsFeatureStep``).

For each ``spark.kubernetes.driver.secretKeyRef.<ENV>=<secret>:<key>``: an env var with
``valueFrom.secretKeyRef``. The ``name:key`` form is checked by the validator. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, with_env
from sparkplane.spec.conf import K8S
from sparkplane.spec.conf_keys import with_prefix
from sparkplane.spec.models import SparkApp

PREFIX = f"{K8S}.driver.secretKeyRef."


def applies(app: SparkApp, conf: Mapping[str, str]) -> bool:
    """When a secret key is to become an environment variable."""
    return bool(with_prefix(conf, PREFIX))


class EnvSecretsStep:
    """Expose secret keys as driver environment variables."""

    name = "env-secrets"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        env = []
        for name, ref in conf.prefixed(PREFIX).items():
            secret, _, key = ref.partition(":")
            env.append({"name": name, "valueFrom": {"secretKeyRef": {"key": key, "name": secret}}})
        return state.evolve(container=with_env(state.container, env))
