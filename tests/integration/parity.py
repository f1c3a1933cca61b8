"""Parity helpers: run the real spark-submit, read back what it made, compare with sparkplane.

Used by ``test_parity_spark_submit.py`` (and ``benchmarks/submit_throughput.py`` for the
spark-submit runner). Both sides are read back from the API server, so server defaults are the
same on both; what is compared is everything else. Generated ids are replaced by placeholders,
server-set fields are dropped, and the documented deviations (:data:`DEVIATIONS`, explained in
``docs/parity.md``) are removed from sparkplane's side only where spark-submit lacks them.
Any remaining difference is reported as a list of ``path: theirs != ours`` lines.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from sparkplane.kube import Kube
from sparkplane.render.properties import load
from sparkplane.spec import SparkApp
from sparkplane.usecases.sources import Source, read_source, with_conf_dir
from sparkplane.version import SPARK_VERSION

Obj = dict[str, Any]
K8S = "spark.kubernetes"
TEMPLATE_KEYS = {
    "driver": f"{K8S}.driver.podTemplateFile",
    "executor": f"{K8S}.executor.podTemplateFile",
}
# Objects every namespace has, or that controllers derive from the submitted ones.
NAMESPACE_DEFAULTS = {("ConfigMap", "kube-root-ca.crt"), ("ServiceAccount", "default")}
DERIVED_KINDS = {"Event", "Endpoints", "EndpointSlice"}
SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
HASH_ORDERED = ("env", "volumes", "volumeMounts")
# Labels sparkplane puts on every object (Spark puts only some of them on some objects).
APP_LABELS = ("spark-app-selector", "spark-role", "spark-app-name", "app-name")
MANAGED_BY = "app.kubernetes.io/managed-by"
DEPENDENTS = "sparkplane.io/dependents"
DEPENDENTS_CREATED = "sparkplane.io/dependents-created"

# Deliberate deviations: id -> one line (docs/parity.md says why for each).
DEVIATIONS: dict[str, str] = {
    "app-labels": "every object carries spark-app-selector, spark-role, spark-app-name, app-name",
    "service-selector": "the driver Service also selects on app-name",
    "managed-by": "the driver pod is labelled app.kubernetes.io/managed-by=sparkplane",
    "dependents-annotation": "the driver pod lists what it should own (sparkplane.io/dependents)",
    "sorted-lists": "env, volumes and volumeMounts Spark emits in hash order are sorted",
    "inline-pod-template": "a driver pod template is data, so no driver.podTemplateFile property",
    "properties-order": "spark.properties lines are sorted by key (Java 17 uses hash order)",
    "pvc-index": "an OnDemand claim's index follows sorted volume order, not Spark's hash order",
    "executor-template-text": "the executor template is re-serialised YAML, not the file's bytes",
}
EXECUTOR_TEMPLATE_KEY = "podspec-configmap-key"


# -- running spark-submit ---------------------------------------------------------------------
def spark_home(version: str | None = None) -> Path:
    """The Spark distribution with spark-submit: this interpreter's pyspark (the pinned
    version), or for another supported ``version`` the one the dev cluster's image builder
    installs into its cache (hash-pinned, built once; ``sparkplane_devcluster.images.sparkdist``).
    """
    if version and version != SPARK_VERSION:
        from sparkplane_devcluster.cluster import default_cache_dir
        from sparkplane_devcluster.images import sparkdist

        return sparkdist.ensure(default_cache_dir(), version, lambda _: None).root
    import pyspark

    home = Path(pyspark.__file__).parent
    if not (home / "bin" / "spark-submit").exists():
        raise AssertionError(f"no bin/spark-submit in {home}: install pyspark=={SPARK_VERSION}")
    return home


def java_home() -> str:
    """JAVA_HOME from the environment, else the JDK that ``java`` on PATH belongs to."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        raise AssertionError("no java on PATH and JAVA_HOME unset: spark-submit needs Java 17")
    return str(Path(java).resolve().parents[1])


