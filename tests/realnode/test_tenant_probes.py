"""Issue 26 on the real node, where a real pod must run: the termination-log exfiltration through
an init container (the operator with its shipped RBAC writes the driver's status into the
SparkApplication; the tenant reads the CR), and a real hostile driver: a pod running with the
driver service account's mounted, pod-bound token that tries to create the hostile pods itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for
from tests.realnode.sparkapps import cli, driver_pod, spec, submit, write
from tests.tenant_probes import (
    ALLOWED_SECRET,
    API,
    IMAGE,
    NEIGHBOUR_CONF,
    NEIGHBOUR_SECRET,
    Tenant,
    _app,
    _executor,
    _pod,
)


@pytest.fixture
def tenant(kube: Kube, namespace: str, tmp_path: Path) -> Iterator[Tenant]:
    made = Tenant(kube, namespace, tmp_path).setup()
    yield made
    made.close()


def test_an_init_containers_termination_message_never_reaches_the_cr(tenant: Tenant) -> None:
    ns = tenant.namespace
    secret_value = f"{ALLOWED_SECRET}-value"
    template = {
        "spec": {
            "initContainers": [
                {
                    "name": "steal",
                    "image": IMAGE,
                    "command": ["sh", "-c", "cat /creds/value > /dev/termination-log"],
                    "volumeMounts": [{"name": "creds", "mountPath": "/creds"}],
                }
            ],
            "containers": [{"name": "spark-kubernetes-driver"}],
            "volumes": [{"name": "creds", "secret": {"secretName": ALLOWED_SECRET}}],
        }
    }
    app = _app("exfil", template=template)
    app["spec"]["mainClass"] = "org.sparkplane.NoSuchClass"  # the driver fails at once
    kubelet_saw: list[str] = []  # the termination messages the kubelet reported, as they came
    with tenant.operator():
        tenant.identities["apps_only"].create(app, namespace=ns)

        def observed() -> dict[str, Any] | None:
            for pod in tenant.admin.list("v1", "Pod", ns, label_selector="spark-role=driver"):
                for cs in (pod.get("status") or {}).get("initContainerStatuses") or ():
                    ended = (cs.get("state") or {}).get("terminated") or {}
                    if cs.get("name") == "steal" and ended.get("message"):
                        kubelet_saw.append(str(ended["message"]))
            cr = tenant.identities["apps_only"].get(API, "SparkApplication", "exfil", ns)
            history = ((cr.get("status") or {}).get("stateTransitionHistory")) or {}
            ended = [
                e["lastObservedDriverStatus"]
                for e in history.values()
                if (e.get("lastObservedDriverStatus") or {}).get("initContainerStatuses")
            ]
            done = [s for s in ended if s.get("phase") in ("Failed", "Succeeded")]
            return cr if done else None

        cr = wait_for(observed, timeout=240, what="the failed driver's status in the history")
    # the init container really ran and wrote the Secret where the kubelet reads it
    assert any(secret_value in m for m in kubelet_saw), kubelet_saw
    # ... and the tenant, reading its SparkApplication, does not see it
    text = json.dumps(cr)
    assert secret_value not in text
    for entry in cr["status"]["stateTransitionHistory"].values():
        status = entry.get("lastObservedDriverStatus") or {}
        for cs in status.get("initContainerStatuses") or ():
            assert "message" not in ((cs.get("state") or {}).get("terminated") or {})
        assert len(str(entry.get("message", "")).encode()) < 2048


HOSTILE_DRIVER = r"""
import json, os, ssl, urllib.request
SA = "/var/run/secrets/kubernetes.io/serviceaccount"
token = open(f"{SA}/token").read()
ctx = ssl.create_default_context(cafile=f"{SA}/ca.crt")
ns = open(f"{SA}/namespace").read()
base = f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"
def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=20) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
_, me = call("GET", f"/api/v1/namespaces/{ns}/pods/{os.environ['HOSTNAME']}")
uid = me["metadata"]["uid"]
probes = json.loads(os.environ["PROBES"].replace("SELF-UID", uid))
for name, pod in probes["create"].items():
    code, answer = call("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    print(json.dumps({"probe": name, "code": code, "message": answer.get("message", "")[:300]}))
for name, victim in probes["delete"].items():
    code, answer = call("DELETE", f"/api/v1/namespaces/{ns}/pods/{victim}")
    print(json.dumps({"probe": name, "code": code, "message": answer.get("message", "")[:300]}))
code, _ = call("POST", f"/api/v1/namespaces/{ns}/pods", probes["own"])
print(json.dumps({"probe": "own executor: create", "code": code}))
code, _ = call("DELETE", f"/api/v1/namespaces/{ns}/pods/{probes['own']['metadata']['name']}")
print(json.dumps({"probe": "own executor: delete", "code": code}))
"""


def test_a_real_hostile_driver_creates_only_its_own_executors(tenant: Tenant) -> None:
    ns = tenant.namespace
    me = {
        "metadata": {
            "name": "evil-driver",
            "uid": "SELF-UID",
            "labels": {"spark-role": "driver", "spark-app-selector": "spark-evil"},
        }
    }
    exec_conf = [{"name": "c", "configMap": {"name": "spark-exec-evil-conf-map"}}]
    create = {
        "executor mounting a neighbour's spark.properties": _executor(
            ns, "e-conf", me, volumes=[{"name": "c", "configMap": {"name": NEIGHBOUR_CONF}}]
        ),
        "executor mounting a Secret": _executor(
            ns, "e-secret", me, volumes=[{"name": "s", "secret": {"secretName": NEIGHBOUR_SECRET}}]
        ),
        "executor as sparkplane-client": _executor(ns, "e-client", me, account="sparkplane-client"),
        "hostPath / executor": _executor(
            ns, "e-root", me, volumes=[{"name": "r", "hostPath": {"path": "/"}}]
        ),
        "privileged hostNetwork executor": _executor(
            ns, "e-priv", me, privileged=True, host_network=True
        ),
        "pod it does not own": _pod(ns, "e-unowned", labels={"spark-role": "executor"}),
    }
    probes = {
        "create": create,
        "delete": {"delete a neighbour's executor": tenant.neighbour_executor["metadata"]["name"]},
        "own": _executor(ns, "evil", me, volumes=exec_conf),
    }
    evil = _pod(ns, "evil-driver", labels=me["metadata"]["labels"])
    container = evil["spec"]["containers"][0]
    container["command"] = ["python3", "-c", HOSTILE_DRIVER]
    container["env"] = [{"name": "PROBES", "value": json.dumps(probes)}]
    evil["spec"]["restartPolicy"] = "Never"
    tenant.identities["client"].create(evil, namespace=ns)

    def finished() -> str | None:
        phase = (tenant.admin.get("v1", "Pod", "evil-driver", ns).get("status") or {}).get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = wait_for(finished, timeout=180, what="the hostile driver to finish")
    lines = list(tenant.admin.logs("evil-driver", ns))
    results = {r["probe"]: r for r in (json.loads(x) for x in lines if x.startswith("{"))}
    assert phase == "Succeeded", lines
    report = json.dumps(results, indent=1)
    for name in [*create, "delete a neighbour's executor"]:
        assert results[name]["code"] == 403, report
        message = results[name]["message"]  # the admission policy's, or Pod Security's first
        assert "ValidatingAdmissionPolicy" in message or "PodSecurity" in message, report
    assert results["own executor: create"]["code"] == 201, report
    assert results["own executor: delete"]["code"] == 200, report
    for pod in create.values():
        assert tenant.admin.get_or_none("v1", "Pod", pod["metadata"]["name"], ns) is None
    neighbour = tenant.neighbour_executor["metadata"]["name"]
    assert tenant.admin.get_or_none("v1", "Pod", neighbour, ns) is not None


def test_a_real_sparkpi_runs_in_a_tenant_namespace_submitted_by_the_client(
    tenant: Tenant, tmp_path: Path
) -> None:
    """The policy holds the real driver's executors and still lets Spark work: the client
    submits, the driver (pod-bound token) creates its executors and cleans up after itself."""
    ns, client = tenant.namespace, tenant.kubeconfigs["sparkplane-client"]
    conf = {"spark.kubernetes.authenticate.driver.serviceAccountName": "spark-driver"}
    path = write(tmp_path, spec("tenant-pi", ns, args=["20"], executors=1, conf=conf))
    name = submit(client, "-f", str(path), "-n", ns)
    driver = wait_for(lambda: driver_pod(tenant.admin, ns, name), timeout=30, what="driver")
    executors = wait_for(
        lambda: tenant.admin.list(
            "v1",
            "Pod",
            ns,
            label_selector="spark-role=executor,"
            f"spark-app-selector={driver['metadata']['labels']['spark-app-selector']}",
        ),
        timeout=180,
        what="the executor the real driver created",
    )
    assert executors[0]["metadata"]["ownerReferences"][0]["uid"] == driver["metadata"]["uid"]
    cli(client, "wait", name, "-n", ns, "--timeout", "300")
    logs = cli(client, "logs", name, "-n", ns).stdout
    assert "Pi is roughly 3.1" in logs
    refused = [
        str(e.get("message"))
        for e in tenant.admin.list("v1", "Event", ns)
        if "ValidatingAdmissionPolicy" in str(e.get("message"))
    ]
    assert refused == []
