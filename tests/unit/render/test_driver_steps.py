"""The driver's steps as data: the list, when each applies, excluding and adding steps."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.operator.core.driver import build_attempt
from sparkplane.render import (
    DRIVER_STEP_IDS,
    DRIVER_STEPS,
    EXCLUDED_STEPS,
    USER_STEPS,
    DriverConf,
    DriverState,
    render,
    steps_for,
)
from sparkplane.render.properties import load
from sparkplane.render.state import clone, section
from sparkplane.render.steps.staging import request_staging
from sparkplane.spec import SparkApp

from .helpers import IDS, make_app

DOCS = Path(__file__).parents[3] / "docs" / "architecture.md"


def _ids(app: SparkApp, **kwargs: Any) -> list[str]:
    return [s.name for s in steps_for(app, **kwargs)]


def _conf(**conf: str) -> SparkApp:
    return make_app(sparkConf=conf)


def _problems(info: pytest.ExceptionInfo[ValidationError]) -> list[tuple[str, str]]:
    return [(p.path, str(p)) for p in info.value.problems]


class Label:
    """A user step: a label on the driver pod and a property in spark.properties."""

    name = "team-label"

    def apply(self, state: DriverState, conf: DriverConf) -> DriverState:
        pod = clone(state.pod)
        section(pod, "metadata", "labels")["team"] = "data"
        return state.evolve(pod=pod, properties={"team.step": "ran"})


def test_the_driver_steps_in_order() -> None:
    assert DRIVER_STEP_IDS == (
        "basic-driver",
        "service-account",
        "driver-service",
        "network-policy",
        "mount-secrets",
        "env-secrets",
        "volumes",
        "staging",
        "driver-command",
        "hadoop-conf",
        "executor-template",
        "local-dirs",
        "placement",
        "priority-class",
        "spark-ui",
        "extra-resources",
        "spark-conf",
    )
    assert [s.name for s in DRIVER_STEPS] == [s.step.name for s in DRIVER_STEPS]
    assert {s.name for s in DRIVER_STEPS if s.required} == {"basic-driver", "staging", "spark-conf"}
    assert all(s.about for s in DRIVER_STEPS)
    for spec in DRIVER_STEPS:
        assert set(spec.needs) <= set(DRIVER_STEP_IDS)


@pytest.mark.parametrize(
    ("spec", "applied"),
    [
        ({}, ["basic-driver", "driver-service", "driver-command", "local-dirs", "spark-conf"]),
        ({"serviceAccount": "spark"}, ["service-account"]),
        ({"secrets": {"mounts": {"s": "/s"}}}, ["mount-secrets"]),
        ({"secrets": {"env": {"E": "s:k"}}}, ["env-secrets"]),
        ({"volumes": [{"name": "v", "type": "emptyDir", "mountPath": "/v"}]}, ["volumes"]),
        ({"sparkConf": {"spark.kubernetes.hadoop.configMapName": "h"}}, ["hadoop-conf"]),
        ({"sparkConf": {"spark.kubernetes.kerberos.krb5.configMapName": "k"}}, ["hadoop-conf"]),
        ({"executorSpec": {"podTemplateSpec": {"spec": {}}}}, ["executor-template"]),
        ({"driver": {"tolerations": [{"key": "k", "operator": "Exists"}]}}, ["placement"]),
        (
            {"affinity": {"nodeAffinity": {}}},
            ["executor-template", "placement"],  # app-wide: the executors' template too
        ),
        ({"driver": {"priorityClassName": "p"}}, ["priority-class"]),
        ({"priorityClassName": "p"}, ["executor-template", "priority-class"]),
        ({"sparkUI": {"ingress": {"host": "h"}}}, ["spark-ui"]),
        ({"sparkUI": {}}, []),
        ({"configMapSpecs": [{"name": "c"}]}, ["extra-resources"]),
        ({"runtimeVersions": {"sparkVersion": "4.2.0"}}, ["network-policy"]),
        ({"runtimeVersions": {"sparkVersion": "4.3.0"}}, ["network-policy"]),
        ({"runtimeVersions": {"sparkVersion": "4.1.1"}}, []),
        ({"image": "registry/spark:4.3.0"}, ["network-policy"]),  # the version in the tag
    ],
)
def test_which_steps_apply(spec: dict[str, Any], applied: list[str]) -> None:
    always = {"basic-driver", "driver-service", "driver-command", "local-dirs", "spark-conf"}
    got = _ids(make_app(**spec))
    assert [i for i in got if i not in always or not spec] == applied
    assert got == [i for i in DRIVER_STEP_IDS if i in got]  # always in the table's order


def test_a_staged_app_gets_the_staging_step_after_localizing() -> None:
    app = request_staging(make_app(jars="/a/app.jar"), server="http://staging:10000")
    assert "staging" not in _ids(app)  # the spec as written: nothing localized yet
    out = render(app, IDS)
    assert out.driver_pod["spec"]["initContainers"][0]["name"] == "sparkplane-fetch"


def test_excluded_steps_are_left_out() -> None:
    app = _conf(**{EXCLUDED_STEPS: "local-dirs, driver-service"})
    assert _ids(app) == ["basic-driver", "driver-command", "spark-conf"]
    out = render(app, IDS)
    assert [o["kind"] for o in out.resources] == ["ConfigMap"]
    assert "spark.driver.host" not in out.system_properties
    container = out.driver_pod["spec"]["containers"][0]
    assert "SPARK_LOCAL_DIRS" not in {e["name"] for e in container["env"]}


def test_excluding_a_step_that_would_not_apply_changes_nothing() -> None:
    app = _conf(**{EXCLUDED_STEPS: "volumes"})
    assert render(app, IDS).driver_pod == render(make_app(), IDS).driver_pod


def test_an_unknown_id_is_one_problem_naming_the_key_and_the_known_ids() -> None:
    with pytest.raises(ValidationError) as info:
        steps_for(_conf(**{EXCLUDED_STEPS: "local-dir,LocalDirsFeatureStep,volumes"}))
    ((path, text),) = _problems(info)
    assert path == f"spec.sparkConf[{EXCLUDED_STEPS}]"
    assert "'local-dir', 'LocalDirsFeatureStep'" in text
    assert "known ids: " + ", ".join(DRIVER_STEP_IDS) in text
    assert info.value.exit_code == 2


@pytest.mark.parametrize("step", ["basic-driver", "staging", "spark-conf"])
def test_required_steps_cannot_be_excluded(step: str) -> None:
    with pytest.raises(ValidationError) as info:
        steps_for(_conf(**{EXCLUDED_STEPS: step}))
    ((path, text),) = _problems(info)
    assert path == f"spec.sparkConf[{EXCLUDED_STEPS}]"
    assert f"step {step!r} cannot be excluded" in text


def test_the_executor_template_stays_while_staging_needs_it() -> None:
    staged = request_staging(
        make_app(jars="/a/app.jar", sparkConf={EXCLUDED_STEPS: "executor-template"}),
        server="http://staging:10000",
    )
    with pytest.raises(ValidationError) as info:
        render(staged, IDS)
    assert "'executor-template' cannot be excluded: step 'staging' applies" in str(info.value)
    # without dependencies to localize the executor template may go
    app = make_app(priorityClassName="p", sparkConf={EXCLUDED_STEPS: "executor-template"})
    assert "executor-template" not in _ids(app)


def test_user_steps_run_after_the_built_ins_and_before_spark_conf() -> None:
    app = make_app()
    assert _ids(app, extra_steps=[Label()])[-2:] == ["team-label", "spark-conf"]
    out = render(app, IDS, extra_steps=[Label()])
    assert out.driver_pod["metadata"]["labels"]["team"] == "data"
    (conf_map,) = [o for o in out.resources if o["kind"] == "ConfigMap"]
    assert load(conf_map["data"]["spark.properties"])["team.step"] == "ran"


def test_a_user_step_cannot_take_a_built_in_id() -> None:
    clash = Label()
    clash.name = "local-dirs"
    with pytest.raises(ValidationError) as info:
        steps_for(make_app(), extra_steps=[clash, Label(), Label()])
    assert [p.message for p in info.value.problems] == [
        "user step id 'local-dirs' is already taken",
        "user step id 'team-label' is already taken",
    ]


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh importable module of user steps; its name is returned."""
    name = f"user_steps_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """
            from sparkplane.render.state import clone, section

            class Sidecar:
                name = "sidecar"

                def apply(self, state, conf):
                    pod = clone(state.pod)
                    section(pod, "spec").setdefault("containers", []).append(
                        {"name": "sidecar", "image": "busybox"}
                    )
                    return state.evolve(pod=pod)

            def make_label():
                step = Sidecar()
                step.name = "labeller"
                return step

            INSTANCE = Sidecar()
            INSTANCE.name = "instance"
            NOT_A_STEP = 42
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_the_conf_key_names_user_steps_the_submitter_imports(user_module: str) -> None:
    paths = f"{user_module}:Sidecar, {user_module}:make_label, {user_module}:INSTANCE"
    app = _conf(**{USER_STEPS: paths})
    ids = _ids(app, import_steps=True, extra_steps=[Label()])
    assert ids[-5:] == ["sidecar", "labeller", "instance", "team-label", "spark-conf"]
    out = render(app, IDS, import_steps=True)
    assert [c["name"] for c in out.driver_pod["spec"]["containers"]] == [
        "sidecar",
        "sidecar",
        "sidecar",
        "spark-kubernetes-driver",
    ]


