"""The tenant-side probes of issue 26 (findings 1 and 2), run with tenant identities only.

Shared by ``tests/integration/test_tenant_policy.py`` (each probe must be refused by the API
server or by the operator, and nothing hostile may exist afterwards) and
``benchmarks/tenant_probes.py`` (the figures: probes tried / refused / escalations).

:class:`Tenant` holds one namespace set up with ``tenant setup`` (as a platform admin would) and
the identities the probes act as, none of them admin:

* ``apps_only``: may only create (and read) SparkApplications and SparkClusters;
* ``client``: the client role (``sparkplane rbac client``);
* ``driver``: the driver role, with a token bound to a driver pod (what a driver pod mounts);
* ``unbound_driver``: the driver role with a ``sparkplane kubeconfig`` token (bound to no pod);
* the operator with its shipped RBAC (``sparkplane rbac operator``), in-process.

A probe is an escalation when the hostile object exists afterwards (or a neighbour's object is
gone); refused when the API server or the operator said no and nothing was made.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from sparkplane.api.client import SparkPlane
from sparkplane.errors import KubeError
from sparkplane.kube import Kube, connect
from sparkplane.operator.core.settings import OperatorSettings
from sparkplane.operator.deploy.install import install_crds
from sparkplane.operator.runtime.runner import Operator
from sparkplane.security.rbac import bodies, render
from sparkplane.security.rules import Identity
from sparkplane.usecases.kubeconfig import mint_kubeconfig

API = "spark.apache.org/v1"
ALLOWED_SECRET = "team-creds"
NEIGHBOUR_SECRET = "neighbour-db-password"
NEIGHBOUR_CONF = "spark-drv-neighbour-conf-map"  # a neighbour app's spark.properties
IMAGE = "docker.io/sparkplane/spark:4.0.1"
Obj = dict[str, Any]


@dataclass
class Outcome:
    """What one probe found."""

    finding: int
    name: str
    identity: str
    refused: bool
    escalated: bool
    detail: str


@dataclass
class Tenant:
    """A tenant namespace, its identities and a neighbour app to attack."""

    admin: Kube
    namespace: str
    workdir: Path
    identities: dict[str, Kube] = field(default_factory=dict)
    kubeconfigs: dict[str, Path] = field(default_factory=dict)
    """account -> the kubeconfig file of its (last minted) token."""
    driver_pod: Obj = field(default_factory=dict)
    neighbour_driver: Obj = field(default_factory=dict)
    neighbour_executor: Obj = field(default_factory=dict)
    pod_security: str | None = None
    """Pod Security Admission level; ``privileged`` leaves the admission policy alone."""
    enforce: bool = True
    """False: the namespace is NOT set up (only the client and driver roles): the "before"."""

    # -- set-up (as the platform admin) ------------------------------------------------------
    def setup(self) -> Tenant:
        ns = self.namespace
        install_crds(self.admin)  # what `sparkplane operator install` does first
        if self.enforce:
            SparkPlane(self.admin, ns).tenant_setup(
                ns, secrets=(ALLOWED_SECRET,), pod_security=self.pod_security
            )
        else:
            for identity in (Identity.CLIENT, Identity.DRIVER):
                for obj in bodies(render(identity, ns)):
                    self.admin.apply(obj)
        # the operator's shipped RBAC, and the gc identity whose account the finding ran pods as
        for obj in [*bodies(render(Identity.OPERATOR, ns)), *bodies(render(Identity.GC, ns))]:
            self.admin.apply(obj)
        for obj in _apps_only_role(ns):
            self.admin.apply(obj)
        for name in (ALLOWED_SECRET, NEIGHBOUR_SECRET):
            self.admin.apply(_secret(ns, name))
        self.admin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": NEIGHBOUR_CONF, "namespace": ns},
                "data": {"spark.properties": "spark.hadoop.fs.s3a.secret.key=neighbour-key\n"},
            }
        )
        if self.enforce:
            self._wait_policy_active()
        self.identities["apps_only"] = self.mint(APPS_ONLY)
        self.identities["client"] = self.mint("sparkplane-client")
        self.identities["unbound_driver"] = self.mint("spark-driver")
        self.identities["operator"] = self.mint("sparkplane-operator")
        client = self.identities["client"]
        # drivers as a client submits them: the policy lets these through
        self.driver_pod = client.create(_driver_pod(ns, "mine"))
        self.neighbour_driver = client.create(_driver_pod(ns, "neighbour"))
        self.identities["driver"] = self.mint("spark-driver", bound_to=self.driver_pod)
        neighbour = self.mint("spark-driver", bound_to=self.neighbour_driver)
        self.neighbour_executor = neighbour.create(
            _executor(ns, "neighbour", self.neighbour_driver)
        )
        return self

    def _wait_policy_active(self, timeout: float = 60) -> None:
        """Admission policies load asynchronously: wait until a privileged pod is refused."""
        probe = _pod(self.namespace, "policy-ready", account="default")
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.admin.create(probe, dry_run=True)
            except KubeError as exc:
                if "serviceAccountName" in str(exc):
                    return
                raise
            if time.monotonic() > deadline:
                raise AssertionError("the tenant admission policy never took effect")
            time.sleep(0.5)

    def mint(self, account: str, *, bound_to: Obj | None = None) -> Kube:
        """A gateway acting as ``account`` (a token bound to ``bound_to`` pod if given)."""
        minted = mint_kubeconfig(self.admin, account, self.namespace, duration=timedelta(hours=1))
        config = minted.config
        if bound_to is not None:
            meta = bound_to["metadata"]
            answer = self.admin.raw(
                "POST",
                f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{account}/token",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {
                        "expirationSeconds": 3600,
                        "boundObjectRef": {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": meta["name"],
                            "uid": meta["uid"],
                        },
                    },
                },
            )
            config["users"][0]["user"]["token"] = answer["status"]["token"]
        path = self.workdir / f"{account}-{uuid.uuid4().hex[:6]}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        self.kubeconfigs[account] = path
        return Kube(connect(kubeconfig=path))

    @contextmanager
    def operator(self) -> Iterator[Operator]:
        """The operator with its shipped RBAC, watching this namespace only."""
        settings = OperatorSettings(namespaces=(self.namespace,), leader_election=False, workers=2)
        operator = Operator(self.identities["operator"], settings).start()
        try:
            yield operator
        finally:
            operator.stop()

    def close(self) -> None:
        for kube in self.identities.values():
            kube.close()

    # -- the probes ---------------------------------------------------------------------------
    def probes(self) -> list[Callable[[], Outcome]]:
        """Every probe, in the order of the findings."""
        out: list[Callable[[], Outcome]] = []
        for name, spec in _hostile_specs(self.namespace).items():
            out.append(lambda name=name, spec=spec: self.operator_probe(name, spec))
        out.append(self.cluster_probe)
        for name, pod in _client_pods(self.namespace).items():
            out.append(lambda name=name, pod=pod: self.create_probe(1, name, "client", pod))
        for name, pod in self._driver_pods().items():
            out.append(lambda name=name, pod=pod: self.create_probe(2, name, "driver", pod))
        own = _executor(self.namespace, "mine-unbound", self.driver_pod)
        out.append(lambda: self.create_probe(2, "unbound driver token", "unbound_driver", own))
        out += [self.delete_neighbour_probe, self.deletecollection_probe]
        out.append(self.statefulset_probe)
        return out

    def statefulset_probe(self) -> Outcome:
        """Issue 27: the driver role may create StatefulSets (Spark's statefulset allocator, as
        Apache's workload role), but their pods would escape the driver checks; without the
        namespace's opt-in the policy refuses the StatefulSet (here: one whose pods would run
        privileged-free but as a non-executor)."""
        pod = _pod(self.namespace, "x", labels={"spark-role": "driver"})
        name = "driver-made-set"
        sts = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "replicas": 0,
                "serviceName": name,
                "selector": {"matchLabels": {"set": name}},
                "template": {
                    "metadata": {"labels": {**pod["metadata"]["labels"], "set": name}},
                    "spec": pod["spec"],
                },
            },
        }
        what = "executor StatefulSet without the opt-in"
        try:
            self.identities["driver"].create(sts, namespace=self.namespace)
        except KubeError as exc:
            made = self._exists("apps/v1", "StatefulSet", name)
            return Outcome(2, what, "driver", not made, made, _short(exc))
        return Outcome(2, what, "driver", False, True, "created")

    def create_probe(self, finding: int, name: str, identity: str, pod: Obj) -> Outcome:
        kube = self.identities[identity]
        try:
            kube.create(pod, namespace=self.namespace)
        except KubeError as exc:
            exists = self._exists("v1", "Pod", pod["metadata"]["name"])
            return Outcome(finding, name, identity, not exists, exists, _short(exc))
        return Outcome(finding, name, identity, False, True, "created")

    def operator_probe(self, name: str, app: Obj) -> Outcome:
        """A SparkApplication from ``apps_only``: the operator must refuse it, creating no pod."""
        self.identities["apps_only"].create(app, namespace=self.namespace)
        app_name = app["metadata"]["name"]
        failure = _wait(lambda: self._failure(API, "SparkApplication", app_name), 60)
        selector = f"spark.operator/spark-app-name={app_name}"
        made = [
            p["metadata"]["name"]
            for p in self.admin.list("v1", "Pod", self.namespace, label_selector=selector)
        ]
        refused = failure is not None and not made
        detail = str((failure or {}).get("message"))
        return Outcome(1, f"SparkApplication: {name}", "apps_only", refused, bool(made), detail)

    def cluster_probe(self) -> Outcome:
        """A privileged hostNetwork SparkCluster master with allowPrivilegeEscalation."""
        name = "hostile-cluster"
        self.identities["apps_only"].create(_hostile_cluster(name), namespace=self.namespace)
        failure = _wait(lambda: self._failure(API, "SparkCluster", name), 60)
        made = any(
            self._exists("apps/v1", "StatefulSet", f"{name}-{role}")
            for role in ("master", "worker")
        )
        refused = failure is not None and not made
        return Outcome(
            1,
            "SparkCluster: privileged hostNetwork master",
            "apps_only",
            refused,
            made,
            str((failure or {}).get("message")),
        )

    def _failure(self, api: str, kind: str, name: str) -> Obj | None:
        """The ``SchedulingFailure`` entry of the resource's state history, once there is one."""
        cr = self.admin.get_or_none(api, kind, name, self.namespace)
        history = ((cr or {}).get("status") or {}).get("stateTransitionHistory") or {}
        for entry in history.values():
            if (entry or {}).get("currentStateSummary") == "SchedulingFailure":
                return dict(entry)
        return None

    def delete_neighbour_probe(self) -> Outcome:
        name = self.neighbour_executor["metadata"]["name"]
        try:
            self.identities["driver"].delete("v1", "Pod", name, self.namespace)
        except KubeError as exc:
            gone = not self._exists("v1", "Pod", name)
            return Outcome(
                2, "delete a neighbour's executor", "driver", not gone, gone, _short(exc)
            )
        return Outcome(2, "delete a neighbour's executor", "driver", False, True, "deleted")

    def deletecollection_probe(self) -> Outcome:
        name = self.neighbour_executor["metadata"]["name"]
        selector = "spark-app-selector=spark-neighbour"
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        try:
            self.identities["driver"].request("DELETE", path, query={"labelSelector": selector})
        except KubeError as exc:
            gone = not self._exists("v1", "Pod", name)
            return Outcome(
                2, "deletecollection of a neighbour's pods", "driver", not gone, gone, _short(exc)
            )
        gone = not self._exists("v1", "Pod", name)
        return Outcome(2, "deletecollection of a neighbour's pods", "driver", not gone, gone, "")

    def _driver_pods(self) -> dict[str, Obj]:
        ns, me = self.namespace, self.driver_pod
        return {
            "executor mounting a neighbour's spark.properties": _executor(
                ns, "conf", me, volumes=[{"name": "c", "configMap": {"name": NEIGHBOUR_CONF}}]
            ),
            "executor reading a neighbour's spark.properties by env": _executor(
                ns, "envconf", me, env_from=[{"configMapRef": {"name": NEIGHBOUR_CONF}}]
            ),
            "executor mounting a Secret it may not use": _executor(
                ns,
                "secret",
                me,
                volumes=[{"name": "s", "secret": {"secretName": NEIGHBOUR_SECRET}}],
            ),
            "executor running as sparkplane-client": _executor(
                ns, "asclient", me, account="sparkplane-client"
            ),
            "executor with hostPath /": _executor(
                ns, "hostpath", me, volumes=[{"name": "r", "hostPath": {"path": "/"}}]
            ),
            "privileged hostNetwork executor": _executor(
                ns, "priv", me, privileged=True, host_network=True
            ),
            "pod not owned by the driver": _pod(ns, "unowned", labels={"spark-role": "executor"}),
            "owned pod that is not an executor": _executor(ns, "notexec", me, role="driver"),
            "executor owned by a neighbour's driver": _executor(
                ns, "foreign", self.neighbour_driver
            ),
        }

    def control(self) -> list[str]:
        """What must still work under the policy (problems, empty when all did)."""
        problems = []
        own = _executor(
            self.namespace,
            "mine",
            self.driver_pod,
            volumes=[{"name": "c", "configMap": {"name": "spark-exec-0123-conf-map"}}],
        )
        try:
            made = self.identities["driver"].create(own, namespace=self.namespace)
            self.identities["driver"].delete("v1", "Pod", made["metadata"]["name"], self.namespace)
        except KubeError as exc:
            problems.append(f"the driver could not create and delete its own executor: {exc}")
        # a plain SparkApplication still gets its driver (call with the operator running)
        self.identities["apps_only"].create(_app("benign"), namespace=self.namespace)
        selector = "spark.operator/spark-app-name=benign,spark-role=driver"
        found = _wait(
            lambda: (
                self.admin.list("v1", "Pod", self.namespace, label_selector=selector) or [None]
            )[0],
            60,
        )
        if found is None:
            problems.append("the operator made no driver pod for a plain SparkApplication")
        return problems

    # -- helpers ------------------------------------------------------------------------------
    def _exists(self, api: str, kind: str, name: str) -> bool:
        found = self.admin.get_or_none(api, kind, name, self.namespace)
        return found is not None and not (found.get("metadata") or {}).get("deletionTimestamp")


