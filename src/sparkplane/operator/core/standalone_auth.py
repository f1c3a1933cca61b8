"""A SparkCluster closed to everyone but its own pods and its own applications.

Spark's standalone master accepts an application from anyone who reaches port 7077 unless
``spark.authenticate`` is on; its JWS filter guards HTTP only. So, as Apache's operator turns
``spark.authenticate`` on for its applications, the operator:

* generates one secret per SparkCluster, a Secret ``<cluster>-spark-auth`` (key ``secret``,
  immutable, owned by the SparkCluster, created and never read back by the operator);
* runs the master and the workers with ``spark.authenticate=true`` and the secret in
  ``_SPARK_AUTH_SECRET`` (from the Secret: never in the pod spec). Spark's daemons read that
  variable (``SecurityManager.getSecretKey``), and a worker hands it to the executors it
  launches the same way;
* gives it to every SparkApplication of the SAME namespace whose ``spark.master`` names the
  cluster's master Service (:func:`target_cluster`): ``spark.authenticate=true``, the variable,
  and ``SPARK_SUBMIT_OPTS=-Dspark.authenticate.secret=$(_SPARK_AUTH_SECRET)`` (a driver of a
  standalone master insists on the secret in its conf: ``SecurityManager.initializeAuth``),
  plus the label ``sparkplane.io/spark-cluster=<cluster>`` on its driver pod;
* adds a NetworkPolicy ``<cluster>-spark-cluster`` admitting to the master and the workers only
  the cluster's own pods and the pods labelled ``sparkplane.io/spark-cluster=<cluster>`` of the
  namespace (where the network enforces NetworkPolicies; NetworkPolicies add up, so an admin's
  own policy can admit an Ingress controller to the web UIs).

An application of another namespace never gets the secret, so the master refuses it. Called by
:mod:`.cluster_build` and :mod:`.driver`. Pure but for
:func:`new_secret` (randomness, injected by the callers).
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from sparkplane.operator.core.naming import CLUSTER_NAME_LABEL
from sparkplane.vocab import SPARK_CLUSTER_CLIENT_LABEL, label_value

Obj = dict[str, Any]
ENV = "_SPARK_AUTH_SECRET"  # what Spark's SecurityManager reads (ENV_AUTH_SECRET)
KEY = "secret"
AUTH_CONF = "spark.authenticate"
SECRET_CONF = "spark.authenticate.secret"
CLIENT_LABEL = SPARK_CLUSTER_CLIENT_LABEL  # on the pods the cluster's NetworkPolicy admits
MASTER_SUFFIX = "-master-svc"


def new_secret() -> str:
    """A fresh random secret (256 bits, as Spark's own ``spark.authenticate.secretBitLength``)."""
    return secrets.token_urlsafe(32)


def secret_name(cluster: str) -> str:
    return f"{cluster}-spark-auth"


def policy_name(cluster: str) -> str:
    return f"{cluster}-spark-cluster"


def secret_env(cluster: str) -> Obj:
    """``_SPARK_AUTH_SECRET`` from the cluster's Secret."""
    ref = {"name": secret_name(cluster), "key": KEY}
    return {"name": ENV, "valueFrom": {"secretKeyRef": ref}}


def auth_secret(cluster: str, value: str, labels: Obj) -> Obj:
    """The cluster's Secret (``value``: a fresh random secret; the first one created stays)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(cluster), "labels": dict(labels)},
        "type": "Opaque",
        "immutable": True,
        "stringData": {KEY: value},
    }


def network_policy(cluster: str, labels: Obj) -> Obj:
    """Ingress to the cluster's pods from its own pods and its applications' drivers only."""
    own = {CLUSTER_NAME_LABEL: label_value(cluster)}
    apps = {CLIENT_LABEL: label_value(cluster)}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": policy_name(cluster), "labels": dict(labels)},
        "spec": {
            "podSelector": {"matchLabels": own},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [{"podSelector": {"matchLabels": own}}]},
                {"from": [{"podSelector": {"matchLabels": apps}}]},
            ],
        },
    }


def target_cluster(master: str | None, namespace: str) -> str | None:
    """The SparkCluster of ``namespace`` that ``spark.master`` names, else None.

    ``spark://<cluster>-master-svc[.<namespace>[.svc[.<domain>]]][:port]`` (several hosts, as a
    standalone HA URL lists them, must all name the same cluster). A master in another
    namespace is never a target: its secret is not this namespace's to give.
    """
    if not master or not master.startswith("spark://"):
        return None
    found: set[str] = set()
    for host_port in master.removeprefix("spark://").split(","):
        host = host_port.strip().rsplit(":", 1)[0] if ":" in host_port else host_port.strip()
        labels = host.split(".")
        index = next((i for i, part in enumerate(labels) if part.endswith(MASTER_SUFFIX)), None)
        if index is None or index > 1:
            return None
        name = labels[index].removesuffix(MASTER_SUFFIX)
        if index == 1 and not labels[0].startswith(f"{name}-master-"):
            return None  # a pod's DNS name: <cluster>-master-0.<cluster>-master-svc...
        rest = labels[index + 1 :]
        if not name or (rest and rest[0] != namespace) or (len(rest) > 1 and rest[1] != "svc"):
            return None
        found.add(name)
    return found.pop() if len(found) == 1 else None


def _driver_container(pod: Obj) -> Obj:
    containers = pod["spec"]["containers"]
    for container in containers:
        if (container.get("args") or [None])[0] == "driver":
            return dict(container)
    return dict(containers[0])


def with_client_auth(pod: Obj, cluster: str) -> Obj:
    """The driver pod of an application of ``cluster``: the secret, its conf, the label."""
    out = copy.deepcopy(pod)
    out["metadata"].setdefault("labels", {})[CLIENT_LABEL] = label_value(cluster)
    containers = out["spec"]["containers"]
    driver = _driver_container(out)
    index = next(i for i, c in enumerate(containers) if c.get("name") == driver.get("name"))
    env = [e for e in driver.get("env") or [] if e.get("name") != ENV]
    opts = next((e for e in env if e.get("name") == "SPARK_SUBMIT_OPTS"), None)
    given = str((opts or {}).get("value") or "")
    env = [e for e in env if e is not opts]
    flag = f"-D{SECRET_CONF}=$({ENV})"  # expanded by the kubelet from the variable above
    env += [secret_env(cluster), {"name": "SPARK_SUBMIT_OPTS", "value": f"{given} {flag}".strip()}]
    containers[index] = {**driver, "env": env}
    return out