def test_without_import_steps_the_key_is_refused_and_nothing_imported(user_module: str) -> None:
    app = _conf(**{USER_STEPS: f"{user_module}:Sidecar"})
    with pytest.raises(ValidationError) as info:
        render(app, IDS)
    ((path, text),) = _problems(info)
    assert path == f"spec.sparkConf[{USER_STEPS}]"
    assert "the operator never imports code a SparkApplication names" in text
    assert user_module not in sys.modules


def test_the_operator_refuses_user_steps_from_a_custom_resource(user_module: str) -> None:
    cr = {
        "apiVersion": "spark.apache.org/v1",
        "kind": "SparkApplication",
        "metadata": {"name": "pi", "namespace": "ns1", "uid": "u-1"},
        "spec": {
            "mainClass": "org.apache.spark.examples.SparkPi",
            "jars": "local:///opt/spark/examples/jars/spark-examples.jar",
            "sparkConf": {
                "spark.kubernetes.container.image": "apache/spark:4.0.1",
                USER_STEPS: f"{user_module}:Sidecar",
            },
        },
    }
    with pytest.raises(ValidationError, match=re.escape(USER_STEPS)):
        build_attempt(cr, "op")
    assert user_module not in sys.modules
    cr["spec"]["sparkConf"] = {
        "spark.kubernetes.container.image": "apache/spark:4.0.1",
        EXCLUDED_STEPS: "local-dirs",
    }
    pod = build_attempt(cr, "op").driver_pod
    assert not any(v["name"].startswith("spark-local-dir-") for v in pod["spec"]["volumes"])


