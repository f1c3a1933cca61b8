"""Spark Connect servers the operator runs are sessions too (``session list/get/attach``): a
Kubeflow SparkConnect's server by its ``connect-name`` label, an Apache SparkApplication's
driver running Spark's Connect server by the application's name; neither is a native driver
(so ``gc`` and ``kill`` leave them to the operator)."""

from __future__ import annotations

from typing import Any

from sparkplane.model.apps import is_native_driver
from sparkplane.spec.connect import CONNECT_CLASS
from sparkplane.usecases.session import session_name


def _driver(labels: dict[str, str], owner: str | None, args: list[str]) -> dict[str, Any]:
    refs = [{"kind": owner, "name": "res", "uid": "u", "controller": True}] if owner else []
    return {
        "metadata": {"labels": {"spark-role": "driver", **labels}, "ownerReferences": refs},
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "args": args}]},
    }


def test_which_drivers_are_sessions_and_by_which_name() -> None:
    server = ["driver", "--class", CONNECT_CLASS, "local:///opt/spark/jars/x.jar"]
    pi = ["driver", "--class", "org.apache.spark.examples.SparkPi", "local:///x.jar"]
    native = _driver({"sparkplane.io/session": "mine"}, None, server)
    kubeflow = _driver({"sparkoperator.k8s.io/connect-name": "conn"}, "SparkConnect", server)
    apache = _driver({}, "SparkApplication", server)
    batch = _driver({}, "SparkApplication", pi)
    assert [session_name(p) for p in (native, kubeflow, apache, batch)] == [
        "mine",
        "conn",
        "res",
        None,
    ]
    assert [is_native_driver(p) for p in (native, kubeflow, apache)] == [True, False, False]