def figures(outcomes: list[Outcome]) -> dict[str, int]:
    return {
        "tried": len(outcomes),
        "refused": sum(o.refused for o in outcomes),
        "escalations": sum(o.escalated for o in outcomes),
    }


def _wait(check: Callable[[], Obj | None], timeout: float) -> Obj | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found is not None:
            return found
        time.sleep(0.3)
    return None


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300]


APPS_ONLY = "sparkplane-apps-only"


def _apps_only_role(ns: str) -> list[Obj]:
    """A tenant identity that may only create (and read) SparkApplications and SparkClusters."""
    meta = {"name": APPS_ONLY, "namespace": ns}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [
                {
                    "apiGroups": ["spark.apache.org"],
                    "resources": ["sparkapplications", "sparkclusters"],
                    "verbs": ["create", "get", "list", "watch"],
                }
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "subjects": [{"kind": "ServiceAccount", "name": APPS_ONLY, "namespace": ns}],
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": APPS_ONLY,
            },
        },
    ]


def _driver_pod(ns: str, app: str) -> Obj:
    return _pod(
        ns,
        f"{app}-driver",
        labels={"spark-role": "driver", "spark-app-selector": f"spark-{app}"},
    )


def _executor(
    ns: str,
    name: str,
    driver: Obj,
    *,
    role: str = "executor",
    account: str = "spark-driver",
    **kwargs: Any,
) -> Obj:
    app = driver["metadata"]["labels"]["spark-app-selector"]
    labels = {"spark-role": role, "spark-app-selector": app}
    return _pod(ns, f"{name}-exec-1", labels=labels, account=account, owner=driver, **kwargs)