def spark_submit_command(server: str, argv: list[str], version: str | None = None) -> list[str]:
    """The spark-submit command line of Spark ``version`` (default: the pinned one) for
    ``argv`` against the API server ``server``."""
    return [
        str(spark_home(version) / "bin" / "spark-submit"),
        "--master",
        f"k8s://{server}",
        "--deploy-mode",
        "cluster",
        *argv,
    ]


def spark_submit_env(kubeconfig: Path, version: str | None = None) -> dict[str, str]:
    """Environment for spark-submit: fabric8 reads ``KUBECONFIG`` for the server's auth.

    ``SPARK_USER`` and ``HADOOP_USER_NAME`` are removed so that spark-submit takes the OS user
    (or the proxy user), which is what sparkplane's default ``spark_user`` is.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_USER", "HADOOP_USER_NAME")}
    env.update(
        KUBECONFIG=str(kubeconfig),
        SPARK_HOME=str(spark_home(version)),
        JAVA_HOME=java_home(),
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return env


def run_spark_submit(
    server: str,
    argv: list[str],
    kubeconfig: Path,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    version: str | None = None,
) -> str:
    """Run the real spark-submit of Spark ``version`` (default: the pinned one) to completion
    (``env`` added to its environment, e.g. ``SPARK_CONF_DIR``); its output, or
    AssertionError with it."""
    proc = subprocess.run(
        spark_submit_command(server, argv, version),
        env={**spark_submit_env(kubeconfig, version), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or "Deployed Spark application" not in output:
        raise AssertionError(f"spark-submit failed (exit {proc.returncode}):\n{output[-4000:]}")
    return output


# -- the same inputs for sparkplane -----------------------------------------------------------
def sparkplane_source(argv: list[str], conf_dir: Path | None = None) -> Source:
    """What ``sparkplane submit <argv>`` resolves with ``SPARK_CONF_DIR=conf_dir``: the spec and
    the conf directory's files (as ``SparkPlane.source`` does with its settings)."""
    return with_conf_dir(read_source(argv=argv), conf_dir or "")


def sparkplane_app(argv: list[str]) -> SparkApp:
    """What ``sparkplane submit <argv>`` builds, through the same use-case as the CLI and the
    API (``--verbose``/``--properties-file``/``--master`` handled; pod template files are read
    into the spec: deviation ``inline-pod-template``)."""
    app = read_source(argv=argv).app
    assert app is not None
    return app


# -- reading back -------------------------------------------------------------------------------
def namespaced_kinds(kube: Kube) -> list[tuple[str, str]]:
    """Every listable namespaced ``(apiVersion, kind)`` the server serves (core + groups)."""
    versions = ["v1"]
    for group in kube.raw("GET", "/apis").get("groups", []):
        versions.append(group["preferredVersion"]["groupVersion"])
    kinds: list[tuple[str, str]] = []
    for version in versions:
        path = "/api/v1" if version == "v1" else f"/apis/{version}"
        for res in kube.raw("GET", path).get("resources", []):
            listable = res.get("namespaced") and "list" in res.get("verbs", [])
            if listable and "/" not in res["name"] and (version, res["kind"]) not in kinds:
                kinds.append((version, res["kind"]))
    return kinds


def snapshot(kube: Kube, namespace: str, kinds: list[tuple[str, str]]) -> list[Obj]:
    """Everything a submission left in ``namespace`` (not defaults, not derived objects)."""
    out: list[Obj] = []
    for version, kind in kinds:
        if kind in DERIVED_KINDS:
            continue
        for obj in kube.list(version, kind, namespace):
            if (kind, obj["metadata"]["name"]) not in NAMESPACE_DEFAULTS:
                out.append(obj)
    return sorted(out, key=lambda o: (o["kind"] != "Pod", o["kind"], o["metadata"]["name"]))


# -- normalising ----------------------------------------------------------------------------------
def driver_pod(objects: list[Obj]) -> Obj:
    pods = [o for o in objects if o["kind"] == "Pod"]
    drivers = [p for p in pods if p["metadata"].get("labels", {}).get("spark-role") == "driver"]
    if len(drivers) != 1:
        names = [p["metadata"]["name"] for p in pods]
        raise AssertionError(f"expected exactly one driver pod, found {names}")
    return drivers[0]


