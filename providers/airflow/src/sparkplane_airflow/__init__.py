"""sparkplane's Apache Airflow provider: Spark on Kubernetes from a DAG, deferrable and crash-safe.

Airflow finds it through the ``apache_airflow_provider`` entry point (:func:`get_provider_info`):
the ``sparkplane`` connection type (:class:`~sparkplane_airflow.hooks.SparkPlaneHook`) and the
Spark UI extra link. The pieces: :class:`~sparkplane_airflow.operators.SparkPlaneSubmitOperator`
(submit, defer, report), :class:`~sparkplane_airflow.sensors.SparkPlaneAppSensor` (an app started
elsewhere) and :class:`~sparkplane_airflow.triggers.SparkPlaneAppTrigger` (the wait, in the
triggerer, on one shared watch per namespace). It uses sparkplane's Python API only.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def get_provider_info() -> dict[str, Any]:
    """What Airflow's ProvidersManager reads: the package, its connection type and links."""
    return {
        "package-name": "sparkplane-airflow",
        "name": "sparkplane",
        "description": "Spark on Kubernetes with sparkplane (native, Apache operator, Kubeflow).",
        "versions": [__version__],
        "connection-types": [
            {
                "connection-type": "sparkplane",
                "hook-class-name": "sparkplane_airflow.hooks.SparkPlaneHook",
            }
        ],
        "extra-links": ["sparkplane_airflow.links.SparkUiLink"],
    }
