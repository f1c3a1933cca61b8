"""Secret env step (Spark's ``EnvSecretsFeatureStep``).

For each ``spark.kubernetes.driver.secretKeyRef.<ENV>=<secret>:<key>``: an env var with
``valueFrom.secretKeyRef``. The ``name:key`` form is checked by the validator. Pure.
"""

from __future__ import annotations

from sparkplane.render.conf import DriverConf
from sparkplane.render.state import DriverState, with_env
from sparkplane.spec.conf import K8S


class EnvSecretsStep:
    """Expose secret keys as driver environment variables."""

    name = "env-secrets"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        refs = conf.prefixed(f"{K8S}.driver.secretKeyRef.")
        if not refs:
            return state
        env = []
        for name, ref in refs.items():
            secret, _, key = ref.partition(":")
            env.append({"name": name, "valueFrom": {"secretKeyRef": {"key": key, "name": secret}}})
        return state.evolve(container=with_env(state.container, env))
