"""The contract later work relies on: the dev cluster is a real control plane.

Scheduling onto KWOK nodes and annotated pod lifecycles, pod logs through the API, the garbage
collector following ownerReferences (Background vs Orphan), scheduler preemption with events,
and RBAC refusing a namespaced identity outside its namespace.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from sparkplane.errors import ForbiddenError, NotFoundError
from sparkplane.kube import Kube, connect
from sparkplane.vocab import owner_reference
from tests.integration.helpers import pod, wait_for


def _phase(kube: Kube, ns: str, name: str) -> str:
    return str(kube.get("v1", "Pod", name, ns).get("status", {}).get("phase", ""))


def test_pod_is_scheduled_runs_then_succeeds_after_annotated_delay(kube: Kube, namespace: str):
    annotations = {"sim.sparkplane.io/outcome": "Succeeded", "sim.sparkplane.io/run-for": "3s"}
    kube.create(pod("driver", annotations=annotations), namespace)

    running = wait_for(
        lambda: (
            (p := kube.get("v1", "Pod", "driver", namespace))["status"].get("phase") == "Running"
            and p
        ),
        timeout=30,
        what="pod Running",
    )
    node = kube.get("v1", "Node", running["spec"]["nodeName"])
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert running["status"]["podIP"]

    done = wait_for(
        lambda: (
            (p := kube.get("v1", "Pod", "driver", namespace))["status"].get("phase") == "Succeeded"
            and p
        ),
        timeout=30,
        what="pod Succeeded",
    )
    term = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert term["exitCode"] == 0
    started = datetime.fromisoformat(term["startedAt"].replace("Z", "+00:00"))
    finished = datetime.fromisoformat(term["finishedAt"].replace("Z", "+00:00"))
    assert (finished - started).total_seconds() >= 2, "the run-for delay was not honoured"


def test_pod_fails_with_annotated_exit_code_and_reason(kube: Kube, namespace: str):
    annotations = {
        "sim.sparkplane.io/outcome": "Failed",
        "sim.sparkplane.io/run-for": "1s",
        "sim.sparkplane.io/exit-code": "42",
        "sim.sparkplane.io/reason": "OOMKilled",
    }
    kube.create(pod("crasher", annotations=annotations), namespace)
    wait_for(lambda: _phase(kube, namespace, "crasher") == "Failed", timeout=30, what="Failed")
    state = kube.get("v1", "Pod", "crasher", namespace)["status"]["containerStatuses"][0]["state"]
    assert state["terminated"]["exitCode"] == 42
    assert state["terminated"]["reason"] == "OOMKilled"


def test_pod_without_outcome_keeps_running_and_waiting_reason_keeps_pending(
    kube: Kube, namespace: str
):
    kube.create(pod("service"), namespace)
    kube.create(
        pod("pull", annotations={"sim.sparkplane.io/waiting-reason": "ImagePullBackOff"}),
        namespace,
    )
    wait_for(lambda: _phase(kube, namespace, "service") == "Running", timeout=30, what="Running")

    def waiting_reason() -> str:
        statuses = kube.get("v1", "Pod", "pull", namespace)["status"].get("containerStatuses")
        return str(statuses[0]["state"]["waiting"]["reason"]) if statuses else ""

    assert wait_for(waiting_reason, timeout=30, what="waiting reason") == "ImagePullBackOff"
    time.sleep(2)
    assert _phase(kube, namespace, "service") == "Running"
    assert _phase(kube, namespace, "pull") == "Pending"


def test_pod_logs_are_served_through_the_api(kube: Kube, namespace: str):
    kube.create(pod("logger"), namespace)
    wait_for(lambda: _phase(kube, namespace, "logger") == "Running", timeout=30, what="Running")
    lines = wait_for(lambda: list(kube.logs("logger", namespace)), timeout=30, what="log lines")
    assert any("Pi is roughly" in line for line in lines)
    assert list(kube.logs("logger", namespace, tail_lines=1)) == [lines[-1]]


def _owned_configmap(kube: Kube, ns: str, owner: dict) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "conf", "ownerReferences": [owner_reference(owner)]},
            "data": {"spark.properties": "spark.app.name=x\n"},
        },
        ns,
    )


def test_garbage_collector_removes_dependents_with_background_propagation(
    kube: Kube, namespace: str
):
    owner = kube.create(pod("driver"), namespace)
    _owned_configmap(kube, namespace, owner)
    kube.delete("v1", "Pod", "driver", namespace, propagation="Background")
    wait_for(
        lambda: kube.get_or_none("v1", "ConfigMap", "conf", namespace) is None,
        timeout=60,
        what="garbage collection of the owned ConfigMap",
    )
    with pytest.raises(NotFoundError):
        kube.get("v1", "Pod", "driver", namespace)


def _collector_has_seen_configmaps(kube: Kube, ns: str) -> None:
    """Wait until the garbage collector's graph holds every ConfigMap created so far.

    Orphaning only reaches the dependents already in the collector's graph: one it learns of
    after its owner is gone has an absent owner, and is collected (the collector's own race, seen
    on a loaded machine). Its graph takes ConfigMap events in order, so once it has collected a
    probe ConfigMap created after ours, it has seen ours too."""
    probe = kube.create(pod("gc-probe"), ns)
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "gc-probe", "ownerReferences": [owner_reference(probe)]},
        },
        ns,
    )
    kube.delete("v1", "Pod", "gc-probe", ns, propagation="Background")
    wait_for(
        lambda: kube.get_or_none("v1", "ConfigMap", "gc-probe", ns) is None,
        timeout=60,
        what="the garbage collector to collect its probe",
    )


def test_orphan_propagation_keeps_dependents(kube: Kube, namespace: str):
    owner = kube.create(pod("driver"), namespace)
    _owned_configmap(kube, namespace, owner)
    _collector_has_seen_configmaps(kube, namespace)
    kube.delete("v1", "Pod", "driver", namespace, propagation="Orphan")
    wait_for(
        lambda: kube.get_or_none("v1", "Pod", "driver", namespace) is None,
        timeout=30,
        what="the pod to be deleted",
    )
    orphan = wait_for(
        lambda: (
            (cm := kube.get("v1", "ConfigMap", "conf", namespace))["metadata"].get(
                "ownerReferences"
            )
            is None
            and cm
        ),
        timeout=30,
        what="the ConfigMap to be orphaned",
    )
    time.sleep(3)  # give the collector a chance to (wrongly) delete it
    assert (
        kube.get("v1", "ConfigMap", "conf", namespace)["metadata"]["uid"]
        == orphan["metadata"]["uid"]
    )


def test_scheduler_preempts_a_lower_priority_pod_and_records_it(
    kube: Kube, namespace: str, small_node: str, priority_classes: tuple[str, str]
):
    low, high = priority_classes
    taint = f"sparkplane.io/{small_node}"
    for i in range(2):
        kube.create(
            pod(f"low-{i}", cpu="1", priority_class=low, node=small_node, tolerate=taint),
            namespace,
        )
    for i in range(2):
        wait_for(
            lambda i=i: _phase(kube, namespace, f"low-{i}") == "Running",
            timeout=30,
            what="low pods Running",
        )

    kube.create(
        pod("urgent", cpu="1", priority_class=high, node=small_node, tolerate=taint), namespace
    )
    urgent = wait_for(
        lambda: (
            (p := kube.get("v1", "Pod", "urgent", namespace))["status"].get("phase") == "Running"
            and p
        ),
        timeout=60,
        what="the high-priority pod to preempt and run",
    )
    assert urgent["spec"]["priority"] == 100000  # the Priority admission plugin resolved it
    remaining = [p["metadata"]["name"] for p in kube.list("v1", "Pod", namespace)]
    assert sorted(remaining) in (["low-0", "urgent"], ["low-1", "urgent"])

    events = wait_for(
        lambda: [e for e in kube.list("v1", "Event", namespace) if e.get("reason") == "Preempted"],
        timeout=30,
        what="a Preempted event",
    )
    victim = events[0]["involvedObject"]["name"]
    assert victim in ("low-0", "low-1") and victim not in remaining
    assert urgent["metadata"]["uid"] in events[0]["message"] or "urgent" in events[0]["message"]


def test_rbac_refuses_a_namespaced_service_account_outside_its_namespace(
    kube: Kube, namespace: str, kubeconfig
):
    other = f"{namespace}-other"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    try:
        kube.create(
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "client"}},
            namespace,
        )
        kube.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "pod-reader"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
            },
            namespace,
        )
        kube.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "client-reads-pods"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "pod-reader",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "client", "namespace": namespace}],
            },
            namespace,
        )
        token = kube.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/client/token",
            body={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 600},
            },
        )["status"]["token"]
        ca = kube.api.configuration.ssl_ca_cert or kube.api.configuration.ca_cert_data
        ca_text = Path(ca).read_text() if ca and not str(ca).startswith("-----") else ca
        as_sa = Kube(connect(server=kube.api.configuration.host, token=token, ca_cert=ca_text))
        assert as_sa.list("v1", "Pod", namespace) == []
        with pytest.raises(ForbiddenError) as refused:
            as_sa.list("v1", "Pod", other)
        assert refused.value.code == 403
        assert "kubectl auth can-i list pods -n" in str(refused.value)
        with pytest.raises(ForbiddenError):
            as_sa.create(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, namespace
            )
        as_sa.close()
    finally:
        kube.delete("v1", "Namespace", other)
