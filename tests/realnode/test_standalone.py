"""Standalone SparkClusters really run on the real node, reconciled by an in-process operator.

A SparkCluster's master and worker start from the Spark image (``spark-class`` running the
Master and the Worker), the worker registers with the master, and the cluster goes
``RunningHealthy``, closed by ``spark.authenticate`` with the secret the operator generated
(issue 26: a pod of another namespace, without the secret or with a guessed one, is refused by
the master, while the same pod given the secret computes Pi; the real node's bridge network
does not enforce NetworkPolicies, so the cluster's policy object is tested on the KWOK suite);
the JWS filter its ``sparkConf`` names (``spark.ui.filters``,
``spark.master.rest.filters``, Spark's own ``org.apache.spark.ui.JWSFilter``) guards the
master's UI and REST server; a SparkApplication with ``spark.master: spark://<cluster>:7077``
computes SparkPi with its executor on the worker; deleting the SparkCluster removes its pods.
A master that exits for good fails the cluster, whether it never started (``SchedulingFailure``)
or broke while healthy (``Failed``); both end ``ResourceReleased`` with their pods gone.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane.kube import Kube
from sparkplane.kube.portforward import open_stream
from sparkplane.operator.core.states import history_states
from sparkplane.operator.deploy.install import install_crds
from sparkplane_devcluster.images import SPARK_PI_CLASS, SPARK_PI_JAR
from tests.integration.helpers import wait_for
from tests.integration.operator_helpers import running_operator
from tests.realnode.sparkapps import SPARK_IMAGE, cli, driver_pod, pod_logs, spec, write

API = "spark.apache.org/v1"
JWS = "org.apache.spark.ui.JWSFilter"
KEY = b"sparkplane-standalone-test-key-of-32-bytes-or-more"
BAD_HEAP = {"SPARK_DAEMON_MEMORY": "plenty"}  # the JVM refuses -Xmxplenty and exits 1


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jws(key: bytes) -> str:
    """An HS256 JWS signed with ``key``: what JWSFilter wants as ``Authorization: Bearer``."""
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps({"sub": "sparkplane-test"}).encode())
    signature = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(signature)}"


def _daemon(role: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A master/worker spec sized for the 2-core node (merged into the operator's container)."""
    container: dict[str, Any] = {
        "name": role,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "requests": {"cpu": "200m", "memory": "512Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        },
        "env": [
            {"name": k, "value": v}
            for k, v in {"SPARK_DAEMON_MEMORY": "256m", **(env or {})}.items()
        ],
    }
    return {"statefulSetSpec": {"template": {"spec": {"containers": [container]}}}}


def _cluster(
    name: str,
    namespace: str,
    *,
    workers: int = 1,
    conf: dict[str, str] | None = None,
    master_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "SparkCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runtimeVersions": {"sparkVersion": "4.0.1", "scalaVersion": "2.13"},
            "sparkConf": {"spark.kubernetes.container.image": SPARK_IMAGE, **(conf or {})},
            "clusterTolerations": {
                "instanceConfig": {
                    "initWorkers": workers,
                    "minWorkers": workers,
                    "maxWorkers": workers,
                }
            },
            "masterSpec": _daemon("master", master_env),
            "workerSpec": _daemon("worker"),
        },
    }


def _summary(cr: dict[str, Any] | None) -> str | None:
    state = ((cr or {}).get("status") or {}).get("currentState") or {}
    return state.get("currentStateSummary")


def _wait(
    kube: Kube, kind: str, namespace: str, name: str, states: set[str], timeout: float
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        cr = kube.get_or_none(API, kind, name, namespace)
        return cr if _summary(cr) in states else None

    found: dict[str, Any] = wait_for(
        check, timeout=timeout, what=f"{kind} {namespace}/{name} in {states}", interval=1
    )
    return found


def _http(
    kube: Kube, namespace: str, pod: str, port: int, path: str, token: str | None = None
) -> tuple[int, str]:
    """GET ``path`` from ``pod:port`` through a port-forward stream: (status, body)."""
    stream = open_stream(kube, pod, namespace, port)
    stream.settimeout(30)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    stream.sendall(f"GET {path} HTTP/1.0\r\nHost: localhost\r\n{auth}\r\n".encode())
    data = b""
    try:
        while chunk := stream.recv(65536):
            data += chunk
            head, sep, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                None,
            )
            if sep and length is not None and len(body) >= length:
                break
    except TimeoutError:
        pass
    finally:
        stream.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/"), data[:500]
    return int(head.split()[1]), body.decode(errors="replace")


def _pods(kube: Kube, namespace: str, cluster: str) -> list[dict[str, Any]]:
    selector = f"spark.operator/spark-cluster-name={cluster}"
    return kube.list("v1", "Pod", namespace, label_selector=selector)


