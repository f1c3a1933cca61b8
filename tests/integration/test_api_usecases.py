"""The Python API is the CLI's use-case layer (issue 11), on the real cluster.

The same calls work from a plain script and inside a running event loop (a notebook cell):
``submit`` with a staging server too, which used to call ``asyncio.run``. ``AsyncSparkPlane``
awaits the same core; many apps are awaited at once (``as_completed``/``wait_all``). Every input
the CLI takes is an API argument (spark-submit ``argv``, a ``template`` directory); the
namespace comes from the kubeconfig context; ``mode="kubeflow"`` creates a
``sparkoperator.k8s.io/v1beta2`` SparkApplication (against sparkplane's CRD); and a
preempted app stays visible after its driver is gone, naming the preemptor pod.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from sparkplane import AsyncSparkPlane, Description, Event, SparkPlane
from sparkplane.kube import Kube
from sparkplane.model.phase import AppPhase, Reason
from sparkplane.operator.deploy.install import install_crds
from tests.integration.helpers import wait_for
from tests.integration.test_cli import JAR, run
from tests.integration.test_lifecycle import _spec
from tests.integration.test_staging import (  # noqa: F401 - fixtures
    _app,
    local_deps,
    settings,
    staging_url,
)

ROOT = Path(__file__).parents[2]


@pytest.fixture
def sp(kubeconfig: Path, namespace: str) -> Iterator[SparkPlane]:
    with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as client:
        yield client


@pytest.fixture
def kubeflow_crd(kube: Kube) -> None:
    """sparkplane's own v1beta2 CRD (``operator install`` installs it beside Apache's); it
    stays: other modules install the same CRDs."""
    install_crds(kube)


def test_sync_api_inside_a_running_event_loop_and_async_api(
    kubeconfig: Path,
    namespace: str,
    staging_url: str,  # noqa: F811 - the fixture
    local_deps: dict[str, Path],  # noqa: F811
):
    async def notebook_cell() -> list[str]:
        with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as sp:
            staged = sp.submit(_app(namespace, local_deps), staging_server=staging_url)
            assert staged.driver_pod and any(o.startswith("Secret/") for o in staged.objects)
            sp.kill(staged, wait=True, timeout=90)
            aio = AsyncSparkPlane(sp)
            apps = [await aio.submit(_spec(namespace, run_for=f"{i}s")) for i in (1, 3)]
            ticks = 0

            async def ticker() -> None:  # the loop keeps running while we wait
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.1)

            tick = asyncio.create_task(ticker())
            finished: list[str] = []
            done = await aio.wait_all(apps, timeout=90, on_done=lambda a: finished.append(a.name))
            tick.cancel()
            assert ticks > 5
            assert {a.name for a in done} == {a.name for a in apps} == set(finished)
            assert all(a.state.phase is AppPhase.SUCCEEDED for a in done)
            listed = await aio.list()
            return sorted(a.name for a in listed)

    names = asyncio.run(notebook_cell())
    assert len(names) == 2


def test_describe_and_events_are_typed_in_both_apis_and_the_cli(
    sp: SparkPlane, kubeconfig: Path, namespace: str
):
    submitted = sp.submit(_spec(namespace, run_for="1h"))
    assert "created=" not in repr(submitted) and submitted.created  # the objects, not shown
    app = sp.wait(submitted, "running", timeout=60)
    assert repr(app) == (
        f"App(name='{app.name}', namespace='{namespace}', mode='native', phase='Running')"
    )
    assert app.owner["metadata"]["managedFields"]  # still there, just not printed
    described = wait_for(
        lambda: (d := sp.describe(submitted)).events and d, timeout=30, what="events"
    )
    assert isinstance(described, Description) and described.app.name == submitted.name
    assert described.app.state.phase is AppPhase.RUNNING
    assert any(o.startswith("ConfigMap/") for o in described.objects)
    assert all(isinstance(e, Event) for e in described.events)
    scheduled = next(e for e in described.events if e.reason == "Scheduled")
    assert scheduled.object == f"Pod/{submitted.driver_pod}" and scheduled.time is not None
    assert scheduled.raw["involvedObject"]["name"] == submitted.driver_pod
    events = sp.events(submitted)
    assert [e.name for e in events][: len(described.events)] == [e.name for e in described.events]

    async def both() -> tuple[Description, list[Event]]:
        aio = AsyncSparkPlane(sp)
        return await aio.describe(submitted), await aio.events(submitted)

    adescribed, aevents = asyncio.run(both())
    assert isinstance(adescribed, Description) and all(isinstance(e, Event) for e in aevents)
    text = run(kubeconfig, "describe", submitted.name, "-n", namespace).stdout
    assert text.splitlines()[0].split() == ["Name:", submitted.name]
    assert "Running" in text and "Scheduled" in text and f"Pod/{submitted.driver_pod}" in text
    sp.kill(submitted, wait=True, timeout=90)


def test_as_completed_yields_in_finishing_order(sp: SparkPlane, namespace: str):
    slow = sp.submit(_spec(namespace, run_for="6s"))
    fast = sp.submit(_spec(namespace, run_for="1s"))
    order = [a.name for a in sp.as_completed([slow, fast], timeout=90)]
    assert order == [fast.name, slow.name]


def test_every_cli_input_is_an_api_argument(sp: SparkPlane, kube: Kube, namespace: str):
    submitted = sp.submit(
        argv=[
            "--name",
            "from-argv",
            "--image",
            "apache/spark:4.0.1",
            "--class",
            "A",
            JAR,
            "-n",
            "5",
        ]
    )
    pod = kube.get("v1", "Pod", submitted.driver_pod, namespace)
    assert pod["spec"]["containers"][0]["args"][-3:] == [JAR, "-n", "5"]
    values = {"APP_NAME": "spark-pi", "SERVICE_ACCOUNT_NAME": "default"}
    templated = sp.submit(template=ROOT / "examples" / "template", set=values, submission_id="t-1")
    assert templated.namespace == namespace  # ${NAMESPACE} defaults to the client's
    again = sp.submit(template=ROOT / "examples" / "template", set=values, submission_id="t-1")
    assert again.existing and again.name == templated.name  # NAME_SUFFIX from the id


def test_namespace_comes_from_the_context(kubeconfig: Path, namespace: str, tmp_path: Path):
    doc = yaml.safe_load(kubeconfig.read_text())
    for ctx in doc["contexts"]:
        ctx["context"]["namespace"] = namespace
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    with SparkPlane.connect(kubeconfig=path) as sp:
        assert sp.namespace == namespace
        assert sp.submit(_spec_without_namespace()).namespace == namespace


def _spec_without_namespace() -> dict:
    doc = _spec("x")
    doc["metadata"].pop("namespace")
    return doc


def test_kubeflow_mode_in_the_api_and_the_cli(
    sp: SparkPlane, kube: Kube, kubeconfig: Path, namespace: str, kubeflow_crd: None
):
    submitted = sp.submit(_spec(namespace), mode="kubeflow")
    cr = kube.get("sparkoperator.k8s.io/v1beta2", "SparkApplication", submitted.name, namespace)
    assert cr["spec"]["type"] == "Scala" and cr["spec"]["mode"] == "cluster"
    assert cr["spec"]["mainApplicationFile"].endswith(".jar")
    assert sp.get(submitted.name).mode.value == "kubeflow"
    name = f"kf-{uuid.uuid4().hex[:6]}"
    run(
        kubeconfig,
        "submit",
        "--mode",
        "kubeflow",
        "-n",
        namespace,
        "--name",
        name,
        "--image",
        "apache/spark:4.0.1",
        "--class",
        "org.apache.spark.examples.SparkPi",
        JAR,
        "10",
    )
    cli_cr = kube.get("sparkoperator.k8s.io/v1beta2", "SparkApplication", name, namespace)
    assert cli_cr["spec"]["arguments"] == ["10"] and cli_cr["spec"]["sparkVersion"] == "4.0.1"
    assert kube.list("v1", "Pod", namespace) == []  # not a native app
    listed = run(kubeconfig, "get", "apps", "-n", namespace, "-o", "json").stdout
    assert '"mode": "kubeflow"' in listed


def test_preempted_app_stays_visible_after_its_driver_is_gone(
    sp: SparkPlane,
    kube: Kube,
    kubeconfig: Path,
    namespace: str,
    small_node: str,
    priority_classes: tuple[str, str],
):
    node, (low, high) = small_node, priority_classes

    def pinned(priority: str) -> dict:
        doc = _spec(namespace, run_for="1h")
        doc["spec"]["driver"] = {"cores": 2, "memory": "1g"}
        # the whole small node: not the example's 200m request (sized for the real node)
        doc["spec"].get("sparkConf", {}).pop("spark.kubernetes.driver.request.cores", None)
        doc["spec"]["priorityClassName"] = priority
        doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
        doc["spec"]["tolerations"] = [
            {"key": f"sparkplane.io/{node}", "operator": "Exists", "effect": "NoSchedule"}
        ]
        return doc

    victim = sp.submit(pinned(low))
    sp.wait(victim, "running", timeout=30)
    urgent = sp.submit(pinned(high))
    sp.wait(urgent, "running", timeout=60)
    wait_for(
        lambda: kube.get_or_none("v1", "Pod", victim.driver_pod, namespace) is None,
        timeout=60,
        what="the preempted driver pod is gone",
    )
    with SparkPlane.connect(kubeconfig=kubeconfig, namespace=namespace) as fresh:
        app = fresh.get(victim.name)
        assert app.state.reason == Reason.PREEMPTED
        assert app.state.preemptor == f"{namespace}/{urgent.driver_pod}"
        listed = {a.name: a for a in fresh.list()}
        assert listed[victim.name].state.reason == Reason.PREEMPTED
        assert listed[victim.name].state.preemptor == f"{namespace}/{urgent.driver_pod}"
    events = run(kubeconfig, "events", victim.name, "-n", namespace).stdout
    assert "Preempted" in events
    wide = run(kubeconfig, "get", "apps", "-n", namespace, "-o", "wide").stdout
    assert f"{namespace}/{urgent.driver_pod}" in wide
    run(kubeconfig, "wait", victim.name, "-n", namespace, "--timeout", "10", check=1)


def test_render_dry_run_and_submit_resolve_the_spec_alike(
    sp: SparkPlane, kube: Kube, kubeconfig: Path, namespace: str
):
    """One resolve step: the namespace's event-log defaults (its ``sparkplane-history``
    ConfigMap) reach ``render``, ``submit --dry-run`` and ``submit``, in every mode."""
    from sparkplane.history import server as history

    store = history.EventLogStore(log_dir="file:/tmp/events", host_path=None, default=True)
    kube.apply(history.to_configmap(namespace, store))
    wanted = history.event_log_conf(store)
    pi = str(ROOT / "examples" / "spark-pi.yaml")

    def conf_of(objects: list[dict]) -> dict[str, str]:
        for obj in objects:
            if obj["kind"] == "ConfigMap" and "spark.properties" in obj.get("data", {}):
                text = obj["data"]["spark.properties"].replace("\\:", ":").replace("\\=", "=")
                return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln)
            if obj["kind"] == "SparkApplication":
                return dict(obj["spec"].get("sparkConf") or {})
        raise AssertionError("no Spark conf in the rendered objects")

    def subset(conf: dict[str, str]) -> dict[str, str | None]:
        return {k: conf.get(k) for k in wanted}

    for mode in ("native", "operator"):
        assert subset(conf_of(sp.render(_spec(namespace), mode=mode))) == wanted, mode
        for argv in (["render"], ["submit", "--dry-run"]):
            out = run(kubeconfig, *argv, "-f", pi, "-n", namespace, "--mode", mode, "-o", "json")
            printed = json.loads(out.stdout)
            if isinstance(printed, dict):
                printed = printed["items"] if printed.get("kind") == "List" else [printed]
            objects = printed
            assert subset(conf_of(objects)) == wanted, (mode, argv)
    submitted = sp.submit(_spec(namespace, run_for="1s"))
    pod = kube.get("v1", "Pod", submitted.driver_pod, namespace)
    conf_map = next(
        v["configMap"]["name"]
        for v in pod["spec"]["volumes"]
        if v.get("configMap", {}).get("name", "").endswith("-conf-map")
    )
    assert subset(conf_of([kube.get("v1", "ConfigMap", conf_map, namespace)])) == wanted