def _template(**spec: Any) -> Obj:
    container: Obj = {"name": "spark-kubernetes-driver"}
    sc = spec.pop("securityContext", None)
    if sc:
        container["securityContext"] = sc
    if "volumes" in spec:
        container["volumeMounts"] = [
            {"name": v["name"], "mountPath": "/m"} for v in spec["volumes"]
        ]
    return {"spec": {"containers": [container], **spec}}


def _app(
    name: str,
    *,
    template: Obj | None = None,
    conf: dict[str, str] | None = None,
    account: str | None = "spark-driver",
) -> Obj:
    """A SparkApplication; ``account`` None leaves the service account to the pod template."""
    spark_conf = {
        "spark.kubernetes.container.image": IMAGE,
        "spark.executor.instances": "0",
        "spark.kubernetes.driver.request.cores": "10m",
        "spark.driver.memory": "128m",
        **({"spark.kubernetes.authenticate.driver.serviceAccountName": account} if account else {}),
        **(conf or {}),
    }
    spec: Obj = {
        "mainClass": "org.apache.spark.examples.SparkPi",
        "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
        "runtimeVersions": {"sparkVersion": "4.0.1"},
        "sparkConf": spark_conf,
    }
    if template is not None:
        spec["driverSpec"] = {"podTemplateSpec": template}
    return {"apiVersion": API, "kind": "SparkApplication", "metadata": {"name": name}, "spec": spec}