def _gone(kube: Kube, namespace: str, cluster: str, timeout: float = 90) -> None:
    wait_for(
        lambda: (
            not _pods(kube, namespace, cluster)
            and not any(
                kube.get_or_none("apps/v1", "StatefulSet", f"{cluster}-{role}", namespace)
                for role in ("master", "worker")
            )
        ),
        timeout=timeout,
        what=f"the pods and StatefulSets of {namespace}/{cluster} gone",
    )


@pytest.fixture
def operator(kube: Kube, namespace: str) -> Iterator[str]:
    install_crds(kube)
    with running_operator(kube, namespace, simulate=False):
        yield namespace


def test_standalone_cluster_runs_sparkpi_behind_its_jws_filter(
    kube: Kube, kubeconfig: Path, operator: str, tmp_path: Path
) -> None:
    ns = operator
    key = _b64(KEY)
    conf = {
        "spark.ui.filters": JWS,
        "spark.master.rest.enabled": "true",
        "spark.master.rest.host": "0.0.0.0",  # port-forward reaches the pod's loopback
        "spark.master.rest.filters": JWS,
        f"spark.{JWS}.param.secretKey": key,
    }
    kube.create(_cluster("sc", ns, conf=conf))
    cr = _wait(kube, "SparkCluster", ns, "sc", {"RunningHealthy", "ResourceReleased"}, 180)
    assert _summary(cr) == "RunningHealthy", cr.get("status")
    token = _jws(KEY)
    # the master's UI and REST server answer only with a token the filter verifies
    assert _http(kube, ns, "sc-master-0", 8080, "/json/")[0] == 403
    assert _http(kube, ns, "sc-master-0", 8080, "/json/", _jws(b"x" * 32 + KEY))[0] == 403
    code, body = _http(kube, ns, "sc-master-0", 8080, "/json/", token)
    assert code == 200, body[:500]
    assert json.loads(body)["status"] == "ALIVE"

    def registered() -> dict[str, Any] | None:  # Ready = listening; registering follows
        got: dict[str, Any] = json.loads(_http(kube, ns, "sc-master-0", 8080, "/json/", token)[1])
        return got if got["aliveworkers"] == 1 else None

    master = wait_for(registered, timeout=60, what="the worker registered", interval=2)
    (worker,) = master["workers"]
    assert (worker["state"], worker["cores"], worker["memory"]) == ("ALIVE", 1, 1024)
    rest = "/v1/submissions/status/none"
    assert _http(kube, ns, "sc-master-0", 6066, rest)[0] == 403
    code, body = _http(kube, ns, "sc-master-0", 6066, rest, token)
    assert code != 403 and "SubmissionStatusResponse" in body, (code, body[:500])
    assert "Registering worker" in pod_logs(kube, ns, "sc-master-0")

    # a SparkApplication submitted to the cluster: its executor is the worker's, not a pod
    url = f"spark://sc-master-svc.{ns}.svc:7077"
    body_app = spec("pi-standalone", ns, args=["4"], executors=1, conf={"spark.master": url})
    body_app["spec"]["applicationTolerations"] = {"resourceRetainPolicy": "Always"}
    cli(kubeconfig, "submit", "-f", str(write(tmp_path, body_app)), "--mode", "operator")
    app = _wait(
        kube,
        "SparkApplication",
        ns,
        "pi-standalone",
        {"TerminatedWithoutReleaseResources", "ResourceReleased"},
        240,
    )
    assert "Succeeded" in history_states(app["status"]), app["status"]
    driver = driver_pod(kube, ns, "pi-standalone")
    assert driver is not None
    logs = pod_logs(kube, ns, driver["metadata"]["name"])
    assert "Pi is roughly 3.1" in logs
    assert url.removeprefix("spark://").split(".")[0] in logs  # it talked to the master
    assert not kube.list("v1", "Pod", ns, label_selector="spark-role=executor")
    done = json.loads(_http(kube, ns, "sc-master-0", 8080, "/json/", token)[1])
    (finished,) = done["completedapps"]
    assert finished["state"] == "FINISHED", finished
    assert "Asked to launch executor" in pod_logs(kube, ns, "sc-worker-0")

    # deleting the SparkCluster removes everything it owns, pods included
    kube.delete(API, "SparkCluster", "sc", ns)
    _gone(kube, ns, "sc")


