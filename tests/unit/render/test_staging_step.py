"""Dependency localization: the spec rewrite, the driver step and the executor template."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from sparkplane.errors import ValidationError
from sparkplane.render import render, steps_for
from sparkplane.render.properties import load
from sparkplane.render.steps.staging import (
    DEFAULT_INIT_IMAGE,
    DEFAULT_MAX_BYTES,
    INIT_CONTAINER,
    PENDING_RESOURCE_ID,
    StagingStep,
    localize_dependencies,
    request_staging,
    secret_name,
)
from sparkplane.render.steps.staging_deps import Kind, dependency
from sparkplane.spec import SparkApp, validate
from sparkplane.staging.client import _local_name

from .helpers import IDS, make_app, make_conf, start

SERVER = "http://staging.example:10000"
DEPS = "/var/sparkplane/deps"
FETCH = ["sparkplane", "fetch", "--dest", DEPS]
SECRET_ARGS = [
    *("--secret-file", "/mnt/sparkplane-staging/secret"),
    *("--max-bytes", str(DEFAULT_MAX_BYTES)),
]


def _staged(app: SparkApp, rid: str = "r-123", **kw: Any) -> SparkApp:
    return request_staging(app, server=SERVER, resource_id=rid, **kw)


def _local_java(**spec: Any) -> SparkApp:
    return make_app(jars="/home/me/app.jar,file:///home/me/lib/dep.jar", **spec)


def _props(objects: list[dict[str, Any]]) -> dict[str, str]:
    cm = next(o for o in objects if "spark.properties" in o.get("data", {}))
    return load(cm["data"]["spark.properties"])


def _executor_template(objects: list[dict[str, Any]]) -> dict[str, Any]:
    cm = next(o for o in objects if "podspec-configmap-key" in o.get("data", {}))
    template: dict[str, Any] = yaml.safe_load(cm["data"]["podspec-configmap-key"])
    return template


@pytest.mark.parametrize(
    ("uri", "kind", "source", "name", "fragment"),
    [
        ("app.jar", Kind.LOCAL, "app.jar", "app.jar", ""),
        ("/abs/dir/app.jar#alias", Kind.LOCAL, "/abs/dir/app.jar", "app.jar", "alias"),
        ("file:///abs/my%20lib.jar", Kind.LOCAL, "/abs/my lib.jar", "my lib.jar", ""),
        ("https://h/x/data.zip#d", Kind.REMOTE, "https://h/x/data.zip", "data.zip", "d"),
        ("local:///opt/spark/x.jar", Kind.IMAGE, "local:///opt/spark/x.jar", "", ""),
        ("s3a://bucket/x.jar", Kind.OTHER, "s3a://bucket/x.jar", "", ""),
        # a copy sparkplane already localized: never uploaded again
        (f"file://{DEPS}/x.jar", Kind.IMAGE, f"file://{DEPS}/x.jar", "", ""),
    ],
)
def test_dependency_classification(
    uri: str, kind: Kind, source: str, name: str, fragment: str
) -> None:
    dep = dependency("spec.jars", uri)
    assert (dep.kind, dep.source, dep.name, dep.fragment) == (kind, source, name, fragment)


def test_remote_names_match_what_fetch_saves() -> None:
    for uri in ("https://h/a/lib-1.0.jar", "http://h/a%20b.py", "https://h/x.zip#alias"):
        dep = dependency("spec.files", uri)
        assert dep.name == _local_name(dep.source)  # the init-container gets `source`


def test_local_files_need_a_staging_server() -> None:
    app = _local_java()
    with pytest.raises(ValidationError) as info:
        validate(app)
    assert [p.path for p in info.value.problems] == ["spec.jars", "spec.jars"]
    assert "--staging-server" in str(info.value)
    validate(request_staging(app, server=SERVER))


def test_nothing_to_localize_leaves_the_app_and_steps_alone() -> None:
    app = make_app(files="https://h/data.csv")
    assert localize_dependencies(app, IDS) is app
    assert localize_dependencies(request_staging(app, server=SERVER), IDS).spec.files == (
        "https://h/data.csv"
    )
    assert "staging" not in [s.name for s in steps_for(app)]


def test_driver_pod_gets_init_container_volumes_and_mount() -> None:
    rendered = render(_staged(_local_java(driverArgs=["10"])), IDS)
    spec = rendered.driver_pod["spec"]
    [init] = spec["initContainers"]
    assert init["name"] == INIT_CONTAINER
    assert init["image"] == DEFAULT_INIT_IMAGE
    assert init["command"] == [
        *FETCH,
        *("--server", SERVER, "--resource-id", "r-123", *SECRET_ARGS),
    ]
    assert {"mountPath": DEPS, "name": "sparkplane-deps"} in init["volumeMounts"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["sparkplane-deps"] == {"name": "sparkplane-deps", "emptyDir": {}}
    assert volumes["sparkplane-staging-secret"]["secret"] == {"secretName": secret_name(IDS)}
    [main] = spec["containers"]
    assert {"mountPath": DEPS, "name": "sparkplane-deps", "readOnly": True} in main["volumeMounts"]
    # the primary resource and spark.jars now point at the localized copies
    assert main["args"][-2:] == [f"file://{DEPS}/app.jar", "10"]
    props = _props(rendered.resources)
    assert props["spark.jars"] == f"file://{DEPS}/app.jar,file://{DEPS}/dep.jar"
    assert props["spark.kubernetes.sparkplane.staging.resourceId"] == "r-123"
    # the Secret (with the download secret) is the submitter's: rendering never sees it
    assert "Secret" not in [o["kind"] for o in rendered.objects]


def test_init_container_bounds_the_unpacked_size_with_max_bytes() -> None:
    """The submitter records the bundle's unpacked size; the init-container refuses more
    (a small bundle that would unpack to gigabytes). Without the conf: the default bound."""
    rendered = render(_staged(_local_java(), max_bytes=123_456), IDS)
    [init] = rendered.driver_pod["spec"]["initContainers"]
    assert init["command"][init["command"].index("--max-bytes") + 1] == "123456"
    assert _props(rendered.resources)["spark.kubernetes.sparkplane.staging.maxBytes"] == "123456"
    broken = _local_java(sparkConf={"spark.kubernetes.sparkplane.staging.maxBytes": "lots"})
    [init] = render(_staged(broken), IDS).driver_pod["spec"]["initContainers"]
    assert init["command"][init["command"].index("--max-bytes") + 1] == str(DEFAULT_MAX_BYTES)


def test_executor_template_gets_the_same_init_container() -> None:
    rendered = render(_staged(_local_java()), IDS)
    template = _executor_template(rendered.resources)
    driver_init = rendered.driver_pod["spec"]["initContainers"]
    assert template["spec"]["initContainers"] == driver_init
    assert [v["name"] for v in template["spec"]["volumes"]] == [
        "sparkplane-deps",
        "sparkplane-staging-secret",
    ]
    assert template["spec"]["containers"] == [
        {
            "name": "spark-kubernetes-executor",
            "volumeMounts": [{"mountPath": DEPS, "name": "sparkplane-deps", "readOnly": True}],
        }
    ]
    props = _props(rendered.resources)
    assert props["spark.kubernetes.executor.podTemplateFile"].endswith("pod-spec-template.yml")


def test_user_executor_template_is_extended_not_replaced() -> None:
    user = {
        "metadata": {"labels": {"team": "a"}},
        "spec": {
            "initContainers": [{"name": "warm-up", "image": "busybox"}],
            "containers": [{"name": "sidecar"}, {"name": "spark", "env": [{"name": "A"}]}],
        },
    }
    app = _staged(
        _local_java(
            executorSpec={"podTemplateSpec": copy.deepcopy(user)},
            sparkConf={"spark.kubernetes.executor.podTemplateContainerName": "spark"},
        )
    )
    template = _executor_template(render(app, IDS).resources)
    assert template["metadata"] == user["metadata"]
    assert [c["name"] for c in template["spec"]["initContainers"]] == ["warm-up", INIT_CONTAINER]
    sidecar, spark = template["spec"]["containers"]
    assert "volumeMounts" not in sidecar
    assert spark["env"] == [{"name": "A"}]
    assert spark["volumeMounts"][0]["mountPath"] == DEPS


def test_python_app_primary_and_py_files_are_localized() -> None:
    app = make_app(
        mainClass=None,
        jars=None,
        pyFiles="main.py,libs/helpers.zip,local:///opt/x.py",
        files="conf/app.conf#app.conf",
    )
    rendered = render(_staged(app), IDS)
    args = rendered.driver_pod["spec"]["containers"][0]["args"]
    assert f"file://{DEPS}/main.py" in args
    props = _props(rendered.resources)
    assert props["spark.submit.pyFiles"] == f"file://{DEPS}/helpers.zip,local:///opt/x.py"
    assert props["spark.files"] == f"file://{DEPS}/app.conf#app.conf"


def test_remote_uris_localized_without_a_staging_server_when_asked() -> None:
    app = make_app(
        jars="https://repo/x/app.jar,s3a://b/other.jar,local:///opt/in-image.jar",
        files="http://h/data.zip#data",
        sparkConf={"spark.kubernetes.sparkplane.localizeRemote": "true"},
    )
    rendered = render(app, IDS)
    spec = rendered.driver_pod["spec"]
    [init] = spec["initContainers"]
    assert init["command"] == [
        *FETCH,
        *("--uri", "https://repo/x/app.jar", "--uri", "http://h/data.zip"),
    ]
    assert [v["name"] for v in spec["volumes"]][:1] == ["sparkplane-deps"]
    assert "sparkplane-staging-secret" not in [v["name"] for v in spec["volumes"]]
    props = _props(rendered.resources)
    assert props["spark.jars"] == (
        f"file://{DEPS}/app.jar,s3a://b/other.jar,local:///opt/in-image.jar"
    )
    assert props["spark.files"] == f"file://{DEPS}/data.zip#data"
    # not opted in: http(s) stays for Spark to fetch, no init-container
    plain = render(make_app(jars="https://repo/x/app.jar"), IDS)
    assert "initContainers" not in plain.driver_pod["spec"]


def test_dry_run_shows_a_placeholder_id_and_image_and_ca_are_configurable() -> None:
    app = request_staging(_local_java(), server=SERVER, image="reg/sp:1", ca_in_secret=True)
    [init] = render(app, IDS).driver_pod["spec"]["initContainers"]
    assert init["image"] == "reg/sp:1"
    assert init["command"][init["command"].index("--resource-id") + 1] == PENDING_RESOURCE_ID
    assert init["command"][-2:] == ["--ca-file", "/mnt/sparkplane-staging/ca.crt"]


def test_name_clashes_are_reported_with_field_paths() -> None:
    app = _staged(
        make_app(
            jars="/a/app.jar,/b/app.jar",
            files="https://h/app.jar",
            sparkConf={
                "spark.kubernetes.sparkplane.localizeRemote": "true",
            },
        )
    )
    with pytest.raises(ValidationError) as info:
        render(app, IDS)
    assert [p.path for p in info.value.problems] == ["spec.jars", "spec.files"]
    # the same file named twice is not a clash
    same = _staged(make_app(jars="/a/app.jar", sparkConf={"spark.jars": "/a/app.jar"}))
    assert render(same, IDS).driver_pod["spec"]["initContainers"]


def test_staged_files_and_archives_become_file_uris_spark_serves_itself() -> None:
    """As spark-submit's upload path rewrites them: ``file:`` (SparkContext puts those on the
    driver's file server, so SparkFiles.get works on driver and executors and archives unpack
    under their alias), never ``local:`` (which addFile/addArchive skip). In one list, local
    entries are rewritten and remote ones kept as written (SPARK-40817), in their order."""
    app = _staged(
        make_app(
            mainClass=None,
            jars=None,
            pyFiles="job.py",
            files="data.txt,https://h/remote.txt,local:///opt/in-image.txt",
            sparkConf={
                "spark.archives": "env.tgz#env,/abs/deps.zip,s3a://b/other.zip#o",
                "spark.jars": "file:///home/me/udf.jar",
            },
        )
    )
    rendered = render(app, IDS)
    props = _props(rendered.resources)
    assert props["spark.files"] == (
        f"file://{DEPS}/data.txt,https://h/remote.txt,local:///opt/in-image.txt"
    )
    assert props["spark.archives"] == (
        f"file://{DEPS}/env.tgz#env,file://{DEPS}/deps.zip,s3a://b/other.zip#o"
    )
    assert props["spark.jars"] == f"file://{DEPS}/udf.jar"
    args = rendered.driver_pod["spec"]["containers"][0]["args"]
    assert f"file://{DEPS}/job.py" in args
    assert not [v for v in props.values() if f"local://{DEPS}" in v]


def test_localize_is_idempotent_and_the_step_pure() -> None:
    app = _staged(_local_java())
    once = localize_dependencies(app, IDS)
    assert localize_dependencies(once, IDS) == once
    conf = make_conf(once)
    state = start(conf)
    before = copy.deepcopy((state.pod, state.container))
    out = StagingStep().apply(state, conf)
    assert (state.pod, state.container) == before
    assert out.pod["spec"]["initContainers"][0]["name"] == INIT_CONTAINER
    assert "staging" in [s.name for s in steps_for(once)]


def test_pods_can_use_an_internal_server_url() -> None:
    internal = "http://sparkplane-staging.sparkplane-system.svc:10000"
    app = request_staging(
        _local_java(), server="http://localhost:18080", resource_id="r-1", internal_server=internal
    )
    [init] = render(app, IDS).driver_pod["spec"]["initContainers"]
    assert init["command"][init["command"].index("--server") + 1] == internal