def test_bad_user_step_paths_each_say_why(user_module: str) -> None:
    paths = [
        "no_colon",
        "no_such_module_xyz:Step",
        f"{user_module}:Missing",
        f"{user_module}:NOT_A_STEP",
    ]
    with pytest.raises(ValidationError) as info:
        steps_for(_conf(**{USER_STEPS: ",".join(paths)}), import_steps=True)
    messages = [p.message for p in info.value.problems]
    assert messages == [
        "'no_colon' is not an import path module:attribute",
        "cannot load 'no_such_module_xyz:Step': ModuleNotFoundError: "
        "No module named 'no_such_module_xyz'",
        f"cannot load '{user_module}:Missing': AttributeError: "
        f"module '{user_module}' has no attribute 'Missing'",
        f"'{user_module}:NOT_A_STEP' gave int, not a step",
    ]
    assert {p.path for p in info.value.problems} == {f"spec.sparkConf[{USER_STEPS}]"}


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("spark.kubernetes.driver.pod.featureSteps", USER_STEPS),
        ("spark.kubernetes.driver.pod.excludedFeatureSteps", EXCLUDED_STEPS),
    ],
)
def test_sparks_driver_step_keys_are_refused_not_ignored(key: str, fix: str) -> None:
    with pytest.raises(ValidationError) as info:
        steps_for(_conf(**{key: "org.example.MyStep"}))
    ((path, text),) = _problems(info)
    assert path == f"spec.sparkConf[{key}]"
    assert fix in text


def test_sparks_executor_feature_steps_pass_through() -> None:
    key = "spark.kubernetes.executor.pod.featureSteps"
    out = render(_conf(**{key: "org.example.MyStep"}), IDS)
    assert out.system_properties[key] == "org.example.MyStep"


def test_the_docs_table_lists_the_steps_in_order() -> None:
    rows = re.findall(r"^\| `([a-z-]+)` \|", DOCS.read_text(), flags=re.MULTILINE)
    assert tuple(rows) == DRIVER_STEP_IDS
