"""The CLI as spark-submit and kubectl users expect it, on the real cluster (issue 11).

Each test runs ``sparkplane`` as a subprocess: spark-submit argument shapes, kubectl's
namespace rules and output formats, errors as one message with a documented exit code, the
whole CLI under the least-privilege identity ``sparkplane rbac client`` creates, and apps
that stay visible after they were preempted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import yaml

from sparkplane.kube import Kube
from tests.integration.helpers import wait_for
from tests.integration.test_cli import JAR, PI, _spec, run

IMAGE = "apache/spark:4.0.1"


def _driver(kube: Kube, namespace: str) -> dict:
    pods = kube.list("v1", "Pod", namespace, label_selector="spark-role=driver")
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def test_spark_submit_argv_shapes(kubeconfig, kube: Kube, namespace, tmp_path):
    props = tmp_path / "spark-defaults.conf"
    props.write_text(
        "# defaults\nspark.executor.memory 3g\nspark.driver.memory=1g\nnot.spark ignored\n"
    )
    server = kube.api.configuration.host
    proc = run(
        kubeconfig,
        "submit",
        "-n",
        namespace,
        "--master",
        f"k8s://{server}",
        "--deploy-mode",
        "cluster",
        "--verbose",
        "--properties-file",
        str(props),
        "--name",
        "argv-shapes",
        "--class",
        "org.apache.spark.examples.SparkPi",
        "--conf",
        f"spark.kubernetes.container.image={IMAGE}",
        "--driver-memory",
        "2g",
        "--driver-java-options",
        "-Dlog4j.configuration=file:/x -Dother=1",
        "--conf",
        "spark.kubernetes.driver.label.run={{APP_ID}}",
        JAR,
        "-n",
        "5",
        "--limit",
        "3",
        "-h",
    )
    assert "parsed spec" in proc.stderr  # --verbose
    pod = _driver(kube, namespace)
    args = pod["spec"]["containers"][0]["args"]
    assert args[args.index(JAR) + 1 :] == ["-n", "5", "--limit", "3", "-h"]
    labels = pod["metadata"]["labels"]
    assert labels["run"] == labels["spark-app-selector"]  # {{APP_ID}} substituted
    conf_maps = kube.list("v1", "ConfigMap", namespace)
    props_text = next(
        c["data"]["spark.properties"] for c in conf_maps if "spark.properties" in c.get("data", {})
    )
    assert "spark.driver.extraJavaOptions=-Dlog4j.configuration\\=file\\:/x -Dother\\=1" in (
        props_text
    ) or "-Dlog4j.configuration=file:/x -Dother=1" in props_text.replace("\\", "")
    assert "spark.executor.memory=3g" in props_text  # from --properties-file
    assert "spark.driver.memory=2g" in props_text  # the flag beats the file
    assert "not.spark" not in props_text


def test_master_selects_the_cluster_or_is_refused(kubeconfig, kube: Kube, namespace):
    base = ["render", "-n", namespace, "--name", "m", "--image", IMAGE, "--class", "A", JAR]
    yarn = run(kubeconfig, *base[:1], "--master", "yarn", *base[1:], check=2)
    assert "--master" in yarn.stderr and "not a Kubernetes master" in yarn.stderr
    local = run(kubeconfig, "submit", "--master", "local[*]", *base[1:], check=2)
    assert "not a Kubernetes master" in local.stderr
    other = run(
        kubeconfig, "submit", "--master", "k8s://https://10.255.0.1:6443", *base[1:], check=2
    )
    assert "no credentials for https://10.255.0.1:6443" in other.stderr
    assert kube.list("v1", "Pod", namespace) == []
    host = kube.api.configuration.host.removeprefix("https://")
    run(kubeconfig, "submit", "--master", f"k8s://{host}", *base[1:])  # https:// implied
    assert _driver(kube, namespace)


def test_namespace_rules(kubeconfig, kube: Kube, namespace, tmp_path):
    spec = _spec(tmp_path, namespace)  # metadata.namespace = namespace
    clash = run(kubeconfig, "submit", "-f", str(spec), "-n", "elsewhere", check=2)
    assert "does not match" in clash.stderr and "elsewhere" in clash.stderr
    assert kube.list("v1", "Pod", namespace) == []
    missing = run(
        kubeconfig,
        "submit",
        "-n",
        f"nope-{uuid.uuid4().hex[:6]}",
        "--name",
        "x",
        "--image",
        IMAGE,
        "--class",
        "A",
        JAR,
        check=5,
    )
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    # the context's namespace is the default, as in kubectl
    ctx_config = tmp_path / "kubeconfig"
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    for ctx in doc["contexts"]:
        ctx["context"]["namespace"] = namespace
    ctx_config.write_text(yaml.safe_dump(doc))
    doc_spec = yaml.safe_load(PI.read_text())
    doc_spec["metadata"].pop("namespace", None)
    plain = tmp_path / "no-ns.yaml"
    plain.write_text(yaml.safe_dump(doc_spec))
    name = run(ctx_config, "submit", "-f", str(plain)).stdout.strip()
    assert _driver(kube, namespace)["metadata"]["name"].startswith(name)
    assert run(ctx_config, "get", "apps", "-o", "name").stdout.strip() == (f"pod/{name}-driver")


def test_errors_are_one_message_with_a_documented_code(kubeconfig, namespace, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    two = tmp_path / "two.yaml"
    two.write_text("a: 1\n---\nb: 2\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    binary = tmp_path / "latin1.yaml"
    binary.write_bytes(b"name: caf\xe9\n")
    for path, text in (
        (empty, "empty"),
        (two, "2 YAML documents"),
        (bad, "bad.yaml:2: not valid YAML"),
        (binary, "not UTF-8"),
        (tmp_path / "absent.yaml", "does not exist"),
    ):
        proc = run(kubeconfig, "submit", "-f", str(path), "-n", namespace, check=2)
        assert text in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    bogus = run(kubeconfig, "wait", "x", "-n", namespace, "--for", "bogus", check=2)
    assert "unknown condition 'bogus'" in bogus.stderr
    dead = tmp_path / "dead-kubeconfig"
    doc = yaml.safe_load(Path(kubeconfig).read_text())
    doc["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    dead.write_text(yaml.safe_dump(doc))
    down = run(dead, "get", "apps", check=11)
    assert "cannot reach the Kubernetes API server" in down.stderr
    assert "Traceback" not in down.stderr
    assert "Traceback" in run(dead, "get", "apps", "--debug", check=None).stderr


def test_output_is_data_never_markup_and_never_truncated(
    kubeconfig, kube: Kube, namespace, tmp_path
):
    long_name = "a-name-that-is-long-enough-to-be-cut-by-a-fixed-width-table-x"
    name = run(
        kubeconfig,
        "submit",
        "-n",
        namespace,
        "--name",
        long_name,
        "--image",
        IMAGE,
        "--annotation",
        "note=:smile: [bold]x[/bold]",
        "--class",
        "A",
        JAR,
    ).stdout.strip()
    pod = _driver(kube, namespace)
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"ev-{uuid.uuid4().hex[:6]}"},
            "involvedObject": {
                "kind": "Pod",
                "name": pod["metadata"]["name"],
                "namespace": namespace,
            },
            "reason": "Custom",
            "type": "Normal",
            "message": "odd [/x] text [red]:smile:",
        },
        namespace,
    )
    events = run(kubeconfig, "events", name, "-n", namespace).stdout
    assert "odd [/x] text [red]:smile:" in events
    table = run(kubeconfig, "get", "apps", "-A").stdout  # piped: full width
    row = next(line for line in table.splitlines() if namespace in line)
    assert row.split()[1] == name
    rendered = run(
        kubeconfig,
        "render",
        "--name",
        "r",
        "--image",
        IMAGE,
        "--annotation",
        "a=:smile:",
        "--class",
        "A",
        JAR,
    ).stdout
    assert ":smile:" in rendered and "😄" not in rendered
    described = run(kubeconfig, "describe", name, "-n", namespace).stdout
    assert name in described and "Events:" in described and "Custom" in described


def test_get_watch_prints_one_line_or_object_per_change(
    kubeconfig, kube: Kube, namespace, tmp_path
):
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    watchers = [
        subprocess.Popen(
            [sys.executable, "-m", "sparkplane.cli", "get", "apps", "-n", namespace, "-w", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for extra in ([], ["-o", "json"])
    ]
    try:
        wait_for(lambda: kube.list("v1", "Pod", namespace) == [], timeout=5, what="empty")
        import time

        time.sleep(2)  # both watches are established
        name = run(
            kubeconfig, "submit", "-f", str(_spec(tmp_path, namespace, "2s")), "-n", namespace
        ).stdout.strip()
        run(kubeconfig, "wait", name, "-n", namespace, "--timeout", "60")
        time.sleep(2)
    finally:
        outputs = []
        for w in watchers:
            w.terminate()
            outputs.append(w.communicate(timeout=10)[0])
    header, *rows = [line for line in outputs[0].splitlines() if line.strip()]
    assert header.split()[:3] == ["NAME", "MODE", "STATE"]
    assert all(line.split()[0] == name for line in rows), rows  # rows, no repeated tables
    assert any("Succeeded" in line for line in rows)
    objects = [json.loads(line) for line in outputs[1].splitlines() if line.strip()]
    assert objects and all(o["name"] == name for o in objects)
    assert objects[-1]["state"]["phase"] == "Succeeded"
    assert len({json.dumps(o["state"]) for o in objects}) == len(objects)  # changes only


def test_selector_and_name_output(kubeconfig, namespace):
    base = ["--image", IMAGE, "--class", "A", JAR]
    a = run(kubeconfig, "submit", "-n", namespace, "--name", "sel-a", "--label", "team=data", *base)
    run(kubeconfig, "submit", "-n", namespace, "--name", "sel-b", "--label", "team=web", *base)
    only = run(kubeconfig, "get", "apps", "-n", namespace, "-l", "team=data", "-o", "name")
    assert only.stdout.split() == [f"pod/{a.stdout.strip()}-driver"]
