"""A Spark driver SIMULATOR for the dev cluster: it creates the executors a real driver would.

In the dev cluster no container runs (KWOK plays the kubelet), so no Spark driver ever asks for
executors. This simulator stands in for that part of the driver, so the operator's executor
thresholds are exercised with pods it did not create itself. It is NOT Spark and never runs in a
real cluster; every pod it makes carries the annotation ``sparkplane.io/simulated-by``.

For each Running driver pod (label ``spark-role=driver``) it reads the driver's spark.properties
ConfigMap and, as Spark's ``ExecutorPodsAllocator`` would, creates ``spark.executor.instances``
executor pods (default 2) named ``<prefix>-exec-<id>`` (ids from 1), labelled
``spark-app-selector``, ``spark-app-name``, ``spark-role=executor``, ``spark-exec-id``,
``spark-exec-resourceprofile-id`` and ``spark.kubernetes.executor.label.*``, owned by the driver
pod (``controller: true``), built on the executor pod template when there is one. When the driver
ends (or is deleted) it deletes them, like ``spark.kubernetes.executor.deleteOnTermination``.

Test knobs, as annotations on the driver pod:

* ``sim.sparkplane.io/executors: "3"`` overrides the executor count;
* ``sim.sparkplane.io/executor-<knob>`` becomes ``sim.sparkplane.io/<knob>`` on the executors
  (``executor-waiting-reason: ImagePullBackOff`` keeps them Pending, ``executor-outcome: Failed``
  with ``executor-run-for: 3s`` makes them die);
* the driver's other ``sim.sparkplane.io/*`` annotations are copied, except the driver's own
  lifecycle (``outcome``, ``run-for``, ``exit-code``, ``reason``, ``waiting-reason``).

Lost executors are not replaced (a real driver would ask for new ones). :func:`plan_executors`
is pure; :class:`DriverSimulator` is the thread that does the I/O. Run it with
``sparkplane dev-cluster simulate`` or from tests.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import yaml

from sparkplane.errors import AlreadyExistsError, KubeError, NotFoundError
from sparkplane.kube import Kube
from sparkplane.kube.informer import Informer
from sparkplane.render.properties import load as load_properties
from sparkplane.spec.naming import app_name_label, resource_name_prefix
from sparkplane.spec.quantities import memory_mib

log = logging.getLogger(__name__)
SIM = "sim.sparkplane.io/"
SIMULATED_BY = "sparkplane.io/simulated-by"
MARK = "sparkplane driver simulator (dev cluster only; not Spark)"
_DRIVER_LIFECYCLE = ("outcome", "run-for", "exit-code", "reason", "waiting-reason")
K8S = "spark.kubernetes"
Obj = dict[str, Any]


def _prefixed(props: Mapping[str, str], prefix: str, app_id: str, exec_id: int) -> dict[str, str]:
    return {
        k[len(prefix) :]: v.replace("{{APP_ID}}", app_id).replace("{{EXECUTOR_ID}}", str(exec_id))
        for k, v in props.items()
        if k.startswith(prefix)
    }


def executor_count(driver: Mapping[str, Any], props: Mapping[str, str]) -> int:
    """How many executors the simulated driver asks for."""
    annotations = (driver.get("metadata") or {}).get("annotations") or {}
    if f"{SIM}executors" in annotations:
        return int(annotations[f"{SIM}executors"])
    if props.get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        for key in (
            "spark.dynamicAllocation.initialExecutors",
            "spark.dynamicAllocation.minExecutors",
        ):
            if key in props:
                return int(props[key])
        return 0
    return int(props.get("spark.executor.instances", "2"))


def sim_annotations(driver: Mapping[str, Any]) -> dict[str, str]:
    """The ``sim.sparkplane.io/*`` annotations an executor of ``driver`` gets."""
    annotations = (driver.get("metadata") or {}).get("annotations") or {}
    out: dict[str, str] = {}
    for key, value in annotations.items():
        if not key.startswith(SIM) or key == f"{SIM}executors":
            continue
        knob = key[len(SIM) :]
        if not knob.startswith("executor-") and knob not in _DRIVER_LIFECYCLE:
            out[key] = value
    for key, value in annotations.items():
        if key.startswith(f"{SIM}executor-"):
            out[SIM + key[len(f"{SIM}executor-") :]] = value
    return out


def plan_executors(
    driver: Mapping[str, Any], props: Mapping[str, str], template: Mapping[str, Any] | None = None
) -> list[Obj]:
    """The executor pods a Spark driver with ``props`` would create (pure)."""
    meta = driver["metadata"]
    labels = meta.get("labels") or {}
    app_id = props.get("spark.app.id") or labels.get("spark-app-selector", "")
    app_name = props.get("spark.app.name", meta["name"])
    unique = hashlib.sha256(str(meta.get("uid", meta["name"])).encode()).hexdigest()[:16]
    prefix = props.get(f"{K8S}.executor.podNamePrefix") or resource_name_prefix(app_name, unique)
    memory = memory_mib(props.get("spark.executor.memory", "1g"))
    factor = float(
        props.get(
            "spark.executor.memoryOverheadFactor", props.get(f"{K8S}.memoryOverheadFactor", "0.1")
        )
    )
    overhead = (
        memory_mib(props["spark.executor.memoryOverhead"])
        if "spark.executor.memoryOverhead" in props
        else max(int(memory * factor), 384)
    )
    cores = props.get(f"{K8S}.executor.request.cores") or props.get("spark.executor.cores", "1")
    image = props.get(f"{K8S}.executor.container.image") or props.get(f"{K8S}.container.image", "")
    service_account = props.get(f"{K8S}.authenticate.executor.serviceAccountName") or (
        driver.get("spec") or {}
    ).get("serviceAccountName")
    node_selector = {
        **_prefixed(props, f"{K8S}.node.selector.", app_id, 0),
        **_prefixed(props, f"{K8S}.executor.node.selector.", app_id, 0),
    }
    pods = []
    for exec_id in range(1, executor_count(driver, props) + 1):
        base: Obj = yaml.safe_load(yaml.safe_dump(dict(template or {}))) or {}
        pod_meta = base.get("metadata") or {}
        name = f"{prefix}-exec-{exec_id}"
        pod_labels = {
            **(pod_meta.get("labels") or {}),
            **_prefixed(props, f"{K8S}.executor.label.", app_id, exec_id),
            "spark-exec-id": str(exec_id),
            "spark-app-selector": app_id,
            "spark-app-name": app_name_label(app_name),
            "spark-role": "executor",
            "spark-exec-resourceprofile-id": "0",
        }
        if "spark-version" in labels:
            pod_labels["spark-version"] = labels["spark-version"]
        annotations = {
            **(pod_meta.get("annotations") or {}),
            **_prefixed(props, f"{K8S}.executor.annotation.", app_id, exec_id),
            **sim_annotations(driver),
            SIMULATED_BY: MARK,
        }
        spec = base.get("spec") or {}
        containers = list(spec.get("containers") or [])
        main = dict(containers.pop(0)) if containers else {}
        main.setdefault("name", "spark-kubernetes-executor")
        main.setdefault("image", image)
        main["args"] = ["executor"]
        main["env"] = [
            *(main.get("env") or []),
            {"name": "SPARK_EXECUTOR_ID", "value": str(exec_id)},
            {"name": "SPARK_APPLICATION_ID", "value": app_id},
            {"name": "SPARK_EXECUTOR_CORES", "value": str(props.get("spark.executor.cores", "1"))},
            {"name": "SPARK_EXECUTOR_MEMORY", "value": f"{memory}m"},
        ]
        main["resources"] = {
            "requests": {"cpu": str(cores), "memory": f"{memory + overhead}Mi"},
            "limits": {"memory": f"{memory + overhead}Mi"},
        }
        spec["containers"] = [main, *containers]
        spec["restartPolicy"] = "Never"
        spec["hostname"] = name[-63:].lstrip("-.")
        if service_account and not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = service_account
        if node_selector:
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **node_selector}
        owner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "uid": meta.get("uid"),
            "controller": True,
        }
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": meta.get("namespace"),
                    "labels": pod_labels,
                    "annotations": annotations,
                    "ownerReferences": [*(pod_meta.get("ownerReferences") or []), owner],
                },
                "spec": spec,
            }
        )
    return pods


def _volume_config_map(driver: Mapping[str, Any], volume: str) -> str | None:
    for vol in (driver.get("spec") or {}).get("volumes") or []:
        if vol.get("name") == volume and vol.get("configMap"):
            return str(vol["configMap"]["name"])
    return None


class DriverSimulator:
    """SIMULATOR thread: executors for running driver pods, cleaned up when drivers end."""

    def __init__(self, kube: Kube, namespace: str | None = None, *, workers: int = 2) -> None:
        self.kube, self.namespace = kube, namespace
        self.informer = Informer(
            kube, "v1", "Pod", namespace=namespace, label_selector="spark-role=driver"
        )
        self._queue: queue.Queue[tuple[str, Obj] | None] = queue.Queue()
        self._started: set[str] = set()  # driver uids whose executors exist
        self._finished: set[str] = set()
        self._workers = [
            threading.Thread(target=self._loop, daemon=True, name=f"sim-{i}")
            for i in range(workers)
        ]
        self._requests = ThreadPoolExecutor(max(workers, 1) * 4, thread_name_prefix="sim-req")
        self.created = 0
        self.deleted = 0

    def start(self) -> DriverSimulator:
        self.informer.add_handler(lambda event, pod: self._queue.put((event, pod)))
        self.informer.start()
        self.informer.wait_synced()
        for thread in self._workers:
            thread.start()
        return self

    def stop(self) -> None:
        self.informer.stop()
        for _ in self._workers:
            self._queue.put(None)
        for thread in self._workers:
            thread.join(timeout=5)
        self._requests.shutdown(wait=False)

    def _loop(self) -> None:
        while (item := self._queue.get()) is not None:
            event, pod = item
            try:
                self.handle(event, pod)
            except Exception as exc:  # keep simulating the other drivers
                log.warning("simulator: %s %s: %s", event, pod["metadata"].get("name"), exc)

    def handle(self, event: str, pod: Obj) -> None:
        """React to one driver pod change."""
        if event == "RETRY":  # use the freshest copy: the driver may have finished meanwhile
            latest = self.informer.get(pod["metadata"]["namespace"], pod["metadata"]["name"])
            if latest is None:
                return
            pod = latest
        meta = pod["metadata"]
        uid = str(meta.get("uid"))
        phase = (pod.get("status") or {}).get("phase")
        if event == "DELETED" or phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
            if uid not in self._finished:
                self._finished.add(uid)
                self._cleanup(pod)
            return
        if phase != "Running" or uid in self._started:
            return
        self._started.add(uid)
        annotations = meta.get("annotations") or {}
        if annotations.get(f"{SIM}executors") == "0":
            return
        props: dict[str, str] = {}
        name = _volume_config_map(pod, "spark-conf-volume-driver")
        if name:
            cm = self.kube.get_or_none("v1", "ConfigMap", name, meta["namespace"])
            if cm is None:  # a real driver would not start without it: look again shortly
                self._started.discard(uid)
                timer = threading.Timer(0.5, self._queue.put, args=(("RETRY", pod),))
                timer.daemon = True
                timer.start()
                return
            props = load_properties((cm.get("data") or {}).get("spark.properties", ""))
        template = None
        name = _volume_config_map(pod, "pod-template-volume")
        if name:
            cm = self.kube.get_or_none("v1", "ConfigMap", name, meta["namespace"])
            text = ((cm or {}).get("data") or {}).get("podspec-configmap-key")
            template = yaml.safe_load(text) if text else None
        # A driver asks for its executors in one batch (spark.kubernetes.allocation.batch.size
        # is 10): create them side by side, not one round trip after another.
        list(self._requests.map(self._create_executor, plan_executors(pod, props, template)))

    def _create_executor(self, executor: Obj) -> None:
        try:
            self.kube.create(executor)
            self.created += 1
        except AlreadyExistsError:
            pass

    def _cleanup(self, driver: Obj) -> None:
        meta = driver["metadata"]
        app_id = (meta.get("labels") or {}).get("spark-app-selector")
        if not app_id:
            return
        selector = f"spark-app-selector={app_id},spark-role=executor"
        try:
            pods = self.kube.list("v1", "Pod", meta["namespace"], label_selector=selector)
        except KubeError as exc:
            log.debug("simulator: cannot list executors: %s", exc)
            return
        for pod in pods:
            owners = {r.get("uid") for r in pod["metadata"].get("ownerReferences") or []}
            if meta.get("uid") not in owners:
                continue
            try:
                self.kube.delete("v1", "Pod", pod["metadata"]["name"], meta["namespace"])
                self.deleted += 1
            except NotFoundError:
                pass