def id_map(objects: list[Obj], namespace: str) -> dict[str, str]:
    """Generated values in ``objects`` -> placeholders (longest first when applied)."""
    pod = driver_pod(objects)
    meta = pod["metadata"]
    prefix = meta["name"].removesuffix("-driver")
    found = {
        meta["labels"]["spark-app-selector"]: "<APP_ID>",
        prefix.rsplit("-", 1)[1]: "<UNIQUE_ID>",
        meta["uid"]: "<DRIVER_UID>",
        namespace: "<NS>",
    }
    text = json.dumps(pod)
    local = re.search(r"/var/data/spark-([0-9a-f-]{36})", text)
    if local:
        found[local.group(1)] = "<LOCAL_DIR_UUID>"
    return found


# Names Spark draws from a second random id (conf map, long-name Service) and per-pod tokens.
ID_PATTERNS = [
    (re.compile(r"spark-drv-[0-9a-f]{16}-conf-map"), "spark-drv-<CONF_ID>-conf-map"),
    (re.compile(r"spark-[0-9a-f]{16}-driver-svc"), "spark-<SVC_ID>-driver-svc"),
    (re.compile(r"kube-api-access-[a-z0-9]{5}"), "kube-api-access-<RANDOM>"),
]


def normalise(objects: list[Obj], namespace: str) -> list[Obj]:
    """Placeholders for ids, no server-set fields, spark.properties parsed into a dict."""
    text = json.dumps(objects)
    for pattern, placeholder in ID_PATTERNS:
        text = pattern.sub(placeholder, text)
    for value, placeholder in sorted(
        id_map(objects, namespace).items(), key=lambda kv: -len(kv[0])
    ):
        text = text.replace(value, placeholder)
    out: list[Obj] = json.loads(text)
    for obj in out:
        meta = obj["metadata"]
        for key in SERVER_META:
            meta.pop(key, None)
        obj.pop("status", None)
        spec = obj.get("spec", {})
        if obj["kind"] == "Pod":
            spec.pop("nodeName", None)
        if obj["kind"] == "Service" and spec.get("clusterIP") != "None":
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        data = obj.get("data") or {}
        if "spark.properties" in data:
            data["spark.properties"] = _properties(data["spark.properties"])
    return out


def _properties(text: str) -> Obj:
    props: Obj = dict(load(text))
    props["spark.app.submitTime"] = "<SUBMIT_TIME>"
    props["#comment"] = text.splitlines()[0]
    return props


# -- deviations and comparison ------------------------------------------------------------------
def remove_deviations(ours: list[Obj], theirs: list[Obj]) -> tuple[list[Obj], list[Obj], set[str]]:
    """Undo the documented deviations; returns both sides and the deviation ids that applied."""
    used: set[str] = set()
    ours, theirs = _pvc_names(ours, theirs, used), copy.deepcopy(theirs)
    by_key = {(o["kind"], o["metadata"]["name"]): o for o in theirs}
    for obj in ours:
        other = by_key.get((obj["kind"], obj["metadata"]["name"]))
        if other is None:
            continue
        _labels(obj, other, used)
        if obj["kind"] == "Service":
            selector = obj.get("spec", {}).get("selector", {})
            if "app-name" in selector and "app-name" not in other["spec"].get("selector", {}):
                selector.pop("app-name")
                used.add("service-selector")
        if obj["kind"] == "ConfigMap" and "spark.properties" in obj.get("data", {}):
            theirs_props = other["data"]["spark.properties"]
            key = TEMPLATE_KEYS["driver"]
            if key in theirs_props and key not in obj["data"]["spark.properties"]:
                theirs_props.pop(key)
                used.add("inline-pod-template")
            used.add("properties-order")
        if obj["kind"] == "ConfigMap" and EXECUTOR_TEMPLATE_KEY in obj.get("data", {}):
            mine, yours = obj["data"], other.get("data", {})
            text, their_text = mine[EXECUTOR_TEMPLATE_KEY], yours.get(EXECUTOR_TEMPLATE_KEY)
            if isinstance(their_text, str) and text != their_text:
                mine[EXECUTOR_TEMPLATE_KEY] = yaml.safe_load(text)
                yours[EXECUTOR_TEMPLATE_KEY] = yaml.safe_load(their_text)
                used.add("executor-template-text")
    if any(_sorted_lists(obj) != obj for obj in theirs):
        used.add("sorted-lists")
    ours = [_sorted_lists(obj) for obj in ours]
    theirs = [_sorted_lists(obj) for obj in theirs]
    return ours, theirs, used


