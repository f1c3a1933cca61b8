"""Full renders compared with what real spark-submit 4.0.1 created for the same arguments.

The golden files hold the request bodies spark-submit (pyspark 4.0.1 wheel) sent to a recording
fake API server (ownerReferences stripped; they are added at submit time). The test takes the
generated ids from the golden objects, renders the same argv with them, removes sparkplane's
documented deviations, and requires equality. Lists Spark emits in hash order (driverEnv,
secret and user volumes) are compared sorted by name.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sparkplane.render import RenderContext, render
from sparkplane.render.properties import load
from sparkplane.spec import AppIds, PodTemplateHolder, SparkApp, from_submit_args

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))
SPARKPLANE_LABELS = ("app-name",)
DERIVED_LABELS = ("spark-role", "spark-app-name", "app-name")
HASH_ORDERED = ("env", "volumes", "volumeMounts")

DRIVER_TEMPLATE = {
    "metadata": {"annotations": {"sim.sparkplane.io/run-for": "5s"}, "labels": {"team": "data"}},
    "spec": {
        "priorityClassName": "routine",
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
        ],
        "containers": [
            {"name": "main", "env": [{"name": "FROM_TEMPLATE", "value": "1"}]},
            {"name": "sidecar", "image": "busybox"},
        ],
    },
}
EXECUTOR_TEMPLATE = {
    "spec": {
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
        ]
    }
}


def _load(case: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{case}.json").read_text())
    return data


def _app(case: str, argv: list[str]) -> SparkApp:
    app = from_submit_args(["--conf", "spark.kubernetes.submission.waitAppCompletion=false", *argv])
    if case == "pod-template":
        spec = app.spec.model_copy(
            update={
                "driver_spec": PodTemplateHolder(pod_template_spec=DRIVER_TEMPLATE),
                "executor_spec": PodTemplateHolder(pod_template_spec=EXECUTOR_TEMPLATE),
            }
        )
        app = app.model_copy(update={"spec": spec})
    return app


def _ids_from(golden_pod: dict[str, Any], app_name: str) -> AppIds:
    labels = golden_pod["metadata"]["labels"]
    prefix = golden_pod["metadata"]["name"].removesuffix("-driver")
    container = golden_pod["spec"]["containers"][-1]
    local = next(e["value"] for e in container["env"] if e["name"] == "SPARK_LOCAL_DIRS")
    return AppIds(
        app_name=app_name,
        app_id=labels["spark-app-selector"],
        unique_id=prefix.rsplit("-", 1)[1],
        local_dir_uuid=local.removeprefix("/var/data/spark-"),
    )


def _sort_hash_ordered(obj: Any) -> Any:
    if isinstance(obj, dict):
        out = {k: _sort_hash_ordered(v) for k, v in obj.items()}
        for key in HASH_ORDERED:
            if isinstance(out.get(key), list):
                out[key] = sorted(out[key], key=lambda x: json.dumps(x, sort_keys=True))
        return out
    if isinstance(obj, list):
        return [_sort_hash_ordered(v) for v in obj]
    return obj


def _drop_empty(obj: Any) -> Any:
    """Drop ``""`` and ``readOnly: false`` fields the API server would drop (omitempty)."""
    if isinstance(obj, dict):
        return {
            k: _drop_empty(v)
            for k, v in obj.items()
            if not (v == "" and k != "type") and not (k == "readOnly" and v is False)
        }
    if isinstance(obj, list):
        return [_drop_empty(v) for v in obj]
    return obj


def _strip_deviations(obj: dict[str, Any], golden: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    if "namespace" not in golden["metadata"]:
        meta.pop("namespace", None)
    labels = meta.get("labels", {})
    theirs = golden["metadata"].get("labels", {})
    drop = SPARKPLANE_LABELS if out["kind"] == "Pod" else DERIVED_LABELS
    for key in (*drop, "spark-app-selector"):
        if key not in theirs:
            labels.pop(key, None)
    if not labels and "labels" not in golden["metadata"]:
        meta.pop("labels", None)
    if out["kind"] == "Service":
        out["spec"]["selector"].pop("app-name", None)
    return out


@pytest.mark.parametrize("case", CASES)
def test_render_matches_spark_submit(case: str) -> None:
    golden = _load(case)
    objects = golden["objects"]
    golden_pod = objects[0]
    app = _app(case, golden["argv"])
    ids = _ids_from(golden_pod, app.spec.spark_conf["spark.app.name"])
    golden_cm = objects[-1]
    golden_props = load(golden_cm["data"]["spark.properties"])
    submit_time = datetime.fromtimestamp(int(golden_props["spark.app.submitTime"]) / 1000, UTC)
    ctx = RenderContext(
        master="k8s://http://127.0.0.1:18080", spark_user="root", submit_time=submit_time
    )
    rendered = render(app, ids, ctx)

    # Ids Spark draws separately (conf map uid, long-name service uid) are mapped onto ours.
    text = json.dumps(objects)
    ours_cm = rendered.resources[-1]["metadata"]["name"]
    text = text.replace(golden_cm["metadata"]["name"], ours_cm)
    golden_svc = next(o for o in objects if o["kind"] == "Service")["metadata"]["name"]
    text = text.replace(golden_svc, ids.driver_service_name)
    # The OnDemand claim index follows Spark's hash order of volumes; ours is sorted order.
    for theirs_pvc, mine_pvc in zip(
        [o for o in objects if o["kind"] == "PersistentVolumeClaim"],
        [o for o in rendered.resources if o["kind"] == "PersistentVolumeClaim"],
        strict=True,
    ):
        text = text.replace(theirs_pvc["metadata"]["name"], mine_pvc["metadata"]["name"])
    objects = json.loads(text)

    ours = [rendered.driver_pod, *rendered.resources]
    assert [o["kind"] for o in ours] == [o["kind"] for o in objects]
    assert [o["metadata"]["name"] for o in ours] == [o["metadata"]["name"] for o in objects]

    ours_props = load(rendered.resources[-1]["data"]["spark.properties"])
    theirs_props = load(objects[-1]["data"]["spark.properties"])
    # Deviation: a driver template is not a file here, so its path is not in the properties.
    theirs_props.pop("spark.kubernetes.driver.podTemplateFile", None)
    assert ours_props == theirs_props
    assert (
        rendered.resources[-1]["data"]["spark.properties"].splitlines()[0]
        == objects[-1]["data"]["spark.properties"].splitlines()[0]
    )

    for obj, theirs in zip(ours, objects, strict=True):
        mine = _strip_deviations(obj, theirs)
        if mine["kind"] == "ConfigMap" and "spark.properties" in mine["data"]:
            mine["data"]["spark.properties"] = theirs["data"]["spark.properties"] = "<parsed>"
        assert _sort_hash_ordered(_drop_empty(mine)) == _sort_hash_ordered(_drop_empty(theirs))
