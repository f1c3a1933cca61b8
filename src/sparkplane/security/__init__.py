"""Least-privilege access: the RBAC of each sparkplane identity and kubeconfigs to act as one.

- :mod:`~sparkplane.security.rules`: the catalogue, every rule with why it is needed (pure);
- :mod:`~sparkplane.security.rbac`: :func:`render` the objects, :func:`to_yaml` with comments;
- :mod:`~sparkplane.usecases.kubeconfig`: :func:`mint_kubeconfig` through the TokenRequest API;
- :mod:`~sparkplane.security.deploy`: the generated ``deploy/rbac/*.yaml``.

How a client loads credentials (kubeconfig, in-cluster, server + token + CA) lives in the
gateway: :mod:`sparkplane.kube.config`. Only the pure modules are re-exported here, so
importing the rules never imports the Kubernetes client; the kubeconfig verb is
:mod:`sparkplane.usecases.kubeconfig`.
"""

from sparkplane.security.rbac import RbacObject, bodies, render, to_json, to_yaml
from sparkplane.security.rules import POLICIES, Identity, Policy, Rule

__all__ = [
    "POLICIES",
    "Identity",
    "Policy",
    "RbacObject",
    "Rule",
    "bodies",
    "render",
    "to_json",
    "to_yaml",
]