def _pvc_names(ours: list[Obj], theirs: list[Obj], used: set[str]) -> list[Obj]:
    """Give sparkplane's OnDemand claims spark-submit's names (pairs in name order)."""
    names = [
        sorted(o["metadata"]["name"] for o in side if o["kind"] == "PersistentVolumeClaim")
        for side in (ours, theirs)
    ]
    text = json.dumps(ours)
    if len(names[0]) == len(names[1]) and names[0] != names[1]:
        renames = {mine: f"<PVC:{theirs_name}>" for mine, theirs_name in zip(*names, strict=True)}
        for mine, temp in renames.items():
            text = text.replace(f'"{mine}"', f'"{temp}"')
        for temp in renames.values():
            text = text.replace(temp, temp[5:-1])
        used.add("pvc-index")
    result: list[Obj] = json.loads(text)
    return result


def _labels(obj: Obj, other: Obj, used: set[str]) -> None:
    labels = obj["metadata"].get("labels", {})
    theirs = other["metadata"].get("labels", {})
    for key in APP_LABELS:
        if key in labels and key not in theirs:
            labels.pop(key)
            used.add("app-labels")
    if obj["kind"] == "Pod" and labels.get(MANAGED_BY) == "sparkplane" and MANAGED_BY not in theirs:
        labels.pop(MANAGED_BY)
        used.add("managed-by")
    if not labels and "labels" not in other["metadata"]:
        obj["metadata"].pop("labels", None)
    annotations = obj["metadata"].get("annotations", {})
    if obj["kind"] == "Pod" and DEPENDENTS in annotations:
        annotations.pop(DEPENDENTS)
        annotations.pop(DEPENDENTS_CREATED, None)
        used.add("dependents-annotation")
        if not annotations and "annotations" not in other["metadata"]:
            obj["metadata"].pop("annotations")


def _sorted_lists(obj: Any) -> Any:
    if isinstance(obj, dict):
        out = {k: _sorted_lists(v) for k, v in obj.items()}
        for key in HASH_ORDERED:
            if isinstance(out.get(key), list):
                out[key] = sorted(out[key], key=lambda x: json.dumps(x, sort_keys=True))
        return out
    if isinstance(obj, list):
        return [_sorted_lists(v) for v in obj]
    return obj


def differences(theirs: Any, ours: Any, path: str = "") -> list[str]:
    """Every place where the two differ, as ``path: spark-submit=... sparkplane=...``."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        out: list[str] = []
        for key in sorted(set(theirs) | set(ours)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in ours:
                out.append(f"{sub}: only spark-submit has {_short(theirs[key])}")
            elif key not in theirs:
                out.append(f"{sub}: only sparkplane has {_short(ours[key])}")
            else:
                out += differences(theirs[key], ours[key], sub)
        return out
    if isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours):
        return [
            d
            for i, (a, b) in enumerate(zip(theirs, ours, strict=True))
            for d in differences(a, b, f"{path}[{i}]")
        ]
    if theirs != ours:
        return [f"{path}: spark-submit={_short(theirs)} sparkplane={_short(ours)}"]
    return []


def compare(theirs: list[Obj], ours: list[Obj]) -> tuple[list[str], set[str]]:
    """Differences between normalised snapshots after the deviations, and the deviations used."""
    ours, theirs, used = remove_deviations(ours, theirs)
    keys_theirs = [(o["kind"], o["metadata"]["name"]) for o in theirs]
    keys_ours = [(o["kind"], o["metadata"]["name"]) for o in ours]
    if keys_theirs != keys_ours:
        return [f"objects: spark-submit={keys_theirs} sparkplane={keys_ours}"], used
    out: list[str] = []
    for (kind, name), a, b in zip(keys_theirs, theirs, ours, strict=True):
        out += differences(a, b, f"{kind}/{name}")
    return out, used


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 300 else text[:300] + "..."
