"""The sparkplane demo (`make demo`): real Spark on the dev cluster's real node.

1. `dev-cluster up --real-node` (the demo's cluster: default state dir, ports from 16443): the
   control plane, the KWOK fake nodes (tainted) and one real node (kubelet, containerd, runc);
2. SparkPi natively on the JVM and in Python: the real "Pi is roughly ...", the executors the
   real driver creates (owned by the driver pod), the real Spark UI through `sparkplane ui`;
3. an app whose code and data are local files (examples/local-deps): a staging server on the
   node's host address, and the init-container's own log of the download;
4. SparkPi in operator mode, the operator running IN the cluster from deploy/ (sparkplane image);
5. a kill, after which the garbage collector leaves nothing.
Where the host cannot run a real node (host.preflight), it says why and runs the simulated demo
(examples/demo_simulated.py).

Every section checks what it shows: a section that does not see what it should stops the demo with
one line naming it (exit 1; ``--debug`` adds the traceback), so ``make test`` runs this very file
(tests/realnode/test_demo.py) and a passing demo means each section really happened. The demo
namespace is made anew on every run, so the demo can be run again on the same cluster.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparkplane import Mode, SparkPlane
from sparkplane.kube import Kube, connect
from sparkplane.operator.deploy.install import apply_objects, install_crds
from sparkplane.staging.process import staging_server
from sparkplane.usecases.kill import remaining_objects
from sparkplane_devcluster import DevCluster, DevClusterSettings
from sparkplane_devcluster.cluster import ready_namespace
from sparkplane_devcluster.node import host
from sparkplane_devcluster.node.plan import NodePlan

# a pipe (a log file, the demo's test) gets whole lines: never a cell cut to the terminal's width
console = Console() if sys.stdout.isatty() else Console(width=400, soft_wrap=True)
NAMESPACE = "sparkplane-demo"
EXAMPLES = Path(__file__).parent
DEPLOY = EXAMPLES.parent / "deploy"


class DemoFailed(Exception):
    """A section of the demo did not see what it shows."""


def check(ok: object, what: str) -> None:
    """Stop the demo with ``what`` unless ``ok``."""
    if not ok:
        raise DemoFailed(what)


def say(text: str) -> None:
    console.print(f"\n[bold]$ {text}[/bold]")


def data(text: str, indent: str = "  ") -> None:
    console.print(indent + text, markup=False, highlight=False)


def table(*columns: str, rows: list[list[str]]) -> None:
    out = Table(*columns, box=None, pad_edge=False, header_style="bold")
    for row in rows:
        out.add_row(*(Text(cell) for cell in row))
    console.print(out)


def show_nodes(kube: Kube) -> None:
    rows = []
    for node in kube.list("v1", "Node"):
        taints = ",".join(t["key"] for t in node["spec"].get("taints", [])) or "-"
        runtime = node["status"]["nodeInfo"]["containerRuntimeVersion"]
        cap = node["status"]["allocatable"]
        rows.append([node["metadata"]["name"], runtime, cap["cpu"], taints])
    table("NODE", "RUNTIME", "CPU", "TAINTS", rows=rows)


def prepare(kube: Kube) -> None:
    """The demo namespace, made anew (an earlier run's apps would clash with this run's); its
    default service account holds the driver role (executors)."""
    if kube.get_or_none("v1", "Namespace", NAMESPACE) is not None:
        data(f"deleting the namespace {NAMESPACE} of an earlier run")
        kube.delete("v1", "Namespace", NAMESPACE)
        deadline = time.monotonic() + 180
        while kube.get_or_none("v1", "Namespace", NAMESPACE) is not None:
            check(time.monotonic() < deadline, f"namespace {NAMESPACE} was not deleted in 180 s")
            time.sleep(1)
    ready_namespace(kube, NAMESPACE)  # as `dev-cluster up` readies default and spark-jobs


def owner(obj: dict[str, Any]) -> str:
    ref = obj["metadata"]["ownerReferences"][0]
    return f"{ref['kind']}/{ref['name']}"


def show_executors(kube: Kube, drivers: list[str], timeout: float = 180) -> None:
    """The executor pods the real drivers created (one per app here), owned by their driver.

    Every executor seen while polling counts: on a busy machine one app's executor may come
    and go (Spark deletes it when the app ends) before the other app's appears."""
    wanted = {f"Pod/{d}" for d in drivers}
    deadline = time.monotonic() + timeout
    seen: dict[str, dict[str, Any]] = {}
    while not {owner(p) for p in seen.values()} >= wanted and time.monotonic() < deadline:
        time.sleep(1)
        for p in kube.list("v1", "Pod", NAMESPACE, label_selector="spark-role=executor"):
            if p["metadata"].get("ownerReferences"):
                seen[p["metadata"]["name"]] = p  # its newest copy: bound to its node
    found = sorted(seen.values(), key=lambda p: str(p["metadata"]["name"]))
    rows = [[p["metadata"]["name"], owner(p), p["spec"].get("nodeName") or "-"] for p in found]
    table("EXECUTOR POD", "OWNER", "NODE", rows=rows)
    owners = {owner(p) for p in found}
    check(
        owners >= wanted,
        f"executors owned by each driver pod ({', '.join(drivers)}); saw {sorted(owners)}",
    )