def _hostile_specs(ns: str) -> dict[str, Obj]:
    """Finding 1: what the apps-only tenant asked the operator for."""
    return {
        "privileged driver": _app(
            "h-priv", template=_template(securityContext={"privileged": True})
        ),
        "hostNetwork driver": _app("h-hostnet", template=_template(hostNetwork=True)),
        "hostPID driver": _app("h-hostpid", template=_template(hostPID=True)),
        "hostIPC driver": _app("h-hostipc", template=_template(hostIPC=True)),
        "hostPath / driver": _app(
            "h-hostpath", template=_template(volumes=[{"name": "r", "hostPath": {"path": "/"}}])
        ),
        "added capabilities": _app(
            "h-caps", template=_template(securityContext={"capabilities": {"add": ["SYS_ADMIN"]}})
        ),
        "allowPrivilegeEscalation": _app(
            "h-escalate", template=_template(securityContext={"allowPrivilegeEscalation": True})
        ),
        "driver as sparkplane-gc (podTemplateSpec)": _app(
            "h-gc", template=_template(serviceAccountName="sparkplane-gc"), account=None
        ),
        "driver as sparkplane-client (sparkConf)": _app(
            "h-client",
            conf={"spark.kubernetes.authenticate.driver.serviceAccountName": "sparkplane-client"},
        ),
        "driver as an undesignated account": _app(
            "h-default",
            conf={"spark.kubernetes.authenticate.driver.serviceAccountName": "default"},
        ),
        "priorityClassName system-node-critical": _app(
            "h-prio", template=_template(priorityClassName="system-node-critical")
        ),
        "driver mounting a Secret it may not read": _app(
            "h-secret",
            template=_template(volumes=[{"name": "s", "secret": {"secretName": NEIGHBOUR_SECRET}}]),
        ),
    }


