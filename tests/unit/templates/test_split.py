"""The driver/dependents split: exactly one driver Pod, no pre-set owners, one namespace."""

from __future__ import annotations

from typing import Any

import pytest

from sparkplane.errors import ValidationError
from sparkplane.templates import TemplateApp, is_driver_pod, split


def obj(
    kind: str,
    name: str,
    *,
    api: str = "v1",
    labels: dict[str, str] | None = None,
    namespace: str | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    if namespace is not None:
        metadata["namespace"] = namespace
    if owners is not None:
        metadata["ownerReferences"] = owners
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


def driver(name: str = "pi-driver", **kw: Any) -> dict[str, Any]:
    return obj("Pod", name, labels={"spark-role": "driver"}, **kw)


def messages(objects: list[dict[str, Any]], origins: list[str] | None = None) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        split(objects, origins=origins)
    return [str(p) for p in caught.value.problems]


def test_driver_anywhere_and_every_other_kind_is_a_dependent() -> None:
    cm = obj("ConfigMap", "conf")
    pg = obj("PodGroup", "pg", api="scheduling.volcano.sh/v1beta1")
    sa = obj("SparkApplication", "x", api="spark.apache.org/v1", labels={"spark-role": "driver"})
    ing = obj("Ingress", "ui", api="networking.k8s.io/v1")
    app = split([cm, pg, driver(), sa, ing])
    assert isinstance(app, TemplateApp)
    assert app.driver == driver()
    assert app.name == "pi-driver"
    assert app.dependents == [cm, pg, sa, ing]
    assert app.objects == [driver(), cm, pg, sa, ing]
    assert app.namespace is None


def test_result_is_a_frozen_deep_copy() -> None:
    cm = obj("ConfigMap", "conf")
    app = split([driver(), cm])
    app.dependents[0]["metadata"]["ownerReferences"] = [{"uid": "u"}]
    assert "ownerReferences" not in cm["metadata"]
    with pytest.raises(AttributeError):
        app.namespace = "x"  # type: ignore[misc]


def test_is_driver_pod_needs_a_core_pod_with_the_role_label() -> None:
    assert is_driver_pod(driver())
    assert not is_driver_pod(obj("Pod", "p", labels={"spark-role": "executor"}))
    assert not is_driver_pod(obj("Pod", "p"))
    assert not is_driver_pod(obj("Pod", "p", api="v2", labels={"spark-role": "driver"}))
    assert not is_driver_pod(obj("ConfigMap", "c", labels={"spark-role": "driver"}))


def test_no_driver_names_the_pods_found() -> None:
    pod = obj("Pod", "lonely", labels={"app": "x"})
    assert messages([pod, obj("Service", "s")], ["a.yaml#1", "b.yaml#1"]) == [
        "no Pod is labelled spark-role: driver "
        "(label the driver pod spark-role: driver; Pods found: Pod lonely (a.yaml#1))"
    ]


def test_several_drivers_are_all_listed() -> None:
    found = messages([driver("a"), obj("Service", "s"), driver("b")], ["f#1", "f#2", "f#3"])
    assert found == [
        "f#3: 2 Pods are labelled spark-role: driver: Pod a (f#1), Pod b (f#3) "
        "(exactly one Pod is the driver; Spark creates the executors itself)"
    ]


def test_owner_references_to_the_driver_are_rejected_others_kept() -> None:
    to_driver = {"apiVersion": "v1", "kind": "Pod", "name": "pi-driver", "uid": "${UID}"}
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "keeper", "uid": "u"}
    cm = obj("ConfigMap", "c", owners=[other, to_driver])
    found = messages([driver(), cm])
    assert found == [
        "objects[1].metadata.ownerReferences[1]: already points at the driver pod 'pi-driver' "
        "(remove it: the submitter adds the ownerReference once the driver exists and its uid "
        "is known)"
    ]
    kept = split([driver(), obj("ConfigMap", "c", owners=[other])])
    assert kept.dependents[0]["metadata"]["ownerReferences"] == [other]


def test_namespace_is_shared_and_taken_from_any_object() -> None:
    app = split([driver(), obj("ConfigMap", "c", namespace="jobs"), obj("Service", "s")])
    assert app.namespace == "jobs"
    assert split([driver(namespace="jobs"), obj("Service", "s")]).namespace == "jobs"


def test_namespaces_that_disagree_with_the_driver_are_each_reported() -> None:
    objects = [
        obj("ConfigMap", "c", namespace="other"),
        driver(namespace="jobs"),
        obj("Service", "s", namespace="jobs"),
        obj("Ingress", "i", api="networking.k8s.io/v1", namespace="third"),
    ]
    found = messages(objects, ["c#1", "d#1", "s#1", "i#1"])
    hint = "(an application lives in one namespace (ownerReferences cannot cross namespaces))"
    assert found == [
        f"c#1.metadata.namespace: namespace 'other' differs from the driver's 'jobs' {hint}",
        f"i#1.metadata.namespace: namespace 'third' differs from the driver's 'jobs' {hint}",
    ]


def test_disagreement_without_a_driver_namespace_refers_to_the_first() -> None:
    found = messages([driver(), obj("A", "a", namespace="x"), obj("B", "b", namespace="y")])
    assert found[0].startswith(
        "objects[2].metadata.namespace: namespace 'y' differs from objects[1]'s 'x'"
    )


def test_the_same_object_twice_is_rejected_but_same_name_other_kind_is_fine() -> None:
    objects = [
        driver(),
        obj("Service", "pi"),
        obj("ConfigMap", "pi"),
        obj("Service", "pi"),
        obj("Ingress", "pi", api="networking.k8s.io/v1"),
        obj("Ingress", "pi", api="extensions/v1beta1"),
    ]
    assert messages(objects) == [
        "objects[3]: Service 'pi' is defined twice (first at objects[1])",
    ]


def test_all_problems_at_once() -> None:
    objects = [driver("a"), driver("b"), obj("ConfigMap", "c", namespace=""), driver("a")]
    assert len(messages(objects)) == 3


def test_origins_must_match() -> None:
    with pytest.raises(ValueError, match="origins"):
        split([driver()], origins=[])
