"""Every application command of the CLI, run as a user would (a subprocess) on the real cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for

ROOT = Path(__file__).parents[2]
PI = ROOT / "examples" / "spark-pi.yaml"
JAR = "local:///opt/spark/examples/jars/spark-examples_2.13-4.0.1.jar"


def run(
    kubeconfig: Path | None,
    *args: str,
    check: int | None = 0,
    timeout: float = 120,
    env_extra: dict[str, str] | None = None,
):
    env = (
        dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
        if kubeconfig
        else {
            k: v for k, v in os.environ.items() if k not in ("SPARKPLANE_KUBECONFIG", "KUBECONFIG")
        }
    )
    env.update(env_extra or {})
    proc = subprocess.run(
        [sys.executable, "-m", "sparkplane.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if check is not None:
        assert proc.returncode == check, (
            f"{args}: rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def _spec(tmp_path: Path, namespace: str, run_for: str = "2s", outcome: str = "Succeeded") -> Path:
    doc = yaml.safe_load(PI.read_text())
    doc["metadata"]["namespace"] = namespace
    ann = doc["spec"]["driverSpec"]["podTemplateSpec"]["metadata"]["annotations"]
    ann.update({"sim.sparkplane.io/run-for": run_for, "sim.sparkplane.io/outcome": outcome})
    path = tmp_path / f"spec-{run_for}-{outcome}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_render_creates_nothing_and_matches_dry_run(kubeconfig, kube: Kube, namespace, tmp_path):
    rendered = run(
        kubeconfig,
        "render",
        "-f",
        str(PI),
        "-n",
        namespace,
        "-o",
        "json",
        "--submission-id",
        "same",
    )
    objs = json.loads(rendered.stdout)
    assert [o["kind"] for o in objs][:1] == ["Pod"]
    assert {"ConfigMap", "Service", "Ingress"} <= {o["kind"] for o in objs}
    dry = run(
        kubeconfig,
        "submit",
        "--dry-run",
        "-f",
        str(PI),
        "-n",
        namespace,
        "-o",
        "json",
        "--submission-id",
        "same",
    )
    strip = lambda objs: [  # noqa: E731 - the submit time is the only moving part
        {k: v for k, v in o.items() if k != "data"} for o in objs
    ]
    assert strip(json.loads(dry.stdout)) == strip(objs)
    assert kube.list("v1", "Pod", namespace) == []


def test_render_operator_mode_and_flags(kubeconfig, tmp_path):
    cr = yaml.safe_load(run(kubeconfig, "render", "-f", str(PI), "--mode", "operator").stdout)
    assert cr["apiVersion"] == "spark.apache.org/v1" and cr["kind"] == "SparkApplication"
    objs = list(
        yaml.safe_load_all(
            run(
                kubeconfig,
                "render",
                "--name",
                "flags",
                "--image",
                "apache/spark:4.0.1",
                "--class",
                "org.apache.spark.examples.SparkPi",
                "--num-executors",
                "3",
                JAR,
                "10",
            ).stdout
        )
    )
    props = next(o for o in objs if o["kind"] == "ConfigMap")["data"]["spark.properties"]
    assert "spark.executor.instances=3" in props
    template = tmp_path / "driver-template.yaml"
    template.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"labels": {"team": "blue"}},
                "spec": {"containers": [{"name": "main"}, {"name": "sidecar", "image": "busybox"}]},
            }
        )
    )
    pod = next(
        yaml.safe_load_all(
            run(
                kubeconfig,
                "render",
                "--name",
                "tpl",
                "--image",
                "apache/spark:4.0.1",
                "--conf",
                f"spark.kubernetes.driver.podTemplateFile={template}",
                "--class",
                "org.apache.spark.examples.SparkPi",
                JAR,
            ).stdout
        )
    )
    assert pod["metadata"]["labels"]["team"] == "blue"  # spark-submit argv works unchanged
    # as in Spark: the first template container becomes the driver, the others stay sidecars
    assert [c["name"] for c in pod["spec"]["containers"]] == ["sidecar", "main"]


def test_bad_input_names_the_field_and_creates_nothing(kubeconfig, kube: Kube, namespace, tmp_path):
    doc = yaml.safe_load(PI.read_text())
    doc["spec"]["driver"] = {"memory": "12 parsecs"}
    doc["spec"]["sparkConff"] = {}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    proc = run(kubeconfig, "submit", "-f", str(bad), "-n", namespace, check=2)
    assert "driver.memory" in proc.stderr and "sparkConff" in proc.stderr
    assert "nothing was created" in proc.stderr
    assert kube.list("v1", "Pod", namespace) == []


def test_submit_wait_get_logs_events_kill(kubeconfig, kube: Kube, namespace, tmp_path):
    name = run(
        kubeconfig, "submit", "-f", str(_spec(tmp_path, namespace, "1h")), "-n", namespace
    ).stdout.strip()
    run(kubeconfig, "wait", name, "--for", "running", "-n", namespace, "--timeout", "60")
    listed = json.loads(run(kubeconfig, "get", "apps", "-n", namespace, "-o", "json").stdout)
    assert [a["name"] for a in listed] == [name]
    assert listed[0]["state"]["phase"] == "Running" and listed[0]["mode"] == "native"
    table = run(kubeconfig, "get", "apps", "-A", "-o", "wide").stdout
    assert name in table and namespace in table and "APP ID" in table
    logs = run(kubeconfig, "logs", name, "-n", namespace, "--tail", "1").stdout
    assert logs.strip()
    events = run(kubeconfig, "events", name, "-n", namespace).stdout
    assert "Scheduled" in events
    timeout = run(kubeconfig, "wait", name, "-n", namespace, "--timeout", "2", check=9)
    assert "did not reach finished" in timeout.stderr
    archive = {"SPARKPLANE_LOG_ARCHIVE": str(tmp_path / "archive")}
    run(kubeconfig, "kill", name, "-n", namespace, "--wait", env_extra=archive)
    assert kube.list("v1", "ConfigMap", namespace, label_selector="spark-role") == []
    kept = run(kubeconfig, "logs", name, "-n", namespace, env_extra=archive)
    assert kept.stdout.strip() and "from the archive, pod deleted at" in kept.stderr
    off = {"SPARKPLANE_LOG_ARCHIVE": "off"}
    missing = run(kubeconfig, "logs", name, "-n", namespace, check=8, env_extra=off)
    assert "no Spark application" in missing.stderr


def test_submit_output_is_the_created_objects(kubeconfig, kube: Kube, namespace, tmp_path):
    spec = str(_spec(tmp_path, namespace, "1h"))
    proc = run(kubeconfig, "submit", "-f", spec, "-n", namespace, "-o", "json")
    listed = json.loads(proc.stdout)  # exact JSON on stdout, nothing else
    assert listed["apiVersion"] == "v1" and listed["kind"] == "List"
    items = listed["items"]
    pod = next(o for o in items if o["kind"] == "Pod")
    assert {"Pod", "ConfigMap", "Service"} <= {o["kind"] for o in items}
    for obj in items:  # as the API server returned them: uid, resourceVersion, owners
        meta = obj["metadata"]
        assert meta["uid"] and meta["resourceVersion"]
        live = kube.get(obj["apiVersion"], obj["kind"], meta["name"], namespace)
        assert live["metadata"]["uid"] == meta["uid"]
        if obj is not pod:
            assert meta["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert "\x1b" not in proc.stdout and "submitted" in proc.stderr
    as_yaml = yaml.safe_load(
        run(kubeconfig, "submit", "-f", spec, "-n", namespace, "-o", "yaml").stdout
    )
    assert as_yaml["kind"] == "List" and as_yaml["items"][0]["metadata"]["uid"]
    names = run(kubeconfig, "submit", "-f", spec, "-n", namespace, "-o", "name").stdout.split()
    assert sum(n.startswith("pod/") for n in names) == 1 and "configmap/" in " ".join(names)
    assert len(names) == len(items)
    pods = len(kube.list("v1", "Pod", namespace))
    refused = run(kubeconfig, "submit", "-f", spec, "-n", namespace, "-o", "wide", check=2)
    assert "--output" in refused.stderr and len(kube.list("v1", "Pod", namespace)) == pods


def test_wait_exit_code_for_a_failed_app(kubeconfig, namespace, tmp_path):
    name = run(
        kubeconfig, "submit", "-f", str(_spec(tmp_path, namespace, "1s", "Failed")), "-n", namespace
    ).stdout.strip()
    proc = run(kubeconfig, "wait", name, "-n", namespace, "--timeout", "60", check=1)
    assert "Failed" in proc.stderr


def test_submit_template_with_set(kubeconfig, kube: Kube, namespace):
    name = run(
        kubeconfig,
        "submit",
        "--template",
        str(ROOT / "examples" / "template"),
        "--values",
        str(ROOT / "examples" / "template" / "values.env"),
        "--set",
        f"NAMESPACE={namespace}",
        "--set",
        "RUN_FOR=1s",
        "--set",
        "NAME_SUFFIX=t1",
        "-n",
        namespace,
        "--wait",
        "--timeout",
        "60",
    )
    assert name.stdout.strip()
    driver = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")[0]
    owned = [
        o
        for o in kube.list("v1", "ConfigMap", namespace)
        if (o["metadata"].get("ownerReferences") or [{}])[0].get("uid") == driver["metadata"]["uid"]
    ]
    assert owned, "the template's ConfigMap is owned by the driver"


def test_gc_dry_run_then_delete_as_the_cronjob_identity(
    kubeconfig, kube: Kube, namespace, tmp_path
):
    bundle = list(
        yaml.safe_load_all(
            run(kubeconfig, "gc", "--cronjob", "-n", namespace, "--older-than", "2h").stdout
        )
    )
    assert [o["kind"] for o in bundle] == ["ServiceAccount", "Role", "RoleBinding", "CronJob"]
    created = [kube.create(o, namespace) for o in bundle]  # the API server accepts them all
    pod_spec = created[-1]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod_spec["containers"][0]["args"][-3:] == ["--older-than", "2h", "--in-cluster"]
    account = created[0]["metadata"]["name"]
    assert pod_spec["serviceAccountName"] == account

    name = run(
        kubeconfig,
        "submit",
        "-f",
        str(_spec(tmp_path, namespace, "0s")),
        "-n",
        namespace,
        "--ttl",
        "1s",
        "--wait",
        "--timeout",
        "60",
    ).stdout.strip()
    time.sleep(1.5)
    dry = run(kubeconfig, "gc", "-n", namespace, "--dry-run")
    assert "would delete" in dry.stdout
    assert kube.get_or_none("v1", "Pod", f"{name}-driver", namespace) is not None

    # run the clean-up as the CronJob would: only the gc service account's rights
    token = kube.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )["status"]["token"]
    as_gc = {
        "APISERVER": kube.api.configuration.host,
        "TOKEN": token,
        "CACERT": kube.api.configuration.ca_cert_data,
    }
    run(None, "gc", "-n", namespace, env_extra=as_gc)
    wait_for(
        lambda: kube.get_or_none("v1", "Pod", f"{name}-driver", namespace) is None,
        timeout=30,
        what="driver deleted by gc",
    )
    refused = run(None, "gc", "-n", "default", "--dry-run", env_extra=as_gc, check=6)
    assert "forbidden" in refused.stderr


def test_ui_prints_ingress_address_or_port_forwards(kubeconfig, kube: Kube, namespace, tmp_path):
    name = run(
        kubeconfig, "submit", "-f", str(_spec(tmp_path, namespace, "1h")), "-n", namespace
    ).stdout.strip()
    run(kubeconfig, "wait", name, "--for", "running", "-n", namespace, "--timeout", "60")
    with socket.create_server(("127.0.0.1", 0)) as holder:  # another program holds the port
        held = str(holder.getsockname()[1])
        busy = run(kubeconfig, "ui", name, "-n", namespace, "--port", held, check=2, timeout=30)
    assert busy.stdout == ""  # no URL of whatever holds the port
    assert busy.stderr.count("\n") == 1 and "Traceback" not in busy.stderr
    assert f"local port {held}" in busy.stderr and "--port" in busy.stderr
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkplane.cli", "ui", name, "-n", namespace, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        banner = proc.stderr.readline()
        assert "forwarding" in banner
        port = int(banner.split("http://127.0.0.1:")[1].split()[0])
        page = wait_for(
            lambda: _get(f"http://127.0.0.1:{port}/"), timeout=20, what="the forwarded UI"
        )
        assert "Spark UI" in page
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    ingress = kube.list("networking.k8s.io/v1", "Ingress", namespace)[0]
    kube.patch(
        "networking.k8s.io/v1",
        "Ingress",
        ingress["metadata"]["name"],
        {"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}},
        namespace,
        subresource="status",
    )
    url = run(kubeconfig, "ui", name, "-n", namespace, "--wait", "10").stdout.strip()
    assert (url.startswith("http") and "lb.example" in url) or "spark-pi" in url


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.read().decode()
    except OSError:
        return ""


_ = threading


def test_executor_logs_and_get_apps_watch(kubeconfig, kube: Kube, namespace, tmp_path):
    from sparkplane_devcluster.simulator import DriverSimulator

    simulator = DriverSimulator(kube, namespace).start()  # plays the driver creating executors
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    watcher = subprocess.Popen(
        [sys.executable, "-m", "sparkplane.cli", "get", "apps", "-n", namespace, "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        name = run(
            kubeconfig, "submit", "-f", str(_spec(tmp_path, namespace, "1h")), "-n", namespace
        ).stdout.strip()
        wait_for(
            lambda: kube.list("v1", "Pod", namespace, label_selector="spark-role=executor"),
            timeout=60,
            what="simulated executors",
        )
        apps = json.loads(run(kubeconfig, "get", "apps", "-n", namespace, "-o", "json").stdout)
        assert sum(apps[0]["state"]["executors"].values()) >= 1
        wait_for(
            lambda: (
                run(kubeconfig, "logs", name, "-n", namespace, "--executor", "1", check=None).stdout
            ),
            timeout=30,
            what="executor log",
        )
        missing = run(kubeconfig, "logs", name, "-n", namespace, "--executor", "99", check=8)
        assert "executor 99" in missing.stderr
        run(kubeconfig, "kill", name, "-n", namespace)
        time.sleep(3)
    finally:
        simulator.stop()
        watcher.terminate()
        printed, _ = watcher.communicate(timeout=10)
    assert name in printed
    assert "Running" in printed and "Killed" in printed  # the watch printed the changes
