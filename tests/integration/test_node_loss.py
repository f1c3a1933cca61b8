"""A native ``wait`` over a driver whose node is lost (issue 26, finding 8): the pod is marked as
the node lifecycle controller and the taint manager mark it (``Ready`` False, a
``DisruptionTarget``, ``status.reason: NodeLost``), then its phase becomes ``Unknown``, all
through the status subresource while ``sparkplane wait`` runs. The driver may still run on a
partitioned node, so wait must not report a failure; when the node comes back and the driver
ends, wait ends with that outcome. (The KWOK node itself is not marked NotReady: KWOK's node
stage makes it Ready again within seconds; the pod's status is what the classifier reads.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for

EXAMPLES = Path(__file__).parents[2] / "examples"


def cli(kubeconfig: Path, *args: str, wait: bool = True) -> Any:
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    cmd = [sys.executable, "-m", "sparkplane.cli", *args]
    if not wait:
        return subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def state(kubeconfig: Path, name: str, namespace: str) -> dict[str, Any]:
    proc = cli(kubeconfig, "get", "apps", name, "-n", namespace, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["state"]  # type: ignore[no-any-return]


def test_wait_keeps_waiting_while_the_drivers_node_is_lost(
    kube: Kube, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    doc = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
    ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann.pop("sim.sparkplane.io/outcome")  # runs until it is ended here
    spec = tmp_path / "pi.yaml"
    spec.write_text(yaml.safe_dump(doc))
    submitted = cli(kubeconfig, "submit", "-f", str(spec), "-n", namespace)
    assert submitted.returncode == 0, submitted.stderr
    name = submitted.stdout.strip()

    def running() -> dict[str, Any] | None:
        pods = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
        ready = [
            p
            for p in pods
            if (p.get("status") or {}).get("phase") == "Running"
            and any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p["status"].get("conditions") or ()
            )
        ]
        return ready[0] if ready else None

    driver = wait_for(running, timeout=60, what="a running, ready driver")
    pod, node = driver["metadata"]["name"], driver["spec"]["nodeName"]
    waiting = cli(kubeconfig, "wait", name, "-n", namespace, "--timeout", "120", wait=False)
    err = ""
    try:
        time.sleep(2)  # wait has its watch open
        # the node controller: the pod is not Ready (ContainersReady stays True), then the taint
        # manager's disruption and the "unresponsive" reason
        lost = {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False", "lastTransitionTime": now()},
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "DeletionByTaintManager",
                        "message": "Taint manager: deleting due to NoExecute taint",
                        "lastTransitionTime": now(),
                    },
                ],
                "reason": "NodeLost",
                "message": f"Node {node} which was running pod {pod} is unresponsive",
            }
        }
        kube.patch("v1", "Pod", pod, lost, namespace, patch_type="strategic", subresource="status")
        time.sleep(4)
        assert waiting.poll() is None, waiting.communicate()
        shown = state(kubeconfig, name, namespace)
        assert (shown["phase"], shown["reason"]) == ("Running", "Unknown"), shown
        assert f"Node {node} which was running pod {pod} is unresponsive" in shown["message"]
        assert "the driver may still run" in shown["message"]

        unknown = {"status": {"phase": "Unknown"}}
        kube.patch("v1", "Pod", pod, unknown, namespace, subresource="status")
        time.sleep(3)
        assert waiting.poll() is None, waiting.communicate()
        assert state(kubeconfig, name, namespace)["reason"] == "Unknown"

        # the node is back and the driver has finished meanwhile: a real end
        container = driver["status"]["containerStatuses"][0]["name"]
        done = {
            "status": {
                "phase": "Succeeded",
                "reason": None,
                "message": None,
                "conditions": [
                    {"type": "Ready", "status": "False", "reason": "PodCompleted"},
                    {"type": "ContainersReady", "status": "False", "reason": "PodCompleted"},
                    {"type": "DisruptionTarget", "status": "False", "reason": "NodeReady"},
                ],
                "containerStatuses": [
                    {
                        "name": container,
                        "image": driver["status"]["containerStatuses"][0]["image"],
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {
                            "running": None,
                            "terminated": {
                                "exitCode": 0,
                                "reason": "Completed",
                                "finishedAt": now(),
                            },
                        },
                    }
                ],
            }
        }
        kube.patch("v1", "Pod", pod, done, namespace, patch_type="strategic", subresource="status")
        _, err = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.communicate()
    assert waiting.returncode == 0, err
    assert f"{name}: Succeeded" in err