def _submitter(name: str, url: str, auth: list[str], env: list[dict[str, Any]]) -> dict[str, Any]:
    """A pod running SparkPi in client mode against the master ``url`` (what an attacker does)."""
    confs = " ".join(
        f"--conf {c}"
        for c in [
            "spark.driver.host=$POD_IP",  # the master and executors connect back to the pod
            "spark.driver.memory=512m",
            "spark.executor.memory=512m",
            "spark.cores.max=1",
            *auth,
        ]
    )
    script = (
        f"exec /opt/spark/bin/spark-submit --master {url} --deploy-mode client {confs} "
        f"--class {SPARK_PI_CLASS} {SPARK_PI_JAR.removeprefix('local://')} 2"
    )
    ip = {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"sparkplane.io/spark-cluster": "sc"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": SPARK_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", script],
                    "env": [ip, *env],
                    "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}},
                }
            ],
        },
    }


def _tenants_are_refused(kube: Kube, ns: str, url: str) -> None:
    """Tenant B (its own namespace: no secret, or a guessed one) is refused by tenant A's master;
    the same pod given A's secret (the control: the probe itself works) computes Pi."""
    other = f"{ns}-b"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        wait_for(lambda: kube.get_or_none("v1", "ServiceAccount", "default", other),
                 timeout=30, what=f"service account {other}/default")  # fmt: skip
        secret = {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "sc-spark-auth",
                                                                     "key": "secret"}}}  # fmt: skip
        with_secret = ["spark.authenticate=true", "spark.authenticate.secret=$SECRET"]
        guessed = ["spark.authenticate=true", "spark.authenticate.secret=guess"]
        probes = {
            (ns, "control"): _submitter("control", url, with_secret, [secret]),
            (other, "open"): _submitter("open", url, [], []),
            (other, "guess"): _submitter("guess", url, guessed, []),
        }
        for (where, _), body in probes.items():
            kube.create(body, namespace=where)

        def ended(where: str, name: str) -> str | None:
            phase = kube.get("v1", "Pod", name, where).get("status", {}).get("phase")
            return phase if phase in ("Succeeded", "Failed") else None

        for where, name in probes:
            try:
                phase = wait_for(lambda w=where, n=name: ended(w, n), timeout=240,
                                 what=f"probe {where}/{name} ended", interval=2)  # fmt: skip
            finally:
                logs = pod_logs(kube, where, name)
                print(f"--- {where}/{name}:\n{logs[-4000:]}")
            if name == "control":
                assert phase == "Succeeded" and "Pi is roughly 3.1" in logs, logs[-3000:]
            else:
                assert phase == "Failed" and "Pi is roughly" not in logs, logs[-3000:]
                assert "All masters are unresponsive" in logs, logs[-3000:]
    finally:
        kube.delete("v1", "Namespace", other)


@pytest.mark.timeout(600)
def test_another_namespace_is_refused_by_the_master(kube: Kube, operator: str) -> None:
    """Issue 26, finding 4: tenant B ran code in tenant A's worker through the master."""
    ns = operator
    kube.create(_cluster("sc", ns))
    _wait(kube, "SparkCluster", ns, "sc", {"RunningHealthy"}, 180)
    wait_for(lambda: "Registering worker" in pod_logs(kube, ns, "sc-master-0"), timeout=60,
             what="the worker registered")  # fmt: skip
    _tenants_are_refused(kube, ns, f"spark://sc-master-svc.{ns}.svc:7077")
    master = pod_logs(kube, ns, "sc-master-0")
    assert master.count("Registering app") == 1, master[-3000:]  # the control's only
    launched = {
        line.split("Asked to launch executor ", 1)[1].split("/", 1)[0]
        for line in pod_logs(kube, ns, "sc-worker-0").splitlines()
        if "Asked to launch executor " in line
    }
    assert len(launched) == 1, launched  # executors of the control's app only


def test_a_master_that_exits_fails_its_cluster(kube: Kube, operator: str) -> None:
    """Broken from the start → SchedulingFailure; broken while healthy → Failed. Both released."""
    ns = operator
    kube.create(_cluster("never", ns, workers=0, master_env=BAD_HEAP))
    kube.create(_cluster("later", ns, workers=0))
    _wait(kube, "SparkCluster", ns, "later", {"RunningHealthy"}, 180)
    # someone breaks the healthy master: the StatefulSet rolls it into a crash loop
    env = [{"name": k, "value": v} for k, v in BAD_HEAP.items()]
    template = {"spec": {"containers": [{"name": "master", "env": env}]}}
    patch = {"spec": {"template": template}}
    kube.patch("apps/v1", "StatefulSet", "later-master", patch, ns, patch_type="strategic")
    for name, failed in (("never", "SchedulingFailure"), ("later", "Failed")):
        cr = _wait(kube, "SparkCluster", ns, name, {"ResourceReleased"}, 180)
        states = history_states(cr["status"])
        assert states[-2:] == [failed, "ResourceReleased"], states
        assert ("RunningHealthy" in states) == (name == "later"), states
        message = json.dumps(cr["status"])
        assert "container master exited 1" in message, message
        _gone(kube, ns, name)