def pi_line(sp: SparkPlane, name: str) -> str:
    lines = [line for line in sp.logs(name) if "Pi is roughly" in line]
    check(lines, f"{name}: no 'Pi is roughly' line in the driver log")
    return lines[-1]


def spark_ui(kubeconfig: Path, name: str, timeout: float = 90) -> None:
    """`sparkplane ui NAME` (a port-forward to the driver); fetch the jobs page."""
    env = dict(os.environ, SPARKPLANE_KUBECONFIG=str(kubeconfig))
    cmd = [sys.executable, "-m", "sparkplane.cli", "ui", name, "-n", NAMESPACE, "--port", "0"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        check(url.startswith("http://"), f"`sparkplane ui {name}` printed no URL ({url!r})")
        data(f"sparkplane ui {name} -> {url}")
        title = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/jobs/", timeout=5) as resp:
                    page = resp.read().decode()
            except OSError:
                time.sleep(1)
                continue
            jobs = re.findall(r'href="[^"]*jobs/job/\?id=\d+"[^>]*>\s*([^<]+?)\s*<', page)
            title = re.search(r"<title>(.*?)</title>", page, re.S) or title
            if jobs:
                data(f"title: {title.group(1).strip() if title else '?'}")
                for section in re.findall(r"((?:Active|Completed) Jobs \(\d+\))", page):
                    data(section)
                data(f"job: {jobs[0]}")
                return
            time.sleep(1)
        check(title, f"the Spark UI of {name} served no page through `sparkplane ui`")
        shown = title.group(1).strip() if title else "?"
        data(f"title: {shown} (the app ended before a job showed)")
    finally:
        proc.terminate()
        proc.wait(10)


def local_deps(kube: Kube, sp: SparkPlane, plan: NodePlan, kubeconfig: Path) -> str:
    """examples/local-deps through a staging server the real node's pods can reach."""
    work = Path(tempfile.mkdtemp(prefix="sparkplane-demo-"))
    upload = secrets.token_urlsafe(32)
    (work / "upload-secrets").write_text(f"demo:{upload}\n")
    serve = ["--host", plan.host_ip, "--port", "0", "--no-fsync"]  # the host address pods reach
    serve += ["--storage-dir", str(work / "bundles"), "--db-path", str(work / "meta.sqlite3")]
    serve += ["--upload-secret-file", str(work / "upload-secrets"), "--kubeconfig", str(kubeconfig)]
    # the admin's client certificate is no token to forward: the upload secret authorises it
    with staging_server(*serve, log=work / "staging.log") as url:
        say(f"sparkplane submit -f examples/local-deps/app.yaml --staging-server {url}")
        doc = yaml.safe_load((EXAMPLES / "local-deps" / "app.yaml").read_text())
        doc["metadata"]["namespace"] = NAMESPACE
        result = sp.submit(
            doc, staging_server=url, staging_base_dir=EXAMPLES / "local-deps", staging_token=upload
        )
        data(f"submitted {result.name}: {', '.join(result.objects)}")
        app = sp.wait(result.name, timeout=300)
        data(f"{app.name}: {app.state.phase}")
    driver = result.driver_pod or ""
    if str(app.state.phase) != "Succeeded":  # what went wrong, before the one-line failure
        for container in ("sparkplane-fetch", None):
            say(f"kubectl logs {driver} {'-c ' + container if container else ''} | tail -40")
            try:
                for line in list(kube.logs(driver, NAMESPACE, container=container))[-40:]:
                    data(line)
            except Exception as err:  # the log itself may be gone
                data(f"(no log: {err})")
    check(
        str(app.state.phase) == "Succeeded",
        f"{result.name} ended {app.state.phase} ({app.state.reason}); "
        f"see `sparkplane logs {result.name} -n {NAMESPACE}`",
    )
    say(f"kubectl logs {driver} -c sparkplane-fetch   # the init-container, before the driver")
    for line in kube.logs(driver, NAMESPACE, container="sparkplane-fetch"):
        data(line)
    say(f"sparkplane logs {result.name}   # word count of the uploaded words.txt")
    counts = [line for line in sp.logs(result.name) if re.match(r"^\w+\s+\d+$", line)]
    for line in counts:
        data(line)
    check(counts, f"{result.name}: no word count in the driver log")
    return result.name


def operator_mode(kube: Kube, sp: SparkPlane) -> str:
    """The operator from deploy/ (CRDs + RBAC + Deployment in the sparkplane image)."""
    say("kubectl apply -f deploy/crds -f deploy/operator/cluster-wide.yaml")
    install_crds(kube)
    docs = yaml.safe_load_all((DEPLOY / "operator" / "cluster-wide.yaml").read_text())
    for done in apply_objects(kube, [d for d in docs if d]):
        data(done)
    ready: list[dict[str, Any]] = []
    deadline = time.monotonic() + 180
    while not ready and time.monotonic() < deadline:
        ready = [
            p
            for p in kube.list("v1", "Pod", "spark-operator")
            if p["status"].get("phase") == "Running"
        ]
        time.sleep(1)
    check(ready, "the operator pod in spark-operator is not Running after 180 s")
    table(
        "OPERATOR POD",
        "IMAGE",
        "NODE",
        rows=[
            [p["metadata"]["name"], p["spec"]["containers"][0]["image"], p["spec"]["nodeName"]]
            for p in ready
        ],
    )
    doc = yaml.safe_load((EXAMPLES / "spark-pi.yaml").read_text())
    doc["metadata"].update(name=f"spark-pi-op-{int(time.time())}", namespace=NAMESPACE)
    say("sparkplane submit -f examples/spark-pi.yaml --mode operator")
    operated = sp.submit(doc, mode=Mode.APACHE)
    sp.wait(operated.name, "running", timeout=180)
    said: list[str] = []
    follow = threading.Thread(  # the driver's log while it lives (released when done)
        target=lambda: said.extend(sp.logs(operated.name, follow=True)), daemon=True
    )
    follow.start()
    app = sp.wait(operated.name, timeout=300)
    follow.join(30)
    pi = [line for line in said if "Pi is roughly" in line]
    check(pi, f"{operated.name}: no 'Pi is roughly' in the driver log (operator mode)")
    data(pi[0])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = sp.get(operated.name).owner.get("status", {})
        if status.get("currentState", {}).get("currentStateSummary") == "ResourceReleased":
            break
        time.sleep(1)
    history = status.get("stateTransitionHistory", {})
    states = [history[k]["currentStateSummary"] for k in sorted(history, key=int)]
    data(f"{app.name}: " + " -> ".join(states))
    check(
        states[-1:] == ["ResourceReleased"] and "Succeeded" in states,
        f"{operated.name} did not succeed and reach ResourceReleased: {' -> '.join(states)}",
    )
    return operated.name


def main() -> int:
    debug = "--debug" in sys.argv[1:]
    try:
        return demo()
    except DemoFailed as err:
        console.print(f"\ndemo FAILED: {err}", markup=False)
        if debug:
            raise
        return 1
    except Exception as err:
        console.print(
            f"\ndemo FAILED: {type(err).__name__}: {err} (run with --debug for the traceback)",
            markup=False,
        )
        if debug:
            raise
        return 1


def demo() -> int:
    problems = host.preflight()
    if problems:
        console.print(
            "This host cannot run a real node (" + "; ".join(problems) + "): running the "
            "SIMULATED demo on KWOK fake nodes instead (no Spark runs).",
            markup=False,
        )
        from demo_simulated import main as simulated

        return simulated()
    # the demo's cluster: the default state dir (or $SPARKPLANE_STATE_DIR), ports from 16443
    settings = DevClusterSettings(real_node=True, start_timeout=300.0)  # $SPARKPLANE_DEV_PORT_BASE
    say("sparkplane dev-cluster up --real-node")
    kubeconfig = DevCluster(settings).up(progress=lambda m: data(f"• {m}"))
    data(f"export KUBECONFIG={kubeconfig}")
    kube = Kube(connect(kubeconfig=kubeconfig))
    say("kubectl get nodes   # KWOK fake nodes are tainted: Spark lands on the real node")
    show_nodes(kube)
    prepare(kube)
    sp = SparkPlane(kube, NAMESPACE)

    say("sparkplane submit -f examples/spark-pi.yaml; sparkplane submit -f examples/python-pi.yaml")
    names, drivers = [], []
    for spec in ("spark-pi.yaml", "python-pi.yaml"):
        doc = yaml.safe_load((EXAMPLES / spec).read_text())
        doc["metadata"]["namespace"] = NAMESPACE
        result = sp.submit(doc)
        data(f"submitted {result.name}: {', '.join(result.objects)}")
        names.append(result.name)
        drivers.append(result.driver_pod or f"{result.name}-driver")
    say("kubectl get pods -l spark-role=executor   # created by the real Spark driver")
    show_executors(kube, drivers)
    say(f"sparkplane ui {names[1]}   # the real Spark UI, through a port-forward")
    sp.wait(names[1], "running", timeout=180)
    spark_ui(kubeconfig, names[1])
    for name in names:
        app = sp.wait(name, timeout=300)
        say(f"sparkplane logs {name} | grep Pi")
        data(f"{pi_line(sp, name)}    ({app.state.phase})")

    plan = DevCluster(settings).node_plan  # the node index this cluster was given
    names.append(local_deps(kube, sp, plan, kubeconfig))
    names.append(operator_mode(kube, sp))

    app = sp.get(names[0])
    uid = app.owner["metadata"]["uid"]
    say(f"sparkplane kill {app.name} --wait")
    data(f"{app.name} owns: {', '.join(remaining_objects(kube, NAMESPACE, {uid}))}")
    sp.kill(app, wait=True)
    left = remaining_objects(kube, NAMESPACE, {uid})
    data(f"left after the garbage collector: {', '.join(left) or 'nothing'}")
    check(not left, f"the kill of {app.name} left {', '.join(left)}")
    say(f"sparkplane get apps -n {NAMESPACE}")
    table(
        "NAME",
        "MODE",
        "STATE",
        rows=[[a.name, a.mode.value, str(a.state.phase)] for a in sp.list() if a.name in names],
    )
    console.print(
        f"\nTry: KUBECONFIG={kubeconfig} sparkplane get apps -n {NAMESPACE}\n"
        "Stop with `sparkplane dev-cluster down`.",
        markup=False,
    )
    sp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