def _hostile_cluster(name: str) -> Obj:
    template = {
        "spec": {
            "hostNetwork": True,
            "containers": [
                {
                    "name": "master",
                    "securityContext": {"privileged": True, "allowPrivilegeEscalation": True},
                }
            ],
        }
    }
    return {
        "apiVersion": API,
        "kind": "SparkCluster",
        "metadata": {"name": name},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.1"},
            "clusterTolerations": {"instanceConfig": {"initWorkers": 1, "minWorkers": 1}},
            "masterSpec": {"statefulSetSpec": {"template": template}},
            "sparkConf": {"spark.kubernetes.container.image": IMAGE},
        },
    }


def _client_pods(ns: str) -> dict[str, Obj]:
    """Finding 1 by hand: the client role creating the hostile pods itself."""
    return {
        "privileged pod": _pod(ns, "c-priv", privileged=True),
        "hostNetwork pod": _pod(ns, "c-hostnet", host_network=True),
        "hostPath / pod": _pod(
            ns, "c-hostpath", volumes=[{"name": "r", "hostPath": {"path": "/"}}]
        ),
        "pod as sparkplane-gc": _pod(ns, "c-gc", account="sparkplane-gc"),
        "pod mounting a Secret it may not read": _pod(
            ns, "c-secret", volumes=[{"name": "s", "secret": {"secretName": NEIGHBOUR_SECRET}}]
        ),
    }


def _secret(ns: str, name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "stringData": {"value": f"{name}-value"},
    }


def _pod(
    ns: str,
    name: str,
    *,
    labels: dict[str, str] | None = None,
    account: str = "spark-driver",
    privileged: bool = False,
    host_network: bool = False,
    volumes: list[Obj] | None = None,
    env_from: list[Obj] | None = None,
    owner: Obj | None = None,
) -> Obj:
    container: Obj = {"name": "main", "image": IMAGE, "command": ["sleep", "3600"]}
    if privileged:
        container["securityContext"] = {"privileged": True}
    if env_from:
        container["envFrom"] = env_from
    if volumes:
        container["volumeMounts"] = [
            {"name": v["name"], "mountPath": f"/m/{v['name']}"} for v in volumes
        ]
    meta: Obj = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    spec: Obj = {
        "serviceAccountName": account,
        "containers": [container],
        "terminationGracePeriodSeconds": 0,
    }
    if host_network:
        spec["hostNetwork"] = True
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
